//! A chunked body, byte 0 the piece size it is fed in (see
//! `mcp_triage_proxy::http::fuzzing::chunked_body`).

#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    mcp_triage_proxy::http::fuzzing::chunked_body(data);
});
