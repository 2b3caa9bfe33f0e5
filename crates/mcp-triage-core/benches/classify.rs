//! Criterion benchmarks of the classifier core, throughput in body bytes.
//!
//! `cargo bench -p mcp-triage-core` (add a filter such as `-- sse` to run some). Every body is
//! generated here; each benchmark first checks that its body gets the outcome it is meant to
//! measure, so a change in the rules cannot silently turn a benchmark into a measure of an early
//! rejection.

use std::hint::black_box;
use std::time::Duration;

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use mcp_triage_core::{classify, CallContext, Limits, Outcome, ResponseClassifier, ResponseHead};

const MIB: usize = 1 << 20;

fn json_head() -> ResponseHead {
    ResponseHead::new(200).content_type("application/json")
}

fn sse_head() -> ResponseHead {
    ResponseHead::new(200).content_type("text/event-stream")
}

fn small_success() -> Vec<u8> {
    br#"{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"It is 21 degrees and sunny in Berlin."}],"isError":false}}"#.to_vec()
}

/// A text result of about `size` bytes: prose with the escapes JSON text usually has.
fn text_result(size: usize) -> Vec<u8> {
    let piece = r#"The quick brown fox said \"hello\" and jumped over the lazy dog.\n"#;
    let mut text = String::with_capacity(size + piece.len());
    while text.len() < size {
        text.push_str(piece);
    }
    format!(
        r#"{{"jsonrpc":"2.0","id":1,"result":{{"content":[{{"type":"text","text":"{text}"}}],"isError":false}}}}"#
    )
    .into_bytes()
}

/// Standard base64 of `data` (kept here so the bench depends on nothing else).
fn base64(data: &[u8]) -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::with_capacity(data.len().div_ceil(3) * 4);
    for chunk in data.chunks(3) {
        let b = [
            chunk[0],
            *chunk.get(1).unwrap_or(&0),
            *chunk.get(2).unwrap_or(&0),
        ];
        let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(ALPHABET[(n >> (18 - 6 * i)) as usize & 63] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}

/// An image result whose base64 `data` is about `size` bytes.
fn image_result(size: usize) -> Vec<u8> {
    // Pseudo-random bytes (xorshift), so the base64 looks like a real image's.
    let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
    let raw: Vec<u8> = (0..size / 4 * 3)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x as u8
        })
        .collect();
    format!(
        r#"{{"jsonrpc":"2.0","id":1,"result":{{"content":[{{"type":"image","data":"{}","mimeType":"image/png"}}]}}}}"#,
        base64(&raw)
    )
    .into_bytes()
}

fn jsonrpc_error() -> Vec<u8> {
    br#"{"jsonrpc":"2.0","id":1,"error":{"code":-32602,"message":"Invalid params: unknown tool 'get_wether'","data":{"tool":"get_wether"}}}"#.to_vec()
}

/// Three progress notifications, then the response (a text result of about 64 KiB), as SSE.
fn sse_stream() -> Vec<u8> {
    let mut s = String::from(": stream opened\n\nid: e0\ndata:\n\n");
    for i in 1..=3 {
        s.push_str(&format!(
            "id: e{i}\nevent: message\ndata: {{\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",\"params\":{{\"progressToken\":\"t1\",\"progress\":{i},\"total\":4,\"message\":\"step {i} of 4\"}}}}\n\n"
        ));
    }
    let response = String::from_utf8(text_result(64 << 10)).unwrap();
    s.push_str(&format!("id: e4\ndata: {response}\n\n"));
    s.into_bytes()
}

