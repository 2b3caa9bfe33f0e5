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
