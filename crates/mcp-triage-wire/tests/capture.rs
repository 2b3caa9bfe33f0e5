//! The capture line's one writer and one reader agree: the golden file (lines the proxy's
//! writer wrote before the type moved to this crate) is read and written again byte for byte,
//! and any line written is read back equal.

use std::collections::BTreeMap;

use mcp_triage_wire::capture::{BodyEnd, CaptureLine, CapturedRequest, LineRead, FORMAT_VERSION};
use proptest::prelude::*;
use serde_json::Value;

const GOLDEN: &str = include_str!("data/capture-v1.jsonl");

fn rewritten(line: &CaptureLine) -> String {
    let mut out = Vec::new();
    line.write_to(&mut out);
    String::from_utf8(out).unwrap()
}

#[test]
fn the_golden_lines_are_read_and_written_again_byte_for_byte() {
    let mut n = 0;
    for (i, text) in GOLDEN.lines().enumerate() {
        let line = CaptureLine::read(text).unwrap_or_else(|e| panic!("line {}: {e}", i + 1));
        assert_eq!(rewritten(&line), text, "line {}", i + 1);
        n += 1;
    }
    assert!(n >= 10, "{n} lines");
}

/// The golden file keeps what it is for: every `end`, both body forms, the flags, a stream of
/// several chunks, a line without a response head, stdio.
#[test]
fn the_golden_lines_cover_the_format() {
    let lines: Vec<CaptureLine> = GOLDEN
        .lines()
        .map(|l| CaptureLine::read(l).unwrap())
        .collect();
    for end in BodyEnd::ALL {
        assert!(lines.iter().any(|l| l.end == end), "{end}");
    }
    let any = |f: &dyn Fn(&CaptureLine) -> bool| lines.iter().any(f);
    assert!(any(&|l| l.capture == FORMAT_VERSION));
    assert!(any(
        &|l| l.body.is_some() && l.content_type.as_deref() == Some("application/json")
    ));
    assert!(any(
        &|l| l.chunks.len() > 1 && l.content_type.as_deref() == Some("text/event-stream")
    ));
    assert!(any(&|l| l.body_base64.is_some()));
    assert!(any(
        &|l| l.request.body_base64.is_none() && l.request.body.is_some()
    ));
    assert!(any(&|l| l.end == BodyEnd::NoResponse && l.head_ms.is_none()));
    assert!(any(&|l| l.arguments_hashed));
    assert!(any(&|l| l.body_omitted && l.request.body_omitted));
    assert!(any(&|l| l.body_truncated));
    assert!(any(&|l| l.transport == "stdio" && l.request.path.is_none()));
    assert!(any(&|l| l.method.is_none()));
    assert!(any(&|l| l.session_id.is_some()));
}

/// The streaming reader has a slot for every member the writer writes: a member renamed on
/// one side only would be dropped as unknown, and the count would differ.
#[test]
fn the_reader_has_a_slot_for_every_member_the_writer_writes() {
    let mut l = CaptureLine::read(GOLDEN.lines().next().unwrap()).unwrap();
    l.body_base64 = Some("AA==".into());
    l.body_omitted = true;
    l.arguments_hashed = true;
    let text = rewritten(&l);
    let written = serde_json::from_str::<serde_json::Map<String, Value>>(&text).unwrap();
    let r = LineRead::parse(&text, usize::MAX).unwrap();
    let slots = [
        &r.capture,
        &r.seq,
        &r.at,
        &r.transport,
        &r.status,
        &r.content_type,
        &r.body,
        &r.body_base64,
        &r.body_omitted,
        &r.expect_id,
        &r.headers,
        &r.protocol_version,
        &r.method,
        &r.tool,
        &r.arguments_hash,
        &r.arguments_hashed,
        &r.request,
        &r.head_ms,
        &r.end,
        &r.body_truncated,
        &r.verdict,
        &r.session_id,
    ];
    let filled = slots.iter().filter(|s| s.is_some()).count() + usize::from(r.chunks.is_some());
    assert_eq!(written.len(), 23, "every member of the format: {text}");
    assert_eq!(filled, written.len());
}

fn text() -> impl Strategy<Value = String> {
    prop_oneof![Just(String::new()), "[a-z/ \"\\\\é\n]{0,12}"]
}

/// Milliseconds as the proxy measures them: whole microseconds.
fn ms() -> impl Strategy<Value = f64> {
    (0u64..10_000_000_000).prop_map(|us| us as f64 / 1000.0)
}

fn headers() -> impl Strategy<Value = BTreeMap<String, String>> {
    proptest::collection::btree_map("[a-z-]{1,8}", text(), 0..3)
}

fn request() -> impl Strategy<Value = CapturedRequest> {
    (
        proptest::option::of(prop_oneof![Just("POST".to_string()), Just("GET".into())]),
        proptest::option::of(text()),
        headers(),
        proptest::option::of(text()),
        proptest::option::of("[A-Za-z0-9+/]{0,8}"),
        any::<bool>(),
        any::<bool>(),
    )
        .prop_map(
            |(method, path, headers, body, body_base64, t, o)| CapturedRequest {
                method,
                path,
                headers,
                body,
                body_base64,
                body_truncated: t,
                body_omitted: o,
            },
        )
}

fn line() -> impl Strategy<Value = CaptureLine> {
    let id = proptest::option::of(prop_oneof![
        any::<i64>().prop_map(Value::from),
        text().prop_map(Value::from),
    ]);
    let opt = || proptest::option::of(text());
    (
        (
            any::<u64>(),
            text(),
            any::<u16>(),
            opt(),
            opt(),
            opt(),
            any::<bool>(),
            id,
        ),
        (
            headers(),
            opt(),
            opt(),
            opt(),
            opt(),
            any::<bool>(),
            request(),
        ),
        (
            proptest::option::of(ms()),
            proptest::collection::vec((ms(), any::<u64>()), 0..4),
            proptest::sample::select(BodyEnd::ALL.to_vec()),
            any::<bool>(),
            text(),
            opt(),
        ),
    )
        .prop_map(|(a, b, c)| CaptureLine {
            capture: FORMAT_VERSION,
            seq: a.0,
            at: a.1,
            transport: "http".into(),
            status: a.2,
            content_type: a.3,
            body: a.4,
            body_base64: a.5,
            body_omitted: a.6,
            expect_id: a.7,
            headers: b.0,
            protocol_version: b.1,
            method: b.2,
            tool: b.3,
            arguments_hash: b.4,
            arguments_hashed: b.5,
            request: b.6,
            head_ms: c.0,
            chunks: c.1,
            end: c.2,
            body_truncated: c.3,
            verdict: c.4,
            session_id: c.5,
        })
}

proptest! {
    #[test]
    fn a_written_line_reads_back_equal(l in line()) {
        let text = rewritten(&l);
        let back = CaptureLine::read(&text).unwrap();
        prop_assert_eq!(&back, &l);
        prop_assert_eq!(rewritten(&back), text);
    }
}
