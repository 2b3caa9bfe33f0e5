//! The response id put into a captured body: the top-level `id` of each response message
//! (a JSON body, or SSE `data:` lines) that equals the captured `expectId` becomes the new
//! request's id, and the captured chunk boundaries are mapped onto the edited body.
//!
//! `serve` calls it once per replayed request. The body is scanned, not parsed, so a message
//! cut in the middle (a cut stream) still gets its id; and a body needing no edit is shared,
//! not copied, whatever the number of readers.

use std::ops::Range;

use bytes::Bytes;
use serde_json::Value;

use super::exchange::CapturedExchange;

/// The body with the response id rewritten, and the chunk list mapped onto it:
/// `(atMs, byte range of the new body)`.
pub(super) fn rewrite_ids(
    x: &CapturedExchange,
    request_id: Option<&Value>,
) -> (Bytes, Vec<(f64, Range<usize>)>) {
    let edits = match (request_id, &x.expect_id) {
        (Some(new), Some(expect)) if new != expect => id_edits(&x.body, expect, new),
        _ => Vec::new(),
    };
    if edits.is_empty() {
        // Nothing to rewrite: every request shares the captured body (a reference count),
        // so eight readers of a 200 MB answer cost 200 MB, not 1.6 GB.
        return (x.body.clone(), chunk_ranges(x, x.body.len(), |o| o));
    }
    let mut out = Vec::with_capacity(x.body.len() + 16);
    let mut at = 0;
    for (range, repl) in &edits {
        out.extend_from_slice(&x.body[at..range.start]);
        out.extend_from_slice(repl);
        at = range.end;
    }
    out.extend_from_slice(&x.body[at..]);
    // The shift of the edits before each one, so mapping an offset is a binary search, not
    // a walk of every edit per chunk (an SSE body can have thousands of each).
    let mut before = Vec::with_capacity(edits.len() + 1);
    before.push(0isize);
    for (range, repl) in &edits {
        let last = *before.last().unwrap_or(&0);
        before.push(last + repl.len() as isize - range.len() as isize);
    }
    let map = |o: usize| -> usize {
        let k = edits.partition_point(|(range, _)| range.end <= o);
        match edits.get(k) {
            Some((range, repl)) if range.start < o => {
                (range.start as isize + before[k]) as usize + repl.len()
            }
            _ => (o as isize + before[k]) as usize,
        }
    };
    let ranges = chunk_ranges(x, out.len(), map);
    (Bytes::from(out), ranges)
}

/// The captured chunks as `(atMs, byte range)` of a new body of `new_len` bytes, `map` taking
/// an offset of the captured body to the new one.
fn chunk_ranges(
    x: &CapturedExchange,
    new_len: usize,
    map: impl Fn(usize) -> usize,
) -> Vec<(f64, Range<usize>)> {
    let total = x.body.len();
    let mut ranges = Vec::new();
    let mut orig_end = 0usize;
    let mut new_start = 0usize;
    for &(at_ms, n) in &x.chunks {
        orig_end = (orig_end + n).min(total);
        let new_end = map(orig_end);
        if new_end > new_start {
            ranges.push((at_ms, new_start..new_end));
            new_start = new_end;
        }
    }
    if new_start < new_len {
        // No chunks captured (or fewer bytes than the body): the rest at the last offset.
        let last = x.chunks.last().map_or(0.0, |c| c.0);
        ranges.push((last, new_start..new_len));
    }
    ranges
}

