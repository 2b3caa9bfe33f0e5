//! The JSON `Scanner`'s fuzz corpus replayed on stable, and seeded mutations of it (see
//! `fuzz/checks/corpus.rs` and `fuzz/checks/scanner.rs`).

#[path = "../../../fuzz/checks/corpus.rs"]
mod corpus;
#[path = "../../../fuzz/checks/scanner.rs"]
mod scanner;

#[test]
fn scanner_reads_what_serde_reads() {
    corpus::run("scanner", 50_000, scanner::check);
}
