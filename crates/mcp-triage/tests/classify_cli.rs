//! The `classify` command as a user runs it: real process, exit codes, output formats, and the
//! differential test against the seed article's own classifier.

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn bin() -> Command {
    Command::new(env!("CARGO_BIN_EXE_mcp-triage"))
}

fn run(args: &[&str], stdin: &[u8]) -> Output {
    common::run_with_stdin(args, stdin)
}

fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// `../shared` beside the checkout (CI lays it there), or `$MCP_TRIAGE_SHARED`.
fn shared_dir() -> Option<PathBuf> {
    let dir = std::env::var_os("MCP_TRIAGE_SHARED")
        .map(PathBuf::from)
        .unwrap_or_else(|| repo_root().join("../shared"));
    dir.join("reference/classify-batch.mjs")
        .exists()
        .then_some(dir)
}

fn tmp_dir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("mcp-triage-test-{name}-{}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    d
}

#[test]
fn one_response_text_and_json() {
    let body = br#"{"jsonrpc":"2.0","id":1,"error":{"code":-32602,"message":"Invalid params"}}"#;
    let out = run(&["classify", "-"], body);
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(
        text.starts_with("protocol/JSONRPC_ERROR code=-32602"),
        "{text}"
    );

    let out = run(
        &["classify", "--format", "json", "--status", "500", "-"],
        body,
    );
    assert!(out.status.success());
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["outcome"], "HTTP_ERROR");
    assert_eq!(v["status"], 500);
    assert_eq!(v["code"], -32602);
}

#[test]
fn headers_ids_and_sse_from_flags() {
    let sse =
        b"event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":\"a\",\"result\":{\"content\":[]}}\n\n";
    let out = run(
        &[
            "classify",
            "--content-type",
            "text/event-stream",
            "--expect-id",
            "a",
            "--format",
            "json",
            "-",
        ],
        sse,
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["outcome"], "TOOL_SUCCESS", "{v}");
    assert_eq!(v["stream"]["events"], 1);

    let out = run(
        &[
            "classify",
            "--status",
            "429",
            "--header",
            "Retry-After: Sun, 06 Nov 1994 08:49:37 GMT",
            "--now",
            "784111767",
            "--format",
            "json",
            "-",
        ],
        b"",
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["retryAfterMs"], 10_000, "{v}");

    // A digit string quoted as JSON is a string id: 1 and "1" differ.
    let body = br#"{"jsonrpc":"2.0","id":1,"result":{"content":[]}}"#;
    let out = run(
        &["classify", "--expect-id", "\"1\"", "--format", "json", "-"],
        body,
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["outcome"], "INVALID_ENVELOPE", "{v}");
}

#[test]
fn output_schema_flag() {
    let dir = tmp_dir("schema");
    let schema = dir.join("schema.json");
    std::fs::write(
        &schema,
        br#"{"type":"object","properties":{"n":{"type":"integer"}},"required":["n"]}"#,
    )
    .unwrap();
    let body = br#"{"jsonrpc":"2.0","id":1,"result":{"content":[],"structuredContent":{"n":"x"}}}"#;
    let out = run(
        &[
            "classify",
            "--output-schema",
            schema.to_str().unwrap(),
            "--format",
            "json",
            "-",
        ],
        body,
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["outcome"], "INVALID_TOOL_RESULT");
    assert!(
        v["detail"]
            .as_str()
            .unwrap()
            .contains("/structuredContent/n"),
        "{v}"
    );
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn bad_usage_and_unreadable_input_exit_2_with_a_message() {
    let cases: &[(&[&str], &str)] = &[
        (&["classify", "/no/such/file"], "cannot read /no/such/file"),
        (&["classify", "--status", "42", "-"], "42"),
        (
            &["classify", "--protocol-version", "2099-01-01", "-"],
            "2099-01-01",
        ),
        (&["classify", "--header", "no colon", "-"], "Name: value"),
        (
            &["classify", "--output-schema", "/no/such/schema", "-"],
            "--output-schema",
        ),
        (&["classify", "--each", "-"], "--batch"),
        (
            &["classify", "--batch", "/no/such.jsonl"],
            "cannot read /no/such.jsonl",
        ),
        (&["classify"], "FILE"),
    ];
    for (args, needle) in cases {
        let out = run(args, b"");
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains(needle), "{args:?}: {err}");
        assert!(!err.contains("panicked"), "{args:?}: {err}");
    }
}

