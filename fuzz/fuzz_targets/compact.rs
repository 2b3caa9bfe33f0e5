//! Any `application/json` body, parsed whole and scanned as a large body is (the compacting
//! scanner of `json/compact.rs`, from the first byte on): the verdicts must agree; a body that
//! is not JSON must be `MALFORMED_JSON` both ways (the scanner describes it in its own words).
//!
//! Input layout: byte 0 selects the expected id and the chunk size; the rest is the body.

#![no_main]

use libfuzzer_sys::fuzz_target;
use mcp_triage_core::{classify, CallContext, Outcome, RequestId, ResponseClassifier, ResponseHead};

fuzz_target!(|data: &[u8]| {
    let Some((&knobs, body)) = data.split_first() else {
        return;
    };
    let id = match knobs & 3 {
        0 => RequestId::Number(1),
        1 => RequestId::Number(0),
        2 => RequestId::from("1"),
        _ => RequestId::from("abc"),
    };
    let chunk = match knobs >> 5 {
        0 => 1,
        1 => 2,
        2 => 3,
        3 => 7,
        4 => 64,
        5 => 4096,
        _ => body.len().max(1),
    };
    let ctx = CallContext::new(id);
    let head = ResponseHead::new(200).content_type("application/json");

    let whole = classify(&head, body, &ctx);
    let mut c = ResponseClassifier::new(&head, ctx.clone()).compact_json_after(Some(0));
    for piece in body.chunks(chunk) {
        c.feed(piece);
    }
    let scanned = c.finish();
    assert_eq!(scanned.outcome, whole.outcome, "outcomes differ");
    if whole.outcome != Outcome::MalformedJson {
        assert_eq!(scanned, whole, "verdicts differ");
    }
});
