//! JSON text for the core's `Scanner`: what it reads, serde_json reads to the same value
//! (`fuzz/checks/scanner.rs`).

#![no_main]

#[path = "../checks/scanner.rs"]
mod scanner;

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    scanner::check(data);
});
