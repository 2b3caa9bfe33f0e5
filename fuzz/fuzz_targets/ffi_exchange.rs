//! The C ABI's entry points on one exchange (`fuzz/checks/ffi.rs`: status, content type, piece
//! size, body).

#![no_main]

#[path = "../checks/ffi.rs"]
mod ffi;

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    ffi::check(data);
});
