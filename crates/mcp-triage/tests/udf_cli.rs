//! `mcp-triage udf clickhouse` as ClickHouse drives it: rows on stdin, one result a row on
//! stdout, in order. The chdb test (integrations/clickhouse/test.sh) runs it inside a real
//! engine; these cases pin the stream rules without one.

mod common;

use std::process::Output;

fn udf(args: &[&str], stdin: &[u8]) -> Output {
    let mut all = vec!["udf", "clickhouse"];
    all.extend_from_slice(args);
    common::run_with_stdin(&all, stdin)
}

fn results(out: &Output) -> Vec<serde_json::Value> {
    String::from_utf8(out.stdout.clone())
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(&l.replace("\\\\", "\\")).expect("a JSON result"))
        .collect()
}

const OK_ROW: &str =
    "200\tapplication/json\t{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"content\":[]}}\t1\n";
const BAD_ROW: &str = "0\t\t\t1\n";

#[test]
fn every_row_gets_its_result_in_order() {
    let input = format!("{OK_ROW}{BAD_ROW}{OK_ROW}");
    let out = udf(&[], input.as_bytes());
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let r = results(&out);
    assert_eq!(r.len(), 3);
    assert_eq!(r[0]["outcome"], "TOOL_SUCCESS");
    assert_eq!(r[1]["row"], 2);
    assert!(
        r[1]["error"].as_str().unwrap().contains("status"),
        "{}",
        r[1]
    );
    assert_eq!(r[2]["outcome"], "TOOL_SUCCESS");
}

#[test]
fn chunk_headers_number_rows_within_their_block() {
    let input = format!("2\n{OK_ROW}{OK_ROW}2\n{OK_ROW}{BAD_ROW}");
    let out = udf(&["--chunk-header"], input.as_bytes());
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let r = results(&out);
    assert_eq!(r.len(), 4);
    assert_eq!(
        (r[3]["block"].as_u64(), r[3]["row"].as_u64()),
        (Some(2), Some(2))
    );
    assert!(
        r[3]["error"]
            .as_str()
            .unwrap()
            .starts_with("block 2 row 2: "),
        "{}",
        r[3]
    );
}

#[test]
fn a_block_cut_short_is_exit_2_with_the_reason() {
    let input = format!("3\n{OK_ROW}");
    let out = udf(&["--chunk-header"], input.as_bytes());
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("after 1 of a block's 3 rows"), "{err}");
}

#[test]
fn a_missing_chunk_header_says_which_setting_to_check() {
    let out = udf(&["--chunk-header"], OK_ROW.as_bytes());
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("send_chunk_header"), "{err}");
}

#[test]
fn a_row_over_the_limit_gets_an_error_and_the_next_row_its_verdict() {
    let long = format!("200\tapplication/json\t{}\t1\n", "x".repeat(5000));
    let input = format!("{long}{OK_ROW}");
    let out = udf(&["--max-row-bytes", "1000"], input.as_bytes());
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let r = results(&out);
    assert_eq!(r.len(), 2);
    assert!(
        r[0]["error"]
            .as_str()
            .unwrap()
            .contains("--max-row-bytes 1000"),
        "{}",
        r[0]
    );
    assert_eq!(r[1]["outcome"], "TOOL_SUCCESS");
}

/// `mcp_classify_full` with `Content-Encoding` in its headers map: the body, bytes of a gzip,
/// br or zstd stream in a ClickHouse String (TabSeparated-escaped), is decoded by the core, so
/// the function gives the verdict of the plain body, as `classify --batch` does.
#[test]
fn the_full_form_decodes_a_compressed_body() {
    use std::io::Write;
    let body = br#"{"jsonrpc":"2.0","id":1,"result":{"content":[],"isError":true}}"#;
    let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    e.write_all(body).unwrap();
    let coded = [
        ("gzip", e.finish().unwrap()),
        ("zstd", zstd::encode_all(&body[..], 3).unwrap()),
    ];
    let mut input = Vec::new();
    for (coding, bytes) in &coded {
        input.extend_from_slice(b"200\tapplication/json\t");
        for &b in bytes {
            match b {
                b'\t' => input.extend_from_slice(b"\\t"),
                b'\n' => input.extend_from_slice(b"\\n"),
                b'\\' => input.extend_from_slice(b"\\\\"),
                other => input.push(other),
            }
        }
        input.extend_from_slice(format!("\t1\t{{'Content-Encoding':'{coding}'}}\t\n").as_bytes());
    }
    let out = udf(&["--form", "full"], &input);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let r = results(&out);
    assert_eq!(r.len(), 2);
    for v in r {
        assert_eq!(v["outcome"], "TOOL_ERROR", "{v}");
    }
}

/// `mcp_classify_capture`: a capture line's columns, `method` and `end` included. Each row is
/// judged as `classify --batch` judges its capture line: a connection loss by its `end`, a
/// `tasks/get` as a poll, an `initialize` result as `RESULT`, a notification's 202 as
/// `ACCEPTED`, a GET stream (no method) as `FORWARDED`; string ids stay strings.
#[test]
fn the_capture_form_names_each_rows_kind_and_what_it_counts_as() {
    let rows = concat!(
        // a tools/call whose upstream broke before the response head: the proxy answered 502
        "502\t\t\t1\t{}\t\ttools/call\tno_response\n",
        // a tasks/get of a working task
        "200\tapplication/json\t{\"jsonrpc\":\"2.0\",\"id\":\"p-1\",\"result\":{\"taskId\":\"t\",\"status\":\"working\",\"createdAt\":\"2026-01-01T00:00:00Z\",\"lastUpdatedAt\":\"2026-01-01T00:00:00Z\",\"ttl\":60000}}\tp-1\t{}\t2025-11-25\ttasks/get\tcomplete\n",
        "200\tapplication/json\t{\"jsonrpc\":\"2.0\",\"id\":0,\"result\":{\"protocolVersion\":\"2025-06-18\"}}\t0\t{}\t\tinitialize\tcomplete\n",
        "202\t\t\t\t{}\t\tnotifications/initialized\tcomplete\n",
        "200\ttext/event-stream\t\t\t{}\t\t\tcomplete\n",
        "200\t\t\t1\t{}\t\ttools/call\tfinished\n",
    );
    let out = udf(&["--form", "capture"], rows.as_bytes());
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let r = results(&out);
    let seen: Vec<(String, String)> = r
        .iter()
        .take(5)
        .map(|v| (v["kind"].to_string(), v["counted"].to_string()))
        .collect();
    let want = [
        ("tools/call", "CONNECTION_ERROR"),
        ("tasks/get", "TASK_CREATED"),
        ("initialize", "RESULT"),
        ("notifications/initialized", "ACCEPTED"),
        ("(not JSON-RPC)", "FORWARDED"),
    ];
    let want: Vec<(String, String)> = want
        .iter()
        .map(|(k, c)| (format!("{k:?}"), format!("{c:?}")))
        .collect();
    assert_eq!(seen, want, "{r:?}");
    assert_eq!(r[0]["verdict"]["outcome"], "CONNECTION_ERROR");
    let bad = r[5]["error"].as_str().unwrap();
    assert!(bad.contains("end \"finished\" is not one of"), "{bad}");
}
