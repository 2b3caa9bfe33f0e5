//! An upstream's response head, byte 0 saying whether the request was HEAD (see
//! `mcp_triage_proxy::http::fuzzing::response_head`).

#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    mcp_triage_proxy::http::fuzzing::response_head(data);
});