#[test]
fn batch_summary_each_and_bad_lines() {
    let dir = tmp_dir("batch");
    let file = dir.join("x.jsonl");
    let ok = r#"{"status":200,"contentType":"application/json","body":"{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"content\":[]}}"}"#;
    let err = r#"{"status":503,"contentType":"application/json","body":"{}","expectId":1}"#;
    std::fs::write(&file, format!("{ok}\n{err}\n\n{ok}\n")).unwrap();
    let path = file.to_str().unwrap();
    let out = run(&["classify", "--batch", path], b"");
    assert!(out.status.success());
    assert_eq!(
        String::from_utf8(out.stdout).unwrap().trim(),
        r#"{"verdicts":3,"bytes":98,"outcomes":{"TOOL_SUCCESS":2,"HTTP_ERROR":1}}"#
    );
    let out = run(
        &["classify", "--batch", path, "--each", "--format", "text"],
        b"",
    );
    let text = String::from_utf8(out.stdout).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 3);
    assert!(lines[1].starts_with("transport/HTTP_ERROR status=503"));

    std::fs::write(&file, format!("{ok}\n{{\"status\":\"x\"}}\n")).unwrap();
    let out = run(&["classify", "--batch", path, "--fail-fast"], b"");
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("line 2") && err.contains("status"), "{err}");

    std::fs::write(&file, format!("{ok}\n{}\n", "x".repeat(5000))).unwrap();
    let out = run(
        &[
            "classify",
            "--batch",
            path,
            "--max-line-bytes",
            "1000",
            "--fail-fast",
        ],
        b"",
    );
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("line 2: longer than --max-line-bytes"));
    std::fs::remove_dir_all(dir).unwrap();
}

