//! The everyday surface: completions and man pages come from the CLI definition, and every
//! command's `--help` ends with examples.

use std::process::{Command, Output};

fn run(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_mcp-triage"))
        .args(args)
        .output()
        .unwrap()
}

#[test]
fn completions_for_each_shell_name_the_commands() {
    for (shell, marker) in [
        ("bash", "_mcp__triage()"),
        ("zsh", "#compdef mcp-triage"),
        ("fish", "complete -c mcp-triage"),
    ] {
        let o = run(&["completions", shell]);
        assert!(o.status.success(), "{shell}");
        let text = String::from_utf8_lossy(&o.stdout);
        assert!(text.contains(marker), "{shell}: {marker}");
        assert!(text.contains("judge") && text.contains("report"), "{shell}");
    }
    assert_eq!(run(&["completions", "tcsh"]).status.code(), Some(2));
}

#[test]
fn man_pages_cover_every_command() {
    let o = run(&["man"]);
    assert!(o.status.success());
    assert!(String::from_utf8_lossy(&o.stdout).contains(".TH mcp-triage 1"));
    let dir = std::env::temp_dir().join(format!("mcp-triage-man-{}", std::process::id()));
    let o = run(&["man", "--dir", dir.to_str().unwrap()]);
    assert!(o.status.success());
    for page in ["mcp-triage.1", "mcp-triage-judge.1", "mcp-triage-report.1"] {
        let text = std::fs::read_to_string(dir.join(page)).unwrap();
        assert!(text.contains(".SH OPTIONS"), "{page}");
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn every_command_help_has_examples() {
    for cmd in [
        "classify",
        "kitchen",
        "judge",
        "report",
        "completions",
        "man",
        "udf clickhouse",
    ] {
        let mut args: Vec<&str> = cmd.split(' ').collect();
        args.push("--help");
        let o = run(&args);
        assert!(o.status.success(), "{cmd}");
        assert!(
            String::from_utf8_lossy(&o.stdout).contains("Examples:"),
            "{cmd} --help has examples"
        );
    }
}

/// Runs `mcp-triage ARGS` that must exit at once; a kitchen that started serving instead is
/// killed after 10 s and reported, so the test fails rather than hangs.
fn run_expecting_exit(args: &[&str], token_env: Option<&str>) -> Output {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_mcp-triage"));
    cmd.args(args)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    match token_env {
        Some(t) => cmd.env("MCP_TRIAGE_KITCHEN_TOKEN", t),
        None => cmd.env_remove("MCP_TRIAGE_KITCHEN_TOKEN"),
    };
    let mut child = cmd.spawn().unwrap();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while child.try_wait().unwrap().is_none() {
        if std::time::Instant::now() > deadline {
            child.kill().unwrap();
            let out = child.wait_with_output().unwrap();
            panic!(
                "{args:?} kept running (it started serving): {}",
                String::from_utf8_lossy(&out.stdout)
            );
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    child.wait_with_output().unwrap()
}

/// Issue 15 item 7: an empty (or white-space-padded) admin token is a usage error naming the
/// flag, not a kitchen whose admin API accepts `Authorization: Bearer `. Exits before binding.
#[test]
fn kitchen_refuses_an_empty_admin_token() {
    let cases: [(&[&str], Option<&str>); 4] = [
        (
            &["kitchen", "--listen", "127.0.0.1:0", "--admin-token", ""],
            None,
        ),
        (
            &["kitchen", "--listen", "127.0.0.1:0", "--admin-token="],
            None,
        ),
        (
            &[
                "kitchen",
                "--listen",
                "127.0.0.1:0",
                "--admin-token",
                " s3cret",
            ],
            None,
        ),
        (&["kitchen", "--listen", "127.0.0.1:0"], Some("")),
    ];
    for (args, env) in cases {
        let out = run_expecting_exit(args, env);
        assert_eq!(out.status.code(), Some(2), "{args:?} {env:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            err.contains("--admin-token") && err.contains("admin token must not"),
            "{args:?} {env:?}: {err}"
        );
        assert!(out.stdout.is_empty(), "{args:?}: it must not start serving");
    }
}

/// The option headings of a command's `--help`, in order, each with the long flags under it.
fn help_sections(cmd: &str) -> Vec<(String, Vec<String>)> {
    let o = run(&[cmd, "--help"]);
    assert!(o.status.success(), "{cmd} --help");
    let mut sections: Vec<(String, Vec<String>)> = Vec::new();
    for line in String::from_utf8_lossy(&o.stdout).lines() {
        if let Some(heading) = line.strip_suffix(':').filter(|h| !h.starts_with(' ')) {
            sections.push((heading.to_string(), Vec::new()));
            continue;
        }
        let item = line.trim_start();
        let item = item.strip_prefix("-h, ").unwrap_or(item);
        if let (Some(flag), Some(last)) = (
            item.strip_prefix("--")
                .and_then(|f| f.split([' ', '<']).next()),
            sections.last_mut(),
        ) {
            last.1.push(format!("--{flag}"));
        }
    }
    sections
}

fn flags_of(sections: &[(String, Vec<String>)]) -> Vec<&str> {
    sections
        .iter()
        .flat_map(|(_, f)| f.iter().map(String::as_str))
        .collect()
}

/// Issue 24 item 4: `--help` shows what a first call needs first, under headings, and each
/// client command offers only the options it reads: `list` calls no tool, so it has no retry
/// policy, input rounds or call options; `call` keeps every flag it had.
#[test]
fn client_help_is_grouped_and_offers_only_what_the_command_uses() {
    let list = help_sections("list");
    let headings: Vec<&str> = list.iter().map(|(h, _)| h.as_str()).collect();
    assert_eq!(
        headings,
        [
            "Arguments",
            "Options",
            "Connection",
            "Output",
            "OAuth",
            "Limits",
            "Examples"
        ]
    );
    let flags = flags_of(&list);
    for gone in [
        "--max-retries",
        "--safe-tool",
        "--trust-annotations",
        "--answer",
        "--max-rounds",
        "--root",
        "--task",
        "--no-list",
        "--scenario",
    ] {
        assert!(!flags.contains(&gone), "list --help offers {gone}");
    }
    for kept in ["--stdio", "--config", "--bearer", "--header", "--format"] {
        assert!(flags.contains(&kept), "list --help lacks {kept}");
    }
    assert!(flags.len() < 30, "list offers {} options", flags.len());
    // Passing a retry option to list is now a usage error, not a silently ignored flag.
    let o = run(&["list", "http://127.0.0.1:9/mcp", "--max-retries", "0"]);
    assert_eq!(o.status.code(), Some(2));

    let call = help_sections("call");
    let headings: Vec<&str> = call.iter().map(|(h, _)| h.as_str()).collect();
    assert_eq!(
        headings,
        [
            "Arguments",
            "Options",
            "Connection",
            "Arguments and output",
            "Input rounds",
            "Retry policy",
            "OAuth",
            "Limits",
            "Examples"
        ]
    );
    let section = |name: &str| -> &Vec<String> { &call.iter().find(|(h, _)| h == name).unwrap().1 };
    assert_eq!(section("Connection")[0], "--stdio");
    assert!(section("Arguments and output").contains(&"--arg".to_string()));
    assert!(section("Retry policy").contains(&"--max-retries".to_string()));
    assert!(section("Input rounds").contains(&"--answer".to_string()));
    // Every flag `call` had before the split is still there.
    let flags = flags_of(&call);
    for f in [
        "--stdio",
        "--config",
        "--server",
        "--protocol-version",
        "--bearer",
        "--header",
        "--timeout",
        "--max-retries",
        "--max-wait",
        "--backoff-ms",
        "--trust-annotations",
        "--distrust-annotations",
        "--safe-tool",
        "--answer",
        "--input",
        "--accept-defaults",
        "--no-prompt",
        "--task",
        "--max-rounds",
        "--root",
        "--scenario",
        "--no-list",
        "--max-body-bytes",
        "--oauth",
        "--no-oauth",
        "--client-id",
        "--client-secret-env",
        "--client-key-file",
        "--client-metadata-url",
        "--grant",
        "--authorize",
        "--no-browser",
        "--redirect-port",
        "--authorize-timeout",
        "--max-authorizations",
        "--token-store",
        "--no-token-store",
        "--args",
        "--arg",
        "--format",
        "--log",
        "--log-arguments",
        "--log-result",
        "--idempotency-key",
        "--retry-of",
        "--allow-invalid-tool",
    ] {
        assert!(flags.contains(&f), "call --help lacks {f}");
    }

    // probe calls read-only tools, so it keeps the retry and input options, but not call's.
    let probe = help_sections("probe");
    let probe = flags_of(&probe);
    for kept in [
        "--call-read-only",
        "--task",
        "--answer",
        "--max-retries",
        "--report",
    ] {
        assert!(probe.contains(&kept), "probe --help lacks {kept}");
    }
    for gone in ["--arg", "--log", "--no-list", "--scenario"] {
        assert!(!probe.contains(&gone), "probe --help offers {gone}");
    }
}

/// Issue 46 item 6: `proxy -h` was one list of 53 lines with `--threads` and `--spin-us`
/// paragraphs before `--log`. It is grouped by what an option is for, what a first run needs
/// first and the tuning last.
#[test]
fn proxy_help_is_grouped_with_the_tuning_last() {
    let sections = help_sections("proxy");
    let headings: Vec<&str> = sections.iter().map(|(h, _)| h.as_str()).collect();
    assert_eq!(
        headings,
        [
            "Options",
            "Listening and upstream",
            "Host and Origin checks",
            "Limits",
            "Records",
            "OpenTelemetry",
            "Live view and metrics",
            "Capture",
            "Forwarding threads",
            "Examples"
        ]
    );
    let under = |h: &str| &sections.iter().find(|(s, _)| s == h).unwrap().1;
    assert_eq!(
        under("Listening and upstream")[..2],
        ["--listen", "--upstream"]
    );
    assert!(under("Records").contains(&"--log".to_string()));
    assert_eq!(under("Forwarding threads"), &["--threads", "--spin-us"]);
    let wrap = help_sections("wrap");
    assert!(wrap
        .iter()
        .any(|(h, f)| h == "Records" && f.contains(&"--log".to_string())));
}
