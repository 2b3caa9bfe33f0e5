//! The C ABI seen from C: `tests/c/golden.c`, `tests/c/misuse.c` and `tests/c/request.c` are
//! compiled with `cc`
//! against the checked-in header and the crate's cdylib, then run (and run again under
//! valgrind). golden.c classifies every golden vector of the core whole (`mcpt_classify`) and in
//! 7-byte chunks (new + feed + finish); each verdict JSON must be the CLI's byte for byte
//! (`mcp-triage classify --batch FILE --each --format json --now 0`), and the accessors must
//! agree with it. The CLI's verdicts are computed in process by the code the CLI's batch mode
//! runs (`Exchange::parse`, `Exchange::context`, `Exchange::classify`); with `MCPT_CLI=path`
//! the real binary's output is also compared (scripts/test.sh does so).
//!
//! Every golden vector is also sent compressed (gzip, br and zstd, compressed here, with that
//! `Content-Encoding` header) through the same program, whole and in 7-byte chunks: the C ABI
//! must give exactly the plain body's verdict.
//!
//! Needs `cc` (else the test fails: it is the point of the test); valgrind is skipped with a
//! message when missing, unless `MCPT_REQUIRE_VALGRIND=1` (CI).

use std::borrow::Cow;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::SystemTime;

use mcp_triage_core::exchange::Exchange;
use mcp_triage_core::retry::{self, Delivery, RetryInput, RetryOptions, ToolHints};
use mcp_triage_core::{CallContext, RequestId, Verdict};

const CRATE: &str = env!("CARGO_MANIFEST_DIR");

fn golden_files() -> Vec<PathBuf> {
    let dir = Path::new(CRATE).join("../mcp-triage-core/tests/golden");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "jsonl"))
        .collect();
    files.sort();
    assert!(
        files.len() >= 10,
        "golden files missing in {}",
        dir.display()
    );
    files
}

/// The directory holding `libmcp_triage_ffi.so`: cargo builds every crate type of the library
/// for the tests, next to the test binary (`target/<profile>/deps`).
fn lib_dir() -> PathBuf {
    let exe = std::env::current_exe().unwrap();
    let deps = exe.parent().unwrap();
    for d in [deps, deps.parent().unwrap()] {
        if d.join("libmcp_triage_ffi.so").exists() {
            return d.to_path_buf();
        }
    }
    panic!("libmcp_triage_ffi.so not found next to {}", exe.display());
}

fn compile(source: &str, out: &Path) {
    compile_path(&Path::new(CRATE).join("tests/c").join(source), out);
}

fn compile_path(source: &Path, out: &Path) {
    let cc = std::env::var("CC").unwrap_or_else(|_| "cc".into());
    let lib = lib_dir();
    let status = Command::new(&cc)
        .args([
            "-std=c99",
            "-D_POSIX_C_SOURCE=200809L",
            "-Wall",
            "-Wextra",
            "-Werror",
            "-g",
        ])
        .arg(format!("-I{CRATE}/include"))
        .arg(source)
        .arg("-o")
        .arg(out)
        .arg(format!("-L{}", lib.display()))
        .arg(format!("-Wl,-rpath,{}", lib.display()))
        .args(["-lmcp_triage_ffi", "-lpthread"])
        .status()
        .unwrap_or_else(|e| panic!("cannot run the C compiler {cc:?} (set CC): {e}"));
    assert!(
        status.success(),
        "{cc} {} failed: {status}",
        source.display()
    );
}

/// One golden case: the flattened bytes golden.c reads, and the verdict the CLI gives.
struct Case {
    name: String,
    fixture: Vec<u8>,
    body_len: usize,
    verdict: Verdict,
    json: String,
}

/// The largest body run under valgrind (see the test).
const VALGRIND_MAX_BODY: usize = 16 << 10;