/// Edits replacing the top-level `id` of every response message (JSON body, or SSE `data:`
/// lines) whose id equals `expect`, with `new`. Requests and notifications the server sent
/// (a `method` member) keep their ids; so does a response with another id (a wrong-id failure).
fn id_edits(body: &[u8], expect: &Value, new: &Value) -> Vec<(Range<usize>, Vec<u8>)> {
    let replacement = new.to_string().into_bytes();
    let mut edits = Vec::new();
    let mut try_message = |offset: usize, text: &[u8]| {
        let scan = scan_object(text);
        if scan.method {
            return;
        }
        if let Some(r) = scan.id {
            let same = serde_json::from_slice::<Value>(&text[r.clone()])
                .ok()
                .as_ref()
                == Some(expect);
            if same {
                edits.push((offset + r.start..offset + r.end, replacement.clone()));
            }
        }
    };
    let first = body.iter().position(|b| !b.is_ascii_whitespace());
    if first.is_some_and(|i| body[i] == b'{') {
        try_message(0, body);
        return edits;
    }
    let mut offset = 0;
    for line in body.split_inclusive(|b| *b == b'\n') {
        if let Some(data) = line.strip_prefix(b"data:") {
            let skip = 5 + usize::from(data.first() == Some(&b' '));
            try_message(offset + skip, &line[skip..]);
        }
        offset += line.len();
    }
    edits
}

/// What [`scan_object`] found at the top level of a JSON object.
#[derive(Debug, Default)]
struct ObjectScan {
    /// Byte range of the `id` member's value.
    id: Option<Range<usize>>,
    /// A `method` member was seen (the message is a request or notification).
    method: bool,
}

/// Walk the top level of the JSON object at the start of `text` (after white space), without
/// building it, so that a message cut in the middle (a cut stream) still shows its `id`.
fn scan_object(text: &[u8]) -> ObjectScan {
    let mut scan = ObjectScan::default();
    let ws = |i: &mut usize| {
        while *i < text.len() && text[*i].is_ascii_whitespace() {
            *i += 1;
        }
    };
    let mut i = 0;
    ws(&mut i);
    if text.get(i) != Some(&b'{') {
        return scan;
    }
    i += 1;
    loop {
        ws(&mut i);
        if text.get(i) != Some(&b'"') {
            return scan;
        }
        let Some(key_end) = skip_string(text, i) else {
            return scan;
        };
        let key = &text[i + 1..key_end - 1];
        i = key_end;
        ws(&mut i);
        if text.get(i) != Some(&b':') {
            return scan;
        }
        i += 1;
        ws(&mut i);
        let start = i;
        let Some(end) = skip_value(text, i) else {
            if key == b"method" {
                scan.method = true;
            }
            return scan;
        };
        match key {
            b"id" => scan.id = Some(start..end),
            b"method" => scan.method = true,
            _ => {}
        }
        i = end;
        ws(&mut i);
        match text.get(i) {
            Some(b',') => i += 1,
            _ => return scan,
        }
    }
}

/// End (exclusive) of the JSON string starting at `text[i] == '"'`.
fn skip_string(text: &[u8], mut i: usize) -> Option<usize> {
    i += 1;
    while i < text.len() {
        match text[i] {
            b'\\' => i += 2,
            b'"' => return Some(i + 1),
            _ => i += 1,
        }
    }
    None
}

