//! `mcp-triage judge`: grade any MCP client's error handling against the kitchen.
//!
//! The conformance suite tells whether a client speaks MCP; this tells whether it handles
//! failures well. Everything but the command line lives in the `mcp-triage-judge` crate (cases,
//! checks, the runner over the kitchen's typed journal); this module parses the arguments into
//! its [`JudgeOptions`] and turns the verdict into an exit code.

use std::io::IsTerminal;
use std::process::ExitCode;

use clap::Args;

use crate::exit::Exit;
use mcp_triage_judge::{JudgeError, JudgeOptions};
use mcp_triage_report::ReportTarget;

pub const EXAMPLES: &str = "\
Examples:
  mcp-triage judge --client 'node interop/judge/ts-sdk-client.mjs {url}'
  mcp-triage judge --client 'python3 client.py {url}' --scenario errors.tool_error \\
      --expect-output 'errors.tool_error=Tool-side failure' --report junit:judge.xml --report html:judge.html
  mcp-triage judge --list                              # the cases and their checks
  mcp-triage judge --hop 'mcp-triage proxy --listen {listen} --upstream {upstream}'
      # grade a hop: our client calls each case through it (docs/hops.md)
  mcp-triage judge --hop 'CMD' --list                   # the hop cases
  mcp-triage judge --client-stdio 'mcp-triage call --timeout 5 --stdio {server} \"$MCP_TRIAGE_TOOL\" --args \"$MCP_TRIAGE_ARGS\"'
      # grade a stdio host: it spawns the stdio kitchen {server} names (docs/commands/judge.md)
  mcp-triage judge --client 'python3 client.py {url}' --replay capture.jsonl
      # grade it on failures `proxy --capture capture.jsonl` recorded (one case per captured call)

