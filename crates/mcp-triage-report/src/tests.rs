//! Format tests over one sample report that has every status, evidence with characters
//! that need escaping, properties, a chart and a table.

use super::*;

fn sample() -> Report {
    Report {
        title: "mcp-triage judge".into(),
        started: Some("2026-12-02T13:00:00.000Z".into()),
        suites: vec![Suite {
            name: "bad-client".into(),
            duration_ms: Some(1500),
            properties: vec![("kitchen".into(), "http://127.0.0.1:1/".into())],
            cases: vec![
                Case {
                    properties: Vec::new(),
                    name: "errors.tool_error".into(),
                    duration_ms: Some(700),
                    output: "tool said <no> & \"stop\"".into(),
                    checks: vec![
                        Check::new(
                            "no_automatic_resend",
                            Status::Fail,
                            "tools/call sent 3 times with the same id",
                        )
                        .with_evidence([
                            r#"{"method":"tools/call","id":1,"status":200}"#,
                            "control \u{1} char",
                        ])
                        .with_references(["seed article: retries"]),
                        Check::new("headers_2026", Status::Skip, "legacy era: no 2026 headers"),
                    ],
                    journal: vec![],
                },
                Case {
                    properties: Vec::new(),
                    name: "baseline".into(),
                    duration_ms: None,
                    output: String::new(),
                    checks: vec![Check::new("completes", Status::Pass, "one tools/call")],
                    journal: vec![
                        serde_json::json!({"method": "tools/call", "id": 1, "status": 200, "tool": "a<b"}),
                    ],
                },
            ],
        }],
        charts: vec![Chart {
            title: "outcomes per minute".into(),
            categories: vec!["13:00".into(), "13:01".into()],
            series: vec![
                Series {
                    label: "TOOL_SUCCESS".into(),
                    values: vec![3.0, 1.0],
                    color: Some("#2da44e".into()),
                },
                Series {
                    label: "HTTP_ERROR".into(),
                    values: vec![0.0, 2.0],
                    color: Some("red\"><script>".into()),
                },
            ],
        }],
        tables: vec![Table {
            title: "latency".into(),
            columns: vec!["tool".into(), "p50".into()],
            rows: vec![vec!["echo".into(), "12 ms".into()]],
        }],
    }
}

fn render(f: Format) -> String {
    let mut out = Vec::new();
    f.write(&sample(), &mut out).unwrap();
    String::from_utf8(out).unwrap()
}

#[test]
fn counts_and_verdict() {
    let r = sample();
    assert_eq!(
        r.counts(),
        Counts {
            pass: 1,
            fail: 1,
            skip: 1
        }
    );
    assert!(!r.passed());
}

#[test]
fn matrix_columns_keep_each_case_order() {
    let case = |names: &[&str]| Case {
        properties: Vec::new(),
        name: "c".into(),
        checks: names
            .iter()
            .map(|n| Check::new(*n, Status::Pass, ""))
            .collect(),
        ..Case::default()
    };
    let s = Suite {
        name: "s".into(),
        cases: vec![
            case(&["called", "headers", "in_time"]),
            case(&["called", "a", "headers", "in_time"]),
            case(&["called", "b", "headers", "in_time", "output"]),
        ],
        ..Suite::default()
    };
    assert_eq!(
        s.check_names(),
        ["called", "a", "b", "headers", "in_time", "output"]
    );
}

#[test]
fn junit_snapshot() {
    insta::assert_snapshot!(render(Format::Junit));
}

#[test]
fn tap_snapshot() {
    insta::assert_snapshot!(render(Format::Tap));
}

#[test]
fn json_round_trips_the_model() {
    let text = render(Format::Json);
    let v: serde_json::Value = serde_json::from_str(&text).unwrap();
    assert_eq!(v["counts"]["fail"], 1);
    // The matrices say n/a; the JSON says the same, for the counts and for each check.
    assert_eq!(v["counts"]["n/a"], 1);
    assert!(v["counts"].get("skip").is_none());
    assert_eq!(v["suites"][0]["cases"][0]["checks"][1]["status"], "n/a");
    assert_eq!(v["suites"][0]["cases"][1]["journal"][0]["tool"], "a<b");
    assert_eq!(v["passed"], false);
    let back: Report = serde_json::from_value(v).unwrap();
    assert_eq!(back, sample());
}

