//! The C ABI's fuzz corpus replayed on stable, and seeded mutations of it (see
//! `fuzz/checks/corpus.rs` and `fuzz/checks/ffi.rs`).

#[path = "../../../fuzz/checks/corpus.rs"]
mod corpus;
#[path = "../../../fuzz/checks/ffi.rs"]
mod ffi;

#[test]
fn entry_points_keep_their_invariants() {
    corpus::run("ffi_exchange", 10_000, ffi::check);
}