fn flatten(x: &Exchange, raw: &serde_json::Value, now_ms: i64) -> Vec<u8> {
    let (kind, num, text) = match &x.expected_id {
        RequestId::Number(n) => (0, *n, ""),
        RequestId::String(s) => (1, 0, s.as_str()),
    };
    let version = x.protocol_version.map_or("", |v| v.as_str());
    let schema = raw
        .get("outputSchema")
        .map_or(String::new(), |s| s.to_string());
    let method = x.method.as_deref().unwrap_or("");
    let mut f = format!(
        "case {} {} {kind} {num} {} {} {now_ms} {} {} {}\n",
        x.head.status,
        x.head.headers.len(),
        text.len(),
        version.len(),
        schema.len(),
        method.len(),
        x.body.len()
    )
    .into_bytes();
    for (n, v) in &x.head.headers {
        f.extend(format!("{} {}\n", n.len(), v.len()).bytes());
        f.extend(n.bytes().chain(v.bytes()));
    }
    for part in [
        text.as_bytes(),
        version.as_bytes(),
        schema.as_bytes(),
        method.as_bytes(),
        &x.body,
    ] {
        f.extend_from_slice(part);
    }
    f.push(b'\n');
    f
}

fn cases(file: &Path) -> Vec<Case> {
    let base = CallContext::new(RequestId::Number(1)).with_now(SystemTime::UNIX_EPOCH);
    let text = std::fs::read(file).unwrap();
    let mut out = Vec::new();
    for line in text.split(|&b| b == b'\n') {
        if line.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        let raw: serde_json::Value = serde_json::from_slice(line).unwrap();
        let x = Exchange::parse(line).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
        assert!(x.end.is_none(), "golden lines are whole bodies");
        let ctx = x.context(&base);
        let now_ms = ctx
            .now
            .duration_since(SystemTime::UNIX_EPOCH)
            .unwrap()
            .as_millis();
        let verdict = x.classify(&ctx);
        out.push(Case {
            name: format!(
                "{}:{}",
                file.file_name().unwrap().to_string_lossy(),
                raw["name"]
            ),
            fixture: flatten(&x, &raw, now_ms as i64),
            body_len: x.body.len(),
            json: serde_json::to_string(&verdict).unwrap(),
            verdict,
        });
    }
    out
}

/// A compressor of the coded golden cases.
type Compress = fn(&[u8]) -> Vec<u8>;

const CODINGS: [(&str, Compress); 3] = [
    ("gzip", |b| {
        let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
        e.write_all(b).unwrap();
        e.finish().unwrap()
    }),
    ("br", |b| {
        let mut out = Vec::new();
        {
            let mut w = brotli::CompressorWriter::new(&mut out, 4096, 5, 22);
            w.write_all(b).unwrap();
        }
        out
    }),
    ("zstd", |b| zstd::encode_all(b, 3).unwrap()),
];

/// The golden cases of `file` that carry no coding of their own, each compressed with every
/// coding of [`CODINGS`]: the fixture sends the compressed body with its `Content-Encoding`,
/// and the verdict expected is the plain body's.
fn coded_cases(file: &Path) -> Vec<Case> {
    let base = CallContext::new(RequestId::Number(1)).with_now(SystemTime::UNIX_EPOCH);
    let text = std::fs::read(file).unwrap();
    let mut out = Vec::new();
    for line in text.split(|&b| b == b'\n') {
        if line.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        let raw: serde_json::Value = serde_json::from_slice(line).unwrap();
        let x = Exchange::parse(line).unwrap();
        if raw.get("method").is_some() || x.head.get("Content-Encoding").is_some() {
            continue;
        }
        let ctx = x.context(&base);
        let now_ms = ctx
            .now
            .duration_since(SystemTime::UNIX_EPOCH)
            .unwrap()
            .as_millis() as i64;
        let verdict = x.classify(&ctx);
        for (coding, compress) in CODINGS {
            let coded = Exchange {
                head: x.head.clone().header("Content-Encoding", coding),
                body: Cow::Owned(compress(&x.body)),
                expected_id: x.expected_id.clone(),
                protocol_version: x.protocol_version,
                output_schema: x.output_schema.clone(),
                now: x.now,
                end: None,
                request_kind: x.request_kind,
                method: x.method.clone(),
                captured: x.captured,
            };
            out.push(Case {
                name: format!(
                    "{}:{} {coding}",
                    file.file_name().unwrap().to_string_lossy(),
                    raw["name"]
                ),
                fixture: flatten(&coded, &raw, now_ms),
                body_len: coded.body.len(),
                json: serde_json::to_string(&verdict).unwrap(),
                verdict: verdict.clone(),
            });
        }
    }
    out
}