#[test]
fn html_is_self_contained_and_escaped() {
    let h = render(Format::Html);
    assert!(!h.contains("<script"), "no scripts");
    assert!(!h.contains(" src="), "no external resources at all");
    assert!(h.contains(r#"<b id="count-fail">1</b>"#));
    assert!(h.contains(r#"<b id="count-total">3</b>"#));
    assert!(h.contains("tool said &lt;no&gt; &amp; \"stop\""));
    assert!(h.contains("<td class=\"fail\""));
    assert!(h.contains("<svg id=\"chart-0\""));
    assert!(h.contains("<title>13:01 HTTP_ERROR: 2</title>"));
    assert!(h.contains(r##"fill="#2da44e"><title>13:00 TOOL_SUCCESS"##));
    assert!(
        !h.contains("red\""),
        "a colour that is not plain stays out of the markup"
    );
    assert!(h.contains("<td>12 ms</td>"));
    // A passing case's journal is shown too.
    assert!(h.contains("<h3>baseline</h3>"));
    assert!(h.contains("<summary>journal (1 entries)</summary>"));
    assert!(h.contains("&quot;tool&quot;:&quot;a&lt;b&quot;") || h.contains("\"tool\":\"a&lt;b\""));
}

#[test]
fn report_target_parses_and_rejects() {
    let t: ReportTarget = "junit:out/r.xml".parse().unwrap();
    assert_eq!(t.format, Format::Junit);
    assert_eq!(t.path, std::path::PathBuf::from("out/r.xml"));
    assert_eq!(
        "HTML:-".parse::<ReportTarget>().unwrap().format,
        Format::Html
    );
    assert!("xml:r.xml"
        .parse::<ReportTarget>()
        .unwrap_err()
        .to_string()
        .contains("unknown report format"));
    assert!("junit"
        .parse::<ReportTarget>()
        .unwrap_err()
        .to_string()
        .contains("FORMAT:FILE"));
    assert!("junit:"
        .parse::<ReportTarget>()
        .unwrap_err()
        .to_string()
        .contains("names no file"));
}

#[test]
fn report_target_errors_are_typed() {
    let e = "xml:r.xml".parse::<ReportTarget>().unwrap_err();
    assert!(matches!(e, ReportTargetError::UnknownFormat(ref f) if f == "xml"));
    assert_eq!(
        e.to_string(),
        "unknown report format \"xml\" (junit, html, json or tap)"
    );
    let e = "junit".parse::<ReportTarget>().unwrap_err();
    assert!(matches!(e, ReportTargetError::NotFormatFile(_)));
    assert_eq!(
        e.to_string(),
        "\"junit\" is not FORMAT:FILE (e.g. junit:report.xml)"
    );
    let e = "junit:".parse::<ReportTarget>().unwrap_err();
    assert!(matches!(e, ReportTargetError::NoFile(_)));
    assert_eq!(
        e.to_string(),
        "\"junit:\" names no file (use FORMAT:- for stdout)"
    );
    let dir = std::env::temp_dir().join(format!("mcp-triage-report-w-{}", std::process::id()));
    let t = ReportTarget {
        format: Format::Tap,
        path: dir.join("missing-dir").join("r.tap"),
    };
    let e = write_all(&[t], &Report::default()).unwrap_err();
    assert!(matches!(
        e,
        WriteError {
            format: Format::Tap,
            ..
        }
    ));
    assert!(e.to_string().starts_with("cannot write the tap report: "));
}

#[test]
fn report_target_writes_a_file() {
    let dir = std::env::temp_dir().join(format!("mcp-triage-report-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("r.tap");
    let t = ReportTarget {
        format: Format::Tap,
        path: path.clone(),
    };
    t.write(&sample()).unwrap();
    let s = std::fs::read_to_string(&path).unwrap();
    assert!(s.starts_with("TAP version 14\n1..3\n"));
    std::fs::remove_dir_all(&dir).unwrap();
}