The client runs once per case with MCP_TRIAGE_SCENARIO, MCP_TRIAGE_URL, MCP_TRIAGE_TOOL and
MCP_TRIAGE_ARGS (JSON) set and should make that one tool call, then exit 0 with its result or
non-zero with a stated failure. Exit 0 when every check passes, 1 when one fails, 2 on a usage
or startup error (also: the client command is not found or not executable, sh's 127/126).
With --client-stdio: the same exit codes, per stdio case (`--list` shows them).
With --hop: exit 0 when every case is kept, 1 when one is not (its grade, e.g. \"success
invented\", and the evidence are printed), 2 when the hop never listens.";

#[derive(Args)]
pub struct JudgeArgs {
    /// The client command, run with `sh -c`; `{url}` becomes the case's MCP URL (quoted).
    #[arg(long, value_name = "CMD", required_unless_present_any = ["list", "hop", "client_stdio"])]
    client: Option<String>,

    /// Judge a stdio client instead: CMD (run with `sh -c`) is a host that spawns the server
    /// `{server}` names (the stdio kitchen's command line for the case, one quoted word) and
    /// makes the one call of $MCP_TRIAGE_TOOL with $MCP_TRIAGE_ARGS.
    #[arg(long, value_name = "CMD", conflicts_with_all = ["client", "hop", "replay", "expect_output", "reports"])]
    client_stdio: Option<String>,

    /// Judge a hop (gateway, bridge, proxy) instead of a client: CMD is run with `sh -c`,
    /// `{upstream}` = the kitchen's base URL, `{listen}` = the 127.0.0.1:PORT it must listen
    /// on; our own client calls every case through it.
    #[arg(long, value_name = "CMD", conflicts_with_all = ["client", "replay", "expect_output"])]
    hop: Option<String>,

    /// With --hop: the hop forwards only this path (e.g. `/mcp`, to the kitchen's `/mcp`);
    /// the kitchen serves each case there in turn.
    #[arg(long, value_name = "PATH", requires = "hop", value_parser = parse_path)]
    hop_fixed_path: Option<String>,

    /// With --hop: the hop labels outcomes itself in the file `{labels}` names; whose lines
    /// they are (`mcp-triage-proxy`: `proxy --log {labels}`; `nginx-module`: our nginx
    /// module's JSON lines). Adds the *label right* column.
    #[arg(long, value_name = "KIND", requires = "hop", value_parser = parse_labels)]
    hop_labels: Option<mcp_triage_judge::hop::labels::LabelSource>,

    /// With --hop: seconds the hop may take to start listening.
    #[arg(long, value_name = "S", default_value = "15", requires = "hop", value_parser = parse_timeout)]
    hop_start_timeout: f64,

    /// Run only these cases (a case id, else a kitchen scenario id: every case run on it;
    /// repeatable). Default: all.
    #[arg(long = "scenario", value_name = "ID")]
    scenarios: Vec<String>,

    /// Seconds a client may run per case before the judge stops it (fails `in_time`); with
    /// --hop, each case's time limit (past it: *lost*).
    #[arg(long, value_name = "S", default_value = "20", value_parser = parse_timeout)]
    timeout: f64,

    /// Write a report: junit:FILE, html:FILE, json:FILE or tap:FILE (`-` = stdout; repeatable).
    #[arg(long = "report", value_name = "FORMAT:FILE")]
    reports: Vec<ReportTarget>,

    /// Add a check that the client's output (stdout+stderr) mentions TEXT, case-insensitively.
    #[arg(long = "expect-output", value_name = "ID=TEXT", value_parser = parse_expect)]
    expect_output: Vec<(String, String)>,

    /// Name of the judged client in the matrix and the reports (default: the command).
    #[arg(long, value_name = "NAME")]
    name: Option<String>,

    /// Grade the client on the exchanges of a capture file (`proxy --capture`) instead of the
    /// kitchen's scenarios: one case per captured tools/call (tool and arguments), served by
    /// `kitchen --replay`.
    #[arg(long, value_name = "FILE.jsonl")]
    replay: Option<std::path::PathBuf>,

    /// With --replay: divide the captured delays (response head, SSE chunks) by X.
    #[arg(long, value_name = "X", default_value = "1", requires = "replay", value_parser = mcp_triage_kitchen::replay::parse_speed)]
    replay_speed: f64,

    #[command(flatten)]
    replay_limits: super::replay_limits::ReplayLimitArgs,

    /// List the cases and their checks, then exit.
    #[arg(long)]
    list: bool,

    /// No progress line per case on stderr.
    #[arg(long, short)]
    quiet: bool,

    /// Colour the matrix: auto (a terminal without NO_COLOR), always or never.
    #[arg(long, value_name = "WHEN", default_value = "auto", value_parser = ["auto", "always", "never"])]
    color: String,
}

/// Whether to colour output: `always`, `never`, or `auto` = stdout is a terminal and
/// `NO_COLOR` is unset (https://no-color.org).
pub fn use_color(when: &str) -> bool {
    match when {
        "always" => true,
        "never" => false,
        _ => std::io::stdout().is_terminal() && std::env::var_os("NO_COLOR").is_none(),
    }
}

/// A value of `judge`'s options that cannot be used.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ValueError {
    /// `--timeout` out of range or not a number.
    #[error("{0:?} is not a number of seconds in (0, 3600]")]
    Timeout(String),
    /// `--expect-output` not of the form `ID=TEXT`.
    #[error("{0:?} is not ID=TEXT")]
    Expect(String),
    /// `--hop-labels` names no adapter.
    #[error("{0:?} is no label adapter; there are: mcp-triage-proxy, nginx-module")]
    Labels(String),
    /// `--hop-fixed-path` is not an absolute path.
    #[error("{0:?} is not a path starting with / (no scheme, host, spaces or '#')")]
    Path(String),
}

fn parse_labels(s: &str) -> Result<mcp_triage_judge::hop::labels::LabelSource, ValueError> {
    mcp_triage_judge::hop::labels::LabelSource::parse(s)
        .ok_or_else(|| ValueError::Labels(s.to_string()))
}

fn parse_path(s: &str) -> Result<String, ValueError> {
    if s.starts_with('/') && !s.contains(|c: char| c.is_whitespace() || c == '#') {
        Ok(s.to_string())
    } else {
        Err(ValueError::Path(s.to_string()))
    }
}

fn parse_timeout(s: &str) -> Result<f64, ValueError> {
    match s.parse::<f64>() {
        Ok(v) if v > 0.0 && v <= 3600.0 => Ok(v),
        _ => Err(ValueError::Timeout(s.to_string())),
    }
}

fn parse_expect(s: &str) -> Result<(String, String), ValueError> {
    match s.split_once('=') {
        Some((id, text)) if !id.is_empty() && !text.is_empty() => {
            Ok((id.to_string(), text.to_string()))
        }
        _ => Err(ValueError::Expect(s.to_string())),
    }
}

impl From<JudgeArgs> for JudgeOptions {
    fn from(a: JudgeArgs) -> JudgeOptions {
        JudgeOptions {
            color: use_color(&a.color),
            client: a.client,
            scenarios: a.scenarios,
            timeout: a.timeout,
            reports: a.reports,
            expect_output: a.expect_output,
            name: a.name,
            replay: a.replay,
            replay_speed: a.replay_speed,
            replay_limits: a.replay_limits.limits(true),
            list: a.list,
            quiet: a.quiet,
            client_stdio: a.client_stdio.map(|command| {
                mcp_triage_judge::stdio::StdioClientOptions {
                    command,
                    server_exe: std::env::current_exe().unwrap_or_else(|_| "mcp-triage".into()),
                }
            }),
            hop: a.hop.map(|command| mcp_triage_judge::hop::HopOptions {
                command,
                fixed_path: a.hop_fixed_path,
                start_timeout: std::time::Duration::from_secs_f64(a.hop_start_timeout),
                labels: a.hop_labels,
            }),
        }
    }
}

/// Exit 0 when every check passed (or the cases were listed), 1 when one failed; a usage or
/// startup error is the caller's exit 2. Takes the judge crate's own options, which
/// `From<JudgeArgs>` resolves once (the crate checks what needs the files or the client).
pub fn run(options: JudgeOptions) -> Result<ExitCode, JudgeError> {
    let passed = mcp_triage_judge::run(&options)?;
    Ok(if passed {
        ExitCode::SUCCESS
    } else {
        Exit::Failed.into()
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cmd::args_testing::try_parse;

    #[test]
    fn arguments_become_the_judges_options() {
        let argv = [
            "judge",
            "--client",
            "node client.js",
            "--scenario",
            "errors.tool_error",
            "--timeout",
            "5",
            "--expect-output",
            "a=b",
            "--color",
            "always",
            "-q",
        ];
        let o: JudgeOptions = try_parse::<JudgeArgs, _, _>(argv).unwrap().into();
        assert_eq!(o.client.as_deref(), Some("node client.js"));
        assert_eq!(o.scenarios, ["errors.tool_error"]);
        assert_eq!(o.timeout, 5.0);
        assert_eq!(o.expect_output, [("a".to_string(), "b".to_string())]);
        assert!(o.color && o.quiet && !o.list);
        assert_eq!(o.replay, None);
    }

    #[test]
    fn a_client_or_list_is_required_and_replay_flags_need_replay() {
        assert!(try_parse::<JudgeArgs, _, _>(["judge"]).is_err());
        assert!(try_parse::<JudgeArgs, _, _>(["judge", "--list", "--replay-speed", "2"]).is_err());
        let o: JudgeOptions = try_parse::<JudgeArgs, _, _>(["judge", "--list", "--color", "never"])
            .unwrap()
            .into();
        assert!(o.list && !o.color && o.client.is_none());
    }

    #[test]
    fn hop_options_parse_and_exclude_a_client() {
        let o: JudgeOptions = try_parse::<JudgeArgs, _, _>([
            "judge",
            "--hop",
            "hop {listen} {upstream}",
            "--hop-fixed-path",
            "/mcp",
            "--hop-start-timeout",
            "3",
            "--hop-labels",
            "mcp-triage-proxy",
        ])
        .unwrap()
        .into();
        let h = o.hop.expect("hop options");
        assert_eq!(h.command, "hop {listen} {upstream}");
        assert_eq!(h.fixed_path.as_deref(), Some("/mcp"));
        assert_eq!(h.start_timeout, std::time::Duration::from_secs(3));
        assert_eq!(
            h.labels,
            Some(mcp_triage_judge::hop::labels::LabelSource::McpTriageProxy)
        );
        assert!(o.client.is_none());
        assert!(try_parse::<JudgeArgs, _, _>(["judge", "--hop", "h", "--client", "c"]).is_err());
        assert!(
            try_parse::<JudgeArgs, _, _>(["judge", "--hop", "h", "--hop-labels", "envoy"]).is_err()
        );
        assert!(
            try_parse::<JudgeArgs, _, _>(["judge", "--hop-fixed-path", "/mcp", "--list"]).is_err()
        );
        assert!(
            try_parse::<JudgeArgs, _, _>(["judge", "--hop", "h", "--hop-fixed-path", "mcp"])
                .is_err()
        );
    }

    #[test]
    fn client_stdio_parses_and_excludes_the_other_modes() {
        let o: JudgeOptions =
            try_parse::<JudgeArgs, _, _>(["judge", "--client-stdio", "host {server}"])
                .unwrap()
                .into();
        let s = o.client_stdio.expect("stdio options");
        assert_eq!(s.command, "host {server}");
        assert!(o.client.is_none() && o.hop.is_none());
        for other in [["--client", "c"], ["--hop", "h"], ["--report", "json:x"]] {
            let argv = ["judge", "--client-stdio", "h {server}", other[0], other[1]];
            assert!(try_parse::<JudgeArgs, _, _>(argv).is_err(), "{other:?}");
        }
    }

    #[test]
    fn timeout_and_expect_parse() {
        assert!(parse_timeout("0").is_err());
        assert!(parse_expect("x").is_err());
        assert_eq!(
            parse_expect("a=b=c").unwrap(),
            ("a".to_string(), "b=c".to_string())
        );
    }
}
