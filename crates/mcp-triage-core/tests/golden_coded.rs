//! Every golden vector, compressed: each `tests/golden/*.jsonl` body is compressed here with
//! gzip, br and zstd and sent with that `Content-Encoding`, whole and fed in 7-byte chunks; the
//! verdict must be exactly the one the plain body gets (the content coding is undone inside the
//! classifier, so nothing of it may show). Vectors that already carry a `Content-Encoding`
//! (`content-coding.jsonl`) get a second coding on top and must keep their layer, outcome and
//! limit. `content-coding.jsonl`'s `decoded` members are checked against their bodies here too,
//! so the readable text beside each base64 body cannot drift from it.

use std::io::Write;
use std::path::Path;

use base64::Engine as _;
use mcp_triage_core::exchange::Exchange;
use mcp_triage_core::{classify, CallContext, ResponseClassifier, ResponseHead, Verdict};
use serde_json::Value;

fn gzip(data: &[u8]) -> Vec<u8> {
    let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    e.write_all(data).unwrap();
    e.finish().unwrap()
}

fn br(data: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    {
        let mut w = brotli::CompressorWriter::new(&mut out, 4096, 5, 22);
        w.write_all(data).unwrap();
    }
    out
}

fn zstd(data: &[u8]) -> Vec<u8> {
    zstd::encode_all(data, 3).unwrap()
}

/// A compressor of the test.
type Compress = fn(&[u8]) -> Vec<u8>;

const CODINGS: [(&str, Compress); 3] = [("gzip", gzip), ("br", br), ("zstd", zstd)];

/// The verdict of `body` under `head`, whole and in 7-byte chunks (stopping once decided, as
/// an I/O layer does); both must agree.
fn both_ways(head: &ResponseHead, body: &[u8], ctx: &CallContext) -> Result<Value, String> {
    let whole = classify(head, body, ctx);
    let mut sm = ResponseClassifier::new(head, ctx.clone());
    for chunk in body.chunks(7) {
        sm.feed(chunk);
        if sm.is_decided() {
            break;
        }
    }
    let chunked = sm.finish();
    let (whole, chunked) = (to_value(&whole), to_value(&chunked));
    if whole != chunked {
        return Err(format!("whole {whole} but in 7-byte chunks {chunked}"));
    }
    Ok(whole)
}

fn to_value(v: &Verdict) -> Value {
    serde_json::to_value(v).unwrap()
}

fn golden_lines() -> Vec<(String, String)> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/golden");
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "jsonl"))
        .collect();
    files.sort();
    let mut lines = Vec::new();
    for file in files {
        let text = std::fs::read_to_string(&file).unwrap();
        let name = file.file_name().unwrap().to_string_lossy().into_owned();
        for (i, line) in text.lines().enumerate() {
            if !line.trim().is_empty() {
                lines.push((format!("{name}:{}", i + 1), line.to_string()));
            }
        }
    }
    lines
}

/// The members a verdict keeps whatever coding its body came in: a vector that was coded
/// already keeps these under a second coding (its detail names the codings).
fn essentials(v: &Value) -> Value {
    serde_json::json!({"layer": v["layer"], "outcome": v["outcome"], "limit": v.get("limit")})
}

#[test]
fn every_golden_outcome_passes_gzip_br_and_zstd_compressed() {
    let mut report = Vec::new();
    let mut checked = 0;
    for (at, line) in golden_lines() {
        let x = Exchange::parse(line.as_bytes()).unwrap();
        let ctx = x.context(&CallContext::new(1));
        let plain = match both_ways(&x.head, &x.body, &ctx) {
            Ok(v) => v,
            Err(e) => {
                report.push(format!("{at}: plain: {e}"));
                continue;
            }
        };
        let coded_already = x.head.get("Content-Encoding").is_some();
        if coded_already && !decodes(&x.head) {
            // under a second coding, a body in a coding the classifier does not know is
            // unreadable, even where the plain one was empty
            continue;
        }
        for (coding, compress) in CODINGS {
            let head = x.head.clone().header("Content-Encoding", coding);
            let body = compress(&x.body);
            match both_ways(&head, &body, &ctx) {
                Err(e) => report.push(format!("{at} {coding}: {e}")),
                Ok(got) if coded_already => {
                    if essentials(&got) != essentials(&plain) {
                        report.push(format!("{at} {coding}: {got}, plain {plain}"));
                    }
                }
                Ok(got) => {
                    if got != plain {
                        report.push(format!(
                            "{at} {coding}:\n    coded {got}\n    plain {plain}"
                        ));
                    }
                }
            }
            checked += 1;
        }
    }
    assert!(checked > 900, "only {checked} coded vectors");
    assert!(
        report.is_empty(),
        "{} coded vectors differ:\n{}",
        report.len(),
        report.join("\n")
    );
}

/// Whether the classifier can undo every coding `head` names.
fn decodes(head: &ResponseHead) -> bool {
    use mcp_triage_core::http::decode::{ContentDecoder, DecodeLimits};
    ContentDecoder::for_codings(head.get_all("Content-Encoding"), DecodeLimits::NONE).is_ok()
}

/// Decodes a body of `content-coding.jsonl` (up to two codings, applied in order).
fn decode(codings: &str, body: &[u8]) -> Vec<u8> {
    use mcp_triage_core::http::decode::{ContentDecoder, DecodeLimits};
    match ContentDecoder::for_codings([codings], DecodeLimits::NONE) {
        Ok(Some(mut d)) => d
            .decode_all(body)
            .unwrap_or_else(|e| panic!("{codings}: {e}")),
        Ok(None) => body.to_vec(),
        Err(e) => panic!("{codings}: {e}"),
    }
}

#[test]
fn the_readable_text_of_each_coded_vector_is_its_body() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/golden/content-coding.jsonl");
    let text = std::fs::read_to_string(path).unwrap();
    let mut seen = std::collections::BTreeSet::new();
    for line in text.lines().filter(|l| !l.trim().is_empty()) {
        let case: Value = serde_json::from_str(line).unwrap();
        let name = case["name"].as_str().unwrap();
        let codings = case["headers"]["Content-Encoding"].as_str().unwrap_or("");
        for c in codings.split(',') {
            seen.insert(c.trim().to_ascii_lowercase());
        }
        let Some(decoded) = case.get("decoded").and_then(Value::as_str) else {
            continue;
        };
        let body = base64::engine::general_purpose::STANDARD
            .decode(case["bodyBase64"].as_str().unwrap())
            .unwrap();
        assert_eq!(
            String::from_utf8(decode(codings, &body)).unwrap(),
            decoded,
            "{name}"
        );
    }
    for c in ["gzip", "x-gzip", "deflate", "br", "zstd", "identity"] {
        assert!(
            seen.contains(c),
            "no vector in content-coding.jsonl for {c}"
        );
    }
}