/// Issue 15 item 6: a bad line (not JSON, not an exchange, bad base64, too long) is reported in
/// its place and counted, and the batch goes on; the exit status is 1 then. `--fail-fast` stops
/// at the first one with exit 2 naming it.
#[test]
fn batch_reports_bad_lines_and_goes_on() {
    let dir = tmp_dir("bad-lines");
    let file = dir.join("x.jsonl");
    let path = file.to_str().unwrap();
    let ok = r#"{"status":200,"contentType":"application/json","body":"{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"content\":[]}}"}"#;
    let http = r#"{"status":503,"contentType":"application/json","body":"{}"}"#;
    let lines = [
        ok.to_string(),
        r#"{"status":"#.to_string(),                        // 2: not JSON
        http.to_string(),                                   // 3
        r#"{"body":"x"}"#.to_string(),                      // 4: no status
        r#"{"status":200,"bodyBase64":"***"}"#.to_string(), // 5: bad base64
        ok.to_string(),                                     // 6
        "x".repeat(5000),                                   // 7: too long
        ok.to_string(),                                     // 8
        r#"{"status":20}"#.to_string(),                     // 9: not a status
        r#"{"status":200,"protocolVersion":"1999"}"#.to_string(), // 10
        "x".repeat(3000),                                   // 11: too long, last, no newline
    ];
    std::fs::write(&file, lines.join("\n")).unwrap();
    let base = ["classify", "--batch", path, "--max-line-bytes", "1000"];

    let out = run(&base, b"");
    assert_eq!(
        out.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let summary: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(summary["verdicts"], 4);
    assert_eq!(summary["outcomes"]["TOOL_SUCCESS"], 3);
    assert_eq!(summary["badLines"], 7);
    let first: Vec<u64> = summary["firstBadLines"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| b["line"].as_u64().unwrap())
        .collect();
    assert_eq!(first, [2, 4, 5, 7, 9], "the first five, in input order");
    let why = |i: usize| {
        summary["firstBadLines"][i]["error"]
            .as_str()
            .unwrap()
            .to_string()
    };
    assert!(why(0).contains("not an exchange object"), "{}", why(0));
    assert!(why(1).contains("status"), "{}", why(1));
    assert!(why(2).contains("bodyBase64"), "{}", why(2));
    assert!(why(3).contains("--max-line-bytes 1000"), "{}", why(3));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("7 bad line(s) skipped") && err.contains("line 2:"),
        "{err}"
    );

    // --each: one record a line, in input order, bad lines in their place.
    let out = run(&[&base[..], &["--each"]].concat(), b"");
    assert_eq!(out.status.code(), Some(1));
    let records: Vec<serde_json::Value> = String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(records.len(), 11);
    for (i, r) in records.iter().enumerate() {
        let line = i as u64 + 1;
        if [2, 4, 5, 7, 9, 10, 11].contains(&line) {
            assert_eq!(r["line"], line, "{r}");
            assert!(r["error"].is_string() && r.get("outcome").is_none(), "{r}");
        } else {
            assert!(r["outcome"].is_string() && r.get("error").is_none(), "{r}");
        }
    }
    assert_eq!(records[2]["outcome"], "HTTP_ERROR");

    let out = run(&[&base[..], &["--each", "--format", "text"]].concat(), b"");
    let text = String::from_utf8(out.stdout).unwrap();
    let text: Vec<&str> = text.lines().collect();
    assert_eq!(text.len(), 11);
    assert!(
        text[1].starts_with("line 2: bad exchange: not an exchange object"),
        "{}",
        text[1]
    );
    let out = run(&[&base[..], &["--format", "text"]].concat(), b"");
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(
        text.contains("; 7 bad line(s) skipped, the first line 2: bad exchange"),
        "{text}"
    );

    // --fail-fast: the verdicts before the bad line, then exit 2 naming it.
    let out = run(&[&base[..], &["--each", "--fail-fast"]].concat(), b"");
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(String::from_utf8(out.stdout).unwrap().lines().count(), 1);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("line 2: not an exchange object"), "{err}");
    std::fs::remove_dir_all(dir).unwrap();
}

/// Bad lines keep their place when the file spans many blocks read by several workers, and a
/// too-long line straddling a block boundary is skipped without losing the next line.
#[test]
fn batch_bad_lines_keep_input_order_across_blocks() {
    let dir = tmp_dir("bad-lines-blocks");
    let file = dir.join("x.jsonl");
    let path = file.to_str().unwrap();
    let padding = "p".repeat(900);
    let mut text = String::new();
    let mut expected = Vec::new(); // Some(status) for a good line, None for a bad one
    for i in 1..=9_000u32 {
        if i % 7 == 0 {
            text.push_str("{not json}\n");
            expected.push(None);
        } else if i % 1_000 == 500 {
            text.push_str(&"y".repeat(1_500_000)); // too long, in the middle of blocks
            text.push('\n');
            expected.push(None);
        } else {
            let status = 200 + (i % 3) * 100;
            text.push_str(&format!(
                r#"{{"status":{status},"contentType":"text/plain","body":"{padding}"}}"#
            ));
            text.push('\n');
            expected.push(Some(status));
        }
    }
    std::fs::write(&file, text).unwrap();
    for jobs in ["1", "3"] {
        let out = run(
            &[
                "classify",
                "--batch",
                path,
                "--each",
                "--jobs",
                jobs,
                "--max-line-bytes",
                "1000000",
            ],
            b"",
        );
        assert_eq!(out.status.code(), Some(1), "--jobs {jobs}");
        let stdout = String::from_utf8(out.stdout).unwrap();
        let records: Vec<serde_json::Value> = stdout
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        assert_eq!(records.len(), expected.len(), "--jobs {jobs}");
        for (i, (r, want)) in records.iter().zip(&expected).enumerate() {
            match want {
                None => assert_eq!(r["line"], i as u64 + 1, "--jobs {jobs}: {r}"),
                Some(200) => assert!(r["outcome"].is_string() && r.get("line").is_none(), "{r}"),
                Some(status) => {
                    assert_eq!(r["status"], *status, "--jobs {jobs} line {}: {r}", i + 1)
                }
            }
        }
    }
    std::fs::remove_dir_all(dir).unwrap();
}

