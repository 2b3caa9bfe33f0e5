//! Bodies for the core's content decoder: reference-encoded text decodes back; any bytes decode
//! the same whole and in pieces, bounded, and as the reference decoders read them
//! (`fuzz/checks/decode.rs`).

#![no_main]

#[path = "../checks/decode.rs"]
mod decode;

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    decode::check(data);
});