/// End (exclusive) of the JSON value starting at `text[i]`; `None` when it is cut off.
fn skip_value(text: &[u8], mut i: usize) -> Option<usize> {
    match text.get(i)? {
        b'"' => skip_string(text, i),
        b'{' | b'[' => {
            let mut depth = 0usize;
            while i < text.len() {
                match text[i] {
                    b'"' => {
                        i = skip_string(text, i)?;
                        continue;
                    }
                    b'{' | b'[' => depth += 1,
                    b'}' | b']' => {
                        depth -= 1;
                        if depth == 0 {
                            return Some(i + 1);
                        }
                    }
                    _ => {}
                }
                i += 1;
            }
            None
        }
        _ => {
            let start = i;
            while i < text.len()
                && !matches!(text[i], b',' | b'}' | b']')
                && !text[i].is_ascii_whitespace()
            {
                i += 1;
            }
            // A scalar running to the end of the text may be cut (`12` of `123`).
            (i < text.len() && i > start).then_some(i)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::line::exchange_of;
    use super::super::options::CaptureLimits;
    use super::*;
    use mcp_triage_wire::capture::BodyEnd;
    use serde_json::json;

    fn line(v: Value) -> CapturedExchange {
        let text = v.to_string();
        let limits = CaptureLimits {
            max_chunks: usize::MAX,
            ..CaptureLimits::default()
        };
        exchange_of(1, &text, &limits).unwrap()
    }

    #[test]
    fn json_response_id_is_rewritten_and_requests_are_not() {
        let x = line(
            json!({"status": 200, "contentType": "application/json", "method": "ping",
            "body": "{\"jsonrpc\":\"2.0\",\"id\":7,\"result\":{\"id\":7}}", "expectId": 7}),
        );
        let (b, ranges) = rewrite_ids(&x, Some(&json!("new-1")));
        assert_eq!(
            &b[..],
            br#"{"jsonrpc":"2.0","id":"new-1","result":{"id":7}}"#
        );
        assert_eq!(ranges, vec![(0.0, 0..b.len())]);
        // A wrong-id response stays as captured.
        let (b, _) = rewrite_ids(&x, Some(&json!(7)));
        assert_eq!(&b[..], &x.body[..]);
        let sse = "event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"elicitation/create\",\"params\":{}}\n\n\
                   event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":3,\"result\":{}}\n\n";
        let x = line(
            json!({"status": 200, "contentType": "text/event-stream", "method": "ping",
            "body": sse, "expectId": 3, "chunks": [[0, 80], [5, sse.len() - 80]]}),
        );
        let (b, ranges) = rewrite_ids(&x, Some(&json!(12345)));
        let text = String::from_utf8(b.to_vec()).unwrap();
        assert!(text.contains("\"id\":3,\"method\""), "{text}");
        assert!(text.contains("\"id\":12345,\"result\""), "{text}");
        assert_eq!(ranges.len(), 2);
        assert_eq!(ranges[0].1, 0..80);
        assert_eq!(ranges[1].1, 80..text.len());
    }

    #[test]
    fn a_cut_message_still_has_its_id_rewritten() {
        let body = "data: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"content\":[{\"ty";
        let x = line(
            json!({"status": 200, "method": "ping", "body": body, "expectId": 1,
            "end": "upstream_closed", "chunks": [[0, body.len()]]}),
        );
        let (b, _) = rewrite_ids(&x, Some(&json!(9)));
        assert!(String::from_utf8_lossy(&b).contains("\"id\":9,"));
        assert_eq!(x.end, BodyEnd::UpstreamClosed);
    }

    #[test]
    fn chunk_boundaries_inside_an_edit_move_past_it() {
        // The boundary after `{"id":1` falls inside the id `12`.
        let body = r#"{"id":12,"result":{}}"#;
        let x = line(
            json!({"status": 200, "method": "ping", "body": body, "expectId": 12,
            "chunks": [[0, 7], [10, body.len() - 7]]}),
        );
        let (b, ranges) = rewrite_ids(&x, Some(&json!(1000)));
        assert_eq!(&b[..], br#"{"id":1000,"result":{}}"#);
        assert_eq!(ranges, vec![(0.0, 0..10), (10.0, 10..b.len())]);
    }

    /// Serving a line whose id needs no rewrite shares the captured body: no copy per reader.
    #[test]
    fn unrewritten_bodies_are_shared_not_copied() {
        let x = line(json!({"status": 200, "method": "ping", "expectId": 7,
            "body": "{\"jsonrpc\":\"2.0\",\"id\":7,\"result\":{}}", "chunks": [[0, 10], [5, 30]]}));
        for id in [Some(json!(7)), None] {
            let (b, ranges) = rewrite_ids(&x, id.as_ref());
            assert_eq!(b.as_ptr(), x.body.as_ptr(), "the body was copied");
            assert_eq!(ranges, vec![(0.0, 0..10), (5.0, 10..x.body.len())]);
        }
    }
}