/// The real CLI's verdict lines for a golden file, when `MCPT_CLI` names the binary.
fn cli_lines(file: &Path) -> Option<Vec<String>> {
    let cli = std::env::var_os("MCPT_CLI")?;
    let out = Command::new(&cli)
        .args(["classify", "--batch"])
        .arg(file)
        .args(["--each", "--format", "json", "--now", "0"])
        .output()
        .unwrap_or_else(|e| panic!("MCPT_CLI {cli:?}: {e}"));
    assert!(
        out.status.success(),
        "MCPT_CLI {cli:?} on {}: {}",
        file.display(),
        out.status
    );
    // With --each the standard output holds the verdicts only, one a line.
    let text = String::from_utf8(out.stdout).unwrap();
    Some(text.lines().map(str::to_string).collect())
}

/// What golden.c must print for a verdict: accessors, the retry action, the JSON.
fn expected_line(c: &Case) -> String {
    let v = &c.verdict;
    let code = v.code.map_or("-".to_string(), |c| c.to_string());
    let retry_after = v
        .retry_after_ms
        .map_or("-".to_string(), |ms| ms.to_string());
    let input = RetryInput {
        verdict: v,
        tool: "",
        hints: ToolHints {
            read_only: Some(true),
            ..ToolHints::default()
        },
        delivery: Delivery::Sent,
        resends: 0,
        resumes: 0,
        local_server: true,
        legacy_session: false,
        legacy_stream: false,
        reinitialized: false,
        relisted: false,
        // this caller does not read -32022 refusals: the policy never resends for one
        revision_offered: None,
        revision_resent: false,
        // nor answers input or drives tasks: input_required and task_created are `done`
        input_rounds: None,
        drives_tasks: false,
    };
    let action = retry::decide(&input, &RetryOptions::default(), &mut || 0.0).action;
    format!(
        "{}\t{}\t{}\t{code}\t{retry_after}\t{}\t{}",
        v.layer.as_str(),
        v.outcome.as_str(),
        v.status.map_or(0, i32::from),
        action.as_str(),
        c.json
    )
}

