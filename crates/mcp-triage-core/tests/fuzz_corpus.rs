//! The JSON `Scanner`'s and the content decoder's fuzz corpora replayed on stable, and seeded
//! mutations of them (see `fuzz/checks/corpus.rs`, `fuzz/checks/scanner.rs` and
//! `fuzz/checks/decode.rs`).

#[path = "../../../fuzz/checks/corpus.rs"]
mod corpus;
#[path = "../../../fuzz/checks/scanner.rs"]
mod scanner;

#[test]
fn scanner_reads_what_serde_reads() {
    corpus::run("scanner", 50_000, scanner::check);
}

#[path = "../../../fuzz/checks/decode.rs"]
mod decode;

/// The content decoder's corpus (`fuzz/corpus/decode`): reference-encoded bodies decode back,
/// any bytes decode alike whole and in pieces, within the limit, as the reference codecs read them.
#[test]
fn the_content_decoder_agrees_with_the_reference_codecs() {
    corpus::run("decode", 20_000, decode::check);
}