/// The acceptance test of the seed: on 20,000 generated exchanges our outcome equals the seed's on
/// every line. Needs python3 and node; without node it says so loudly and passes.
/// A compressor of the coded golden lines.
type Compress = fn(&[u8]) -> Vec<u8>;

fn gzip(b: &[u8]) -> Vec<u8> {
    use std::io::Write;
    let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    e.write_all(b).unwrap();
    e.finish().unwrap()
}

fn br(b: &[u8]) -> Vec<u8> {
    use std::io::Write;
    let mut out = Vec::new();
    {
        let mut w = brotli::CompressorWriter::new(&mut out, 4096, 5, 22);
        w.write_all(b).unwrap();
    }
    out
}

fn zstd(b: &[u8]) -> Vec<u8> {
    zstd::encode_all(b, 3).unwrap()
}

/// Every golden vector of the core, its body compressed with gzip, br and zstd (base64, with
/// `Content-Encoding` in the line's headers), through `classify --batch --each`: each coded line
/// gets exactly the verdict the CLI gives the plain line. And one response from a file with
/// `--header 'Content-Encoding: gzip'`, and the bomb limit's flag.
#[test]
fn compressed_golden_vectors_through_the_cli_give_the_plain_verdicts() {
    use base64::Engine as _;
    let codings: [(&str, Compress); 3] = [("gzip", gzip), ("br", br), ("zstd", zstd)];
    let golden = repo_root().join("crates/mcp-triage-core/tests/golden");
    let dir = tmp_dir("coded");
    let (mut plain, mut coded) = (String::new(), String::new());
    let mut files: Vec<_> = std::fs::read_dir(&golden)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "jsonl"))
        .collect();
    files.sort();
    for f in files {
        for line in std::fs::read_to_string(&f).unwrap().lines() {
            let case: serde_json::Value = match serde_json::from_str(line) {
                Ok(v) => v,
                Err(_) => continue,
            };
            if case["headers"].get("Content-Encoding").is_some() {
                continue;
            }
            let body = match (case["body"].as_str(), case["bodyBase64"].as_str()) {
                (Some(b), _) => b.as_bytes().to_vec(),
                (None, Some(b)) => base64::engine::general_purpose::STANDARD.decode(b).unwrap(),
                (None, None) => Vec::new(),
            };
            plain.push_str(line);
            plain.push('\n');
            for (name, compress) in codings {
                let mut c = case.clone();
                let o = c.as_object_mut().unwrap();
                o.remove("body");
                o.insert(
                    "bodyBase64".into(),
                    base64::engine::general_purpose::STANDARD
                        .encode(compress(&body))
                        .into(),
                );
                let headers = o.entry("headers").or_insert(serde_json::json!({}));
                headers["Content-Encoding"] = name.into();
                coded.push_str(&c.to_string());
                coded.push('\n');
            }
        }
    }
    let (p, c) = (dir.join("plain.jsonl"), dir.join("coded.jsonl"));
    std::fs::write(&p, plain).unwrap();
    std::fs::write(&c, coded).unwrap();
    let each = |f: &Path| -> Vec<String> {
        let out = bin()
            .args(["classify", "--batch"])
            .arg(f)
            .args(["--each", "--format", "json", "--now", "0"])
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout)
            .unwrap()
            .lines()
            .map(str::to_string)
            .collect()
    };
    let (want, got) = (each(&p), each(&c));
    assert!(want.len() > 300, "only {} plain lines", want.len());
    assert_eq!(got.len(), want.len() * 3);
    for (i, w) in want.iter().enumerate() {
        for (k, (name, _)) in codings.iter().enumerate() {
            assert_eq!(&got[i * 3 + k], w, "line {} in {name}", i + 1);
        }
    }

    // one response, from a file
    let body = br#"{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"ok"}]}}"#;
    let file = dir.join("ok.json.gz");
    std::fs::write(&file, gzip(body)).unwrap();
    let f = file.to_str().unwrap();
    let out = run(&["classify", "--header", "Content-Encoding: gzip", f], b"");
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.starts_with("application/TOOL_SUCCESS"), "{text}");
    // the same bytes without the header are not JSON; with a coding the core does not know,
    // the detail names it
    let out = run(&["classify", f], b"");
    assert!(String::from_utf8_lossy(&out.stdout).starts_with("protocol/MALFORMED_JSON"));
    let out = run(
        &["classify", "--header", "Content-Encoding: compress", f],
        b"",
    );
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.contains("\"compress\" is not a coding"), "{text}");
    // a bomb: 4 MiB of zeros in about 4 KiB
    std::fs::write(&file, gzip(&vec![0u8; 4 << 20])).unwrap();
    let args = [
        "classify",
        "--format",
        "json",
        "--header",
        "Content-Encoding: gzip",
        f,
    ];
    let out = run(&args, b"");
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["limit"]["name"], "maxDecodedRatio", "{v}");
    let out = run(
        &[
            &args[..],
            &["--max-decoded-ratio", "0", "--max-decoded-bytes", "65536"],
        ]
        .concat(),
        b"",
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        v["limit"],
        serde_json::json!({"name": "maxDecodedBytes", "max": 65536})
    );
}