fn run(prog: &Path, args: &[&str], valgrind: bool) -> String {
    let mut cmd = if valgrind {
        let mut c = Command::new("valgrind");
        c.args(["-q", "--leak-check=full", "--error-exitcode=99"])
            .arg(prog);
        c
    } else {
        Command::new(prog)
    };
    let out = cmd.args(args).output().unwrap();
    assert!(
        out.status.success(),
        "{} {args:?} (valgrind: {valgrind}) exited {}:\n{}",
        prog.display(),
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

fn valgrind_available() -> bool {
    let ok = Command::new("valgrind")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    if !ok {
        assert!(
            std::env::var_os("MCPT_REQUIRE_VALGRIND").is_none_or(|v| v != "1"),
            "valgrind is missing and MCPT_REQUIRE_VALGRIND=1"
        );
        eprintln!("SKIPPED: valgrind is not installed; the C programs ran without it");
    }
    ok
}

fn compare(got: &str, cases: &[Case], want: &[String], how: &str) {
    compare_refs(got, &cases.iter().collect::<Vec<_>>(), want, how);
}

fn compare_refs(got: &str, cases: &[&Case], want: &[String], how: &str) {
    let got: Vec<&str> = got.lines().collect();
    assert_eq!(got.len(), cases.len(), "{how}: one line per case");
    for ((g, c), w) in got.iter().zip(cases).zip(want) {
        assert_eq!(g, w, "{how}: {}", c.name);
    }
}

#[test]
fn golden_vectors_through_c_give_the_clis_verdicts() {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("c_abi");
    std::fs::create_dir_all(&dir).unwrap();
    let prog = dir.join("golden");
    compile("golden.c", &prog);
    let mut all = Vec::new();
    for file in golden_files() {
        let cases = cases(&file);
        if let Some(lines) = cli_lines(&file) {
            let mine: Vec<&str> = cases.iter().map(|c| c.json.as_str()).collect();
            assert_eq!(mine, lines, "{}: the CLI's verdicts", file.display());
        }
        all.extend(cases);
    }
    let fixture = dir.join("golden.stream");
    std::fs::write(
        &fixture,
        all.iter()
            .flat_map(|c| c.fixture.clone())
            .collect::<Vec<u8>>(),
    )
    .unwrap();
    let want: Vec<String> = all.iter().map(expected_line).collect();
    let f = fixture.to_str().unwrap();
    compare(&run(&prog, &[f, "0"], false), &all, &want, "whole");
    compare(&run(&prog, &[f, "7"], false), &all, &want, "7-byte chunks");
    if valgrind_available() {
        // Under valgrind, the bodies up to 16 KiB: the few big ones (100,000-digit numbers,
        // 10,000-deep nesting) take a minute there and cross the boundary like the others.
        let (small, small_want): (Vec<&Case>, Vec<&String>) = all
            .iter()
            .zip(&want)
            .filter(|(c, _)| c.body_len <= VALGRIND_MAX_BODY)
            .unzip();
        let small_fixture = dir.join("golden-small.stream");
        std::fs::write(
            &small_fixture,
            small
                .iter()
                .flat_map(|c| c.fixture.clone())
                .collect::<Vec<u8>>(),
        )
        .unwrap();
        let f = small_fixture.to_str().unwrap();
        let small_want: Vec<String> = small_want.into_iter().cloned().collect();
        for chunk in ["0", "7"] {
            let got = run(&prog, &[f, chunk], true);
            compare_refs(
                &got,
                &small,
                &small_want,
                &format!("valgrind, chunk {chunk}"),
            );
        }
        eprintln!("{} of them under valgrind", small.len());
    }
    eprintln!("{} golden cases through the C ABI", all.len());
}

#[test]
fn compressed_golden_vectors_through_c_give_the_plain_verdicts() {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("c_abi");
    std::fs::create_dir_all(&dir).unwrap();
    let prog = dir.join("golden-coded");
    compile("golden.c", &prog);
    let all: Vec<Case> = golden_files().iter().flat_map(|f| coded_cases(f)).collect();
    assert!(all.len() > 900, "only {} coded cases", all.len());
    let fixture = dir.join("golden-coded.stream");
    std::fs::write(
        &fixture,
        all.iter()
            .flat_map(|c| c.fixture.clone())
            .collect::<Vec<u8>>(),
    )
    .unwrap();
    let want: Vec<String> = all.iter().map(expected_line).collect();
    let f = fixture.to_str().unwrap();
    compare(&run(&prog, &[f, "0"], false), &all, &want, "coded, whole");
    compare(
        &run(&prog, &[f, "7"], false),
        &all,
        &want,
        "coded, 7-byte chunks",
    );
    if valgrind_available() {
        // the decoders' memory under valgrind too: the small bodies, in 7-byte chunks
        let (small, small_want): (Vec<&Case>, Vec<String>) = all
            .iter()
            .zip(&want)
            .filter(|(c, _)| c.body_len <= VALGRIND_MAX_BODY / 4)
            .map(|(c, w)| (c, w.clone()))
            .unzip();
        let small_fixture = dir.join("golden-coded-small.stream");
        std::fs::write(
            &small_fixture,
            small
                .iter()
                .flat_map(|c| c.fixture.clone())
                .collect::<Vec<u8>>(),
        )
        .unwrap();
        let got = run(&prog, &[small_fixture.to_str().unwrap(), "7"], true);
        compare_refs(&got, &small, &small_want, "coded, valgrind, chunk 7");
    }
    eprintln!("{} compressed golden cases through the C ABI", all.len());
}

#[test]
fn misuse_gives_the_documented_codes() {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("c_abi");
    std::fs::create_dir_all(&dir).unwrap();
    let prog = dir.join("misuse");
    compile("misuse.c", &prog);
    let out = run(&prog, &[], false);
    assert!(out.contains("checks passed"), "{out}");
    if valgrind_available() {
        let out = run(&prog, &[], true);
        assert!(out.contains("checks passed"), "{out}");
    }
}

/// The example of README.md is a complete program: it compiles against the header, runs clean
/// under valgrind, and prints what the README says with the core's verdict JSON.
#[test]
fn the_readme_example_runs() {
    let readme = std::fs::read_to_string(Path::new(CRATE).join("README.md")).unwrap();
    let start = readme.find("```c\n").expect("README.md has a ```c block") + 5;
    let len = readme[start..].find("\n```").expect("the ```c block ends");
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("c_abi");
    std::fs::create_dir_all(&dir).unwrap();
    let source = dir.join("readme.c");
    std::fs::write(&source, format!("{}\n", &readme[start..start + len])).unwrap();
    let prog = dir.join("readme");
    compile_path(&source, &prog);

    let body = br#"{"jsonrpc":"2.0","id":7,"result":{"content":[],"isError":true}}"#;
    let mut head = mcp_triage_core::ResponseHead::new(200);
    head.headers
        .push(("content-type".into(), "application/json".into()));
    let ctx = CallContext::new(RequestId::Number(7))
        .with_protocol_version(mcp_triage_core::ProtocolVersion::parse("2025-06-18").unwrap())
        .with_now(SystemTime::UNIX_EPOCH);
    let verdict = mcp_triage_core::classify(&head, body, &ctx);
    let want = format!(
        "application TOOL_ERROR\n{}\n",
        serde_json::to_string(&verdict).unwrap()
    );
    assert!(
        readme.contains("It prints `application TOOL_ERROR` and the verdict JSON."),
        "the README says what the example prints"
    );
    assert_eq!(run(&prog, &[], false), want);
    if valgrind_available() {
        assert_eq!(run(&prog, &[], true), want);
    }
}

/// The gateway's calls (request parse, expected id, record line) from C: request.c checks the
/// codes itself and prints the JSON line of one exchange, which must be the line below with the
/// core's verdict, and valid JSON.
#[test]
fn a_gateway_exchange_through_c_writes_its_line() {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("c_abi");
    std::fs::create_dir_all(&dir).unwrap();
    let prog = dir.join("request");
    compile("request.c", &prog);
    let resp = r#"{"jsonrpc":"2.0","id":"req-\u00e9/1","result":{"content":[]}}"#;
    let body = r#"{"jsonrpc":"2.0","id":"req-\u00e9/1","method":"tools/call","params":{"name":"echo","arguments":{"text":"hi"}}}"#;
    let mut head = mcp_triage_core::ResponseHead::new(200);
    head.headers
        .push(("content-type".into(), "application/json".into()));
    let ctx = CallContext::new(RequestId::String("req-é/1".into()))
        .with_protocol_version(mcp_triage_core::ProtocolVersion::parse("2025-06-18").unwrap())
        .with_now(SystemTime::UNIX_EPOCH);
    let verdict = mcp_triage_core::classify(&head, resp.as_bytes(), &ctx);
    let line = format!(
        concat!(
            r#"{{"recordId":"rid-1","time":"2000-02-29T00:00:00.500Z","durationMs":40.000,"#,
            r#""kind":"request","transport":"http","httpMethod":"POST","path":"/mcp?q=\"x\"","#,
            r#""method":"tools/call","id":"req-é/1","tool":"echo","sessionId":"s�","#,
            r#""protocolVersion":"2025-06-18","httpStatuses":[200],"outcome":"TOOL_SUCCESS","#,
            r#""layer":"application","classified":true,"verdict":{},"requestBytes":{},"#,
            r#""responseBytes":{}}}"#
        ),
        serde_json::to_string(&verdict).unwrap(),
        body.len(),
        resp.len()
    );
    serde_json::from_str::<serde_json::Value>(&line).expect("the line is JSON");
    for valgrind in [false, true] {
        if valgrind && !valgrind_available() {
            continue;
        }
        let out = run(&prog, &[], valgrind);
        let mut lines = out.lines();
        assert_eq!(lines.next(), Some(line.as_str()), "valgrind: {valgrind}");
        assert!(
            lines.next().is_some_and(|l| l.ends_with("checks passed")),
            "{out}"
        );
    }
}
