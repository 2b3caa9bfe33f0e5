//! The HTTP/1.1 parsers' fuzz corpus replayed on stable, and seeded mutations of it (see
//! `fuzz/checks/corpus.rs`; the invariants are `mcp_triage_proxy::http::fuzzing`'s).

#[path = "../../../fuzz/checks/corpus.rs"]
mod corpus;

use mcp_triage_proxy::http::fuzzing;

#[test]
fn request_heads() {
    corpus::run("h1_request", 20_000, fuzzing::request_head);
}

#[test]
fn response_heads() {
    corpus::run("h1_response", 20_000, fuzzing::response_head);
}

#[test]
fn chunked_bodies() {
    corpus::run("h1_chunked", 20_000, fuzzing::chunked_body);
}
