//! Any response through the whole classifier: `classify` on the whole body and the chunked
//! `ResponseClassifier` must agree, and the verdict's layer must be its outcome's layer.
//!
//! Input layout: bytes 0-1 the status (top bit clear: 200-299, set: 100-999), byte 2 selects the
//! content type (past the table: the next `sel - table` bytes are the header value), byte 3
//! selects the expected id, the protocol version and the chunk size; the rest is the body.

#![no_main]

use libfuzzer_sys::fuzz_target;
use mcp_triage_core::{
    classify, CallContext, ProtocolVersion, RequestId, ResponseClassifier, ResponseHead,
};

const CONTENT_TYPES: &[&str] = &[
    "application/json",
    "application/json; charset=utf-8",
    "APPLICATION/JSON",
    "text/event-stream",
    "text/event-stream; charset=utf-8",
    "Text/Event-Stream",
    "text/html",
    "",
];

const VERSIONS: [ProtocolVersion; 6] = [
    ProtocolVersion::V2024_11_05,
    ProtocolVersion::V2025_03_26,
    ProtocolVersion::V2025_06_18,
    ProtocolVersion::V2025_11_25,
    ProtocolVersion::V2026_07_28,
    ProtocolVersion::Unknown,
];

fuzz_target!(|data: &[u8]| {
    if data.len() < 4 {
        return;
    }
    let raw = u16::from_be_bytes([data[0], data[1]]);
    let status = if raw & 0x8000 == 0 {
        200 + raw % 100
    } else {
        100 + raw % 900
    };
    let sel = data[2] as usize;
    let knobs = data[3];
    let mut rest = &data[4..];
    let content_type = if sel < CONTENT_TYPES.len() {
        CONTENT_TYPES[sel].to_string()
    } else {
        let n = (sel - CONTENT_TYPES.len()).min(rest.len());
        let ct = String::from_utf8_lossy(&rest[..n]).into_owned();
        rest = &rest[n..];
        ct
    };
    let body = rest;

    let id = match knobs & 3 {
        0 => RequestId::Number(1),
        1 => RequestId::Number(0),
        2 => RequestId::from("1"),
        _ => RequestId::from("abc"),
    };
    let version = VERSIONS[((knobs >> 2) & 7) as usize % VERSIONS.len()];
    let chunk = match knobs >> 5 {
        0 => 1,
        1 => 2,
        2 => 3,
        3 => 7,
        4 => 64,
        5 => 4096,
        _ => body.len().max(1),
    };
    let mut ctx = CallContext::new(id).with_protocol_version(version);
    ctx.observe_messages = knobs & 0x10 != 0;
    let head = ResponseHead::new(status).content_type(&content_type);

    let whole = classify(&head, body, &ctx);
    assert_eq!(whole.layer, whole.outcome.layer());

    let mut c = ResponseClassifier::new(&head, ctx.clone());
    for piece in body.chunks(chunk) {
        c.feed(piece);
        while c.poll_event().is_some() {}
    }
    let chunked = c.finish();
    assert_eq!(
        chunked, whole,
        "chunks of {chunk} bytes disagree with the whole body"
    );
});
