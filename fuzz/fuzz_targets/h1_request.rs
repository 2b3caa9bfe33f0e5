//! A client's request head (see `mcp_triage_proxy::http::fuzzing::request_head`).

#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    mcp_triage_proxy::http::fuzzing::request_head(data);
});