#[test]
fn differential_against_the_seed_classifier() {
    let Some(shared) = shared_dir() else {
        eprintln!("\n*** SKIPPED differential test: ../shared/reference/classify-batch.mjs not found (set MCP_TRIAGE_SHARED) ***\n");
        return;
    };
    if Command::new("node").arg("--version").output().is_err() {
        eprintln!("\n*** SKIPPED differential test: `node` is not installed ***\n");
        return;
    }
    let dir = tmp_dir("differential");
    let file = dir.join("small.jsonl");
    let status = Command::new("python3")
        .arg(shared.join("bench/make-exchanges.py"))
        .arg(&file)
        .args(["--mix", "small", "--count", "20000"])
        .status()
        .expect("python3 runs make-exchanges.py");
    assert!(status.success());
    let ours = bin()
        .args(["classify", "--batch"])
        .arg(&file)
        .arg("--each")
        .output()
        .unwrap();
    assert!(
        ours.status.success(),
        "{}",
        String::from_utf8_lossy(&ours.stderr)
    );
    let seed = Command::new("node")
        .arg(shared.join("reference/classify-batch.mjs"))
        .arg(&file)
        .arg("--each")
        .output()
        .unwrap();
    assert!(
        seed.status.success(),
        "{}",
        String::from_utf8_lossy(&seed.stderr)
    );
    let outcome = |line: &str| -> String {
        let v: serde_json::Value = serde_json::from_str(line).unwrap();
        v["outcome"].as_str().unwrap().to_string()
    };
    let ours = String::from_utf8(ours.stdout).unwrap();
    let seed = String::from_utf8(seed.stdout).unwrap();
    let ours: Vec<String> = ours.lines().map(outcome).collect();
    let seed: Vec<String> = seed.lines().map(outcome).collect();
    assert_eq!(ours.len(), 20_000);
    assert_eq!(seed.len(), 20_000);
    let differing: Vec<String> = ours
        .iter()
        .zip(&seed)
        .enumerate()
        .filter(|(_, (a, b))| a != b)
        .take(10)
        .map(|(i, (a, b))| format!("line {}: ours {a}, seed {b}", i + 1))
        .collect();
    assert!(
        differing.is_empty(),
        "outcomes differ:\n{}",
        differing.join("\n")
    );
    std::fs::remove_dir_all(dir).unwrap();
}