/// A success whose `structuredContent` nests `levels` objects.
fn deep_structured(levels: usize) -> Vec<u8> {
    let mut s =
        String::from(r#"{"jsonrpc":"2.0","id":1,"result":{"content":[],"structuredContent":"#);
    s.push_str(&r#"{"a":"#.repeat(levels - 1));
    s.push_str("{}");
    s.push_str(&"}".repeat(levels - 1));
    s.push_str("}}");
    s.into_bytes()
}

fn check(head: &ResponseHead, body: &[u8], ctx: &CallContext, want: Outcome, what: &str) {
    let v = classify(head, body, ctx);
    assert_eq!(v.outcome, want, "{what}: {:?}", v.detail);
}

fn feed_in_chunks(head: &ResponseHead, body: &[u8], ctx: &CallContext, chunk: usize) -> Outcome {
    let mut c = ResponseClassifier::new(head, ctx.clone());
    for piece in body.chunks(chunk) {
        c.feed(piece);
        if c.is_decided() {
            break;
        }
    }
    c.finish().outcome
}

fn benches(c: &mut Criterion) {
    let ctx = CallContext::new(1);
    let mut group = c.benchmark_group("classify");

    let cases: Vec<(&str, ResponseHead, Vec<u8>, Outcome)> = vec![
        (
            "json/small-success",
            json_head(),
            small_success(),
            Outcome::ToolSuccess,
        ),
        (
            "json/text-1MiB",
            json_head(),
            text_result(MIB),
            Outcome::ToolSuccess,
        ),
        (
            "json/image-base64-1MiB",
            json_head(),
            image_result(MIB),
            Outcome::ToolSuccess,
        ),
        (
            "json/jsonrpc-error",
            json_head(),
            jsonrpc_error(),
            Outcome::JsonrpcError,
        ),
        (
            "sse/3-notifications+response/whole",
            sse_head(),
            sse_stream(),
            Outcome::ToolSuccess,
        ),
    ];
    for (name, head, body, want) in &cases {
        check(head, body, &ctx, *want, name);
        group.throughput(Throughput::Bytes(body.len() as u64));
        if body.len() >= MIB {
            group
                .sample_size(30)
                .measurement_time(Duration::from_secs(6));
        } else {
            group
                .sample_size(100)
                .measurement_time(Duration::from_secs(4));
        }
        group.bench_function(*name, |b| {
            b.iter(|| classify(black_box(head), black_box(body), &ctx))
        });
    }

    let head = sse_head();
    let body = sse_stream();
    assert_eq!(
        feed_in_chunks(&head, &body, &ctx, 4096),
        Outcome::ToolSuccess
    );
    group.throughput(Throughput::Bytes(body.len() as u64));
    group
        .sample_size(100)
        .measurement_time(Duration::from_secs(4));
    group.bench_function("sse/3-notifications+response/4KiB-chunks", |b| {
        b.iter(|| feed_in_chunks(black_box(&head), black_box(&body), &ctx, 4096))
    });

    // A large body fed as the proxy and client feed it: past 1 MiB it is scanned as it arrives
    // and only a compacted copy is kept; beside it the same body buffered whole (the path taken
    // with an output schema), so the cost of bounded memory is read off in the same run.
    for (name, body) in [
        ("text-8MiB", text_result(8 * MIB)),
        ("image-base64-8MiB", image_result(8 * MIB)),
    ] {
        let head = json_head();
        group.throughput(Throughput::Bytes(body.len() as u64));
        group
            .sample_size(20)
            .measurement_time(Duration::from_secs(6));
        for (how, after) in [("compacted", Some(1 << 20)), ("whole", None)] {
            let feed = |body: &[u8]| {
                let mut c = ResponseClassifier::new(&head, ctx.clone()).compact_json_after(after);
                for chunk in body.chunks(64 << 10) {
                    c.feed(chunk);
                }
                c.finish().outcome
            };
            assert_eq!(feed(&body), Outcome::ToolSuccess, "{name} {how}");
            group.bench_function(format!("json/{name}/64KiB-chunks/{how}"), |b| {
                b.iter(|| feed(black_box(&body)))
            });
        }
    }

    // 10,000 levels of structuredContent, two more for the envelope and the result: raise
    // maxDepth so that it is classified in full rather than stopped at the limit.
    let deep_ctx = CallContext::new(1).with_limits(Limits {
        max_depth: 10_100,
        ..Limits::DEFAULT
    });
    let head = json_head();
    let body = deep_structured(10_000);
    check(&head, &body, &deep_ctx, Outcome::ToolSuccess, "deep");
    group.throughput(Throughput::Bytes(body.len() as u64));
    group
        .sample_size(50)
        .measurement_time(Duration::from_secs(5));
    group.bench_function("json/structuredContent-10000-deep", |b| {
        b.iter(|| classify(black_box(&head), black_box(&body), &deep_ctx))
    });

    group.finish();
}

criterion_group!(classify_benches, benches);
criterion_main!(classify_benches);
