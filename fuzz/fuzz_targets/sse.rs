//! SSE bodies fed in chunk splits driven by the input must get the verdict the whole body gets.
//!
//! Input layout: byte 0 selects the expected id, the protocol version and whether the caller
//! stops reading once decided; byte 1 is the number `n` (mod 16) of chunk-length bytes that
//! follow; those `n` bytes are the chunk lengths (each 1-256, used in turn); the rest is the body
//! of a `text/event-stream` response. Use the dictionary `fuzz/sse.dict` to reach deep states.

#![no_main]

use libfuzzer_sys::fuzz_target;
use mcp_triage_core::{
    classify, CallContext, ProtocolVersion, RequestId, ResponseClassifier, ResponseHead,
};

fuzz_target!(|data: &[u8]| {
    if data.len() < 2 {
        return;
    }
    let knobs = data[0];
    let n = (data[1] % 16) as usize;
    if data.len() < 2 + n {
        return;
    }
    let lengths: Vec<usize> = data[2..2 + n].iter().map(|&b| b as usize + 1).collect();
    let body = &data[2 + n..];

    let id = match knobs & 3 {
        0 => RequestId::Number(1),
        1 => RequestId::Number(7),
        2 => RequestId::from("1"),
        _ => RequestId::from("req"),
    };
    let version = match (knobs >> 2) & 7 {
        0 => ProtocolVersion::V2024_11_05,
        1 => ProtocolVersion::V2025_03_26,
        2 => ProtocolVersion::V2025_06_18,
        3 => ProtocolVersion::V2025_11_25,
        4 => ProtocolVersion::V2026_07_28,
        _ => ProtocolVersion::Unknown,
    };
    let stop_when_decided = knobs & 0x20 != 0;
    let mut ctx = CallContext::new(id).with_protocol_version(version);
    ctx.observe_messages = knobs & 0x40 != 0;
    let head = ResponseHead::new(200).content_type("text/event-stream");

    let whole = classify(&head, body, &ctx);
    assert_eq!(whole.layer, whole.outcome.layer());

    let mut c = ResponseClassifier::new(&head, ctx.clone());
    let mut at = 0;
    let mut i = 0;
    while at < body.len() {
        let len = if lengths.is_empty() {
            1
        } else {
            lengths[i % lengths.len()]
        };
        let end = (at + len).min(body.len());
        c.feed(&body[at..end]);
        while c.poll_event().is_some() {}
        at = end;
        i += 1;
        if stop_when_decided && c.is_decided() {
            break;
        }
    }
    let chunked = c.finish();
    assert_eq!(
        chunked, whole,
        "chunk lengths {lengths:?} disagree with the whole body"
    );
});
