//! `mcp-triage kitchen`: serve the fault-injection MCP server until Ctrl-C or SIGTERM.

use std::net::SocketAddr;
use std::process::ExitCode;

use clap::Args;
use std::path::PathBuf;

use mcp_triage_kitchen::replay::{
    start_replay, Capture, CaptureError, CaptureLimits, Replay, ReplayOptions,
};
use mcp_triage_kitchen::{start, KitchenError, KitchenOptions, ResponseMode};

pub const EXAMPLES: &str = "\
Examples:
  mcp-triage kitchen                                  # 127.0.0.1:8765, scenario baseline
  mcp-triage kitchen --listen 127.0.0.1:0 --scenario errors.http_status_sequence \\
      --params '{\"statusCodes\":[503,200]}'
  curl -s http://127.0.0.1:8765/kitchen/scenarios     # the catalogue
  # per-URL instances with their own counters: http://127.0.0.1:8765/s/errors.tool_error/mcp
  mcp-triage kitchen --listen 127.0.0.1:0 --replay capture.jsonl --replay-speed 2
      # serve what `proxy --capture capture.jsonl` recorded (docs/capture-format.md)
  mcp-triage kitchen --stdio --scenario stdio.exit_mid_call --journal j.jsonl
      # MCP over stdin/stdout; `stdio.*` faults (crates/mcp-triage-kitchen/README.md)

The first line on stdout is the MCP URL. A non-loopback --listen needs --admin-token.";

#[derive(Args)]
pub struct KitchenArgs {
    /// Address to listen on (port 0 picks a free port).
    #[arg(long, value_name = "ADDR", default_value = "127.0.0.1:8765")]
    listen: SocketAddr,

    /// Scenario served on /mcp until PUT /kitchen/selection changes it.
    #[arg(long, value_name = "ID", default_value = "baseline")]
    scenario: String,

    /// The scenario's parameters, a JSON object.
    #[arg(long, value_name = "JSON", value_parser = parse_params)]
    params: Option<serde_json::Value>,

    /// Bearer token for /kitchen/* (required to listen beyond loopback; not empty).
    #[arg(
        long,
        value_name = "T",
        env = "MCP_TRIAGE_KITCHEN_TOKEN",
        hide_env_values = true,
        value_parser = parse_admin_token
    )]
    admin_token: Option<String>,

    /// How responses are sent unless a scenario says otherwise: auto, json or sse.
    #[arg(long, value_name = "MODE", default_value = "auto", value_parser = parse_mode)]
    response_mode: ResponseMode,

    /// The journal's bound in bytes (JSON Lines); past it the oldest entries are dropped and
    /// counted (the `X-Kitchen-Journal-Dropped` header of `GET /kitchen/journal`).
    #[arg(long, value_name = "BYTES", default_value_t = mcp_triage_kitchen::journal::DEFAULT_MAX_BYTES)]
    journal_max_bytes: usize,

    /// The longest string (a header value, say) kept in one journal entry; longer ones are
    /// cut with a "…[truncated N bytes]" marker.
    #[arg(long, value_name = "BYTES", default_value_t = mcp_triage_kitchen::journal::DEFAULT_MAX_FIELD_BYTES)]
    journal_max_field: usize,

    /// Idempotency keys remembered at once (scenarios with idempotencyKeys "honour"), by all
    /// instances together; past it the oldest is forgotten.
    #[arg(long, value_name = "N", default_value_t = mcp_triage_kitchen::idempotency::DEFAULT_MAX_KEYS)]
    idempotency_max_keys: usize,

    /// Bytes of idempotency keys and stored results kept at once, by all instances together;
    /// past it the oldest are forgotten (keys over 256 bytes are refused with -32602).
    #[arg(long, value_name = "BYTES", default_value_t = mcp_triage_kitchen::idempotency::DEFAULT_MAX_BYTES)]
    idempotency_max_bytes: usize,

    /// Serve the exchanges of a capture file (`proxy --capture`) instead of a scenario.
    #[arg(long, value_name = "FILE.jsonl", conflicts_with_all = ["scenario", "params"])]
    replay: Option<std::path::PathBuf>,

    /// With --replay: divide the captured delays (response head, SSE chunks) by X.
    #[arg(long, value_name = "X", default_value = "1", requires = "replay", value_parser = mcp_triage_kitchen::replay::parse_speed)]
    replay_speed: f64,

    #[command(flatten)]
    replay_limits: super::replay_limits::ReplayLimitArgs,

    /// Speak MCP over stdin/stdout (newline-delimited JSON-RPC, logs on stderr) instead of
    /// HTTP: the scenarios that make sense on stdio and stdio's own faults (`stdio.*`).
    #[arg(long, conflicts_with_all = ["replay", "listen", "admin_token"])]
    stdio: bool,

    /// With --stdio: append the journal here, one JSON line per record, flushed per line.
    #[arg(long, value_name = "FILE", requires = "stdio")]
    journal: Option<PathBuf>,
}

/// A value of `kitchen`'s options that cannot be used.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ValueError {
    /// `--params` is not JSON.
    #[error("--params is not JSON: {0}")]
    ParamsNotJson(#[source] serde_json::Error),
    /// `--params` is JSON but not an object.
    #[error("--params must be a JSON object")]
    ParamsNotObject,
    /// An empty admin token.
    #[error("the admin token must not be empty")]
    EmptyAdminToken,
    /// An admin token with white space at an end.
    #[error("the admin token must not begin or end with white space (HTTP strips it from the Authorization header)")]
    AdminTokenSpace,
    /// A response mode that is none of them.
    #[error("{0:?} is not auto, json or sse")]
    ResponseMode(String),
}

/// Why the kitchen did not serve.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum RunError {
    /// The tokio runtime did not start.
    #[error("cannot start the runtime: {0}")]
    Runtime(#[source] std::io::Error),
    /// The `--replay` capture cannot be read.
    #[error("kitchen --replay {}: {source}", path.display())]
    Capture {
        /// The capture file.
        path: PathBuf,
        /// Why.
        source: CaptureError,
    },
    /// The capture cannot be replayed with these options.
    #[error("kitchen: {0}")]
    Replay(#[source] CaptureError),
    /// The server did not start.
    #[error("kitchen: {0}")]
    Start(#[source] KitchenError),
    /// `--stdio` did not serve.
    #[error("{0}")]
    Stdio(#[source] mcp_triage_kitchen::stdio::StdioError),
}

fn parse_params(s: &str) -> Result<serde_json::Value, ValueError> {
    let v: serde_json::Value = serde_json::from_str(s).map_err(ValueError::ParamsNotJson)?;
    if !v.is_object() {
        return Err(ValueError::ParamsNotObject);
    }
    Ok(v)
}

/// An empty token would make `Authorization: Bearer ` a credential, and white space at its ends
/// can never arrive (HTTP strips it): refuse both at once, naming the flag.
fn parse_admin_token(s: &str) -> Result<String, ValueError> {
    if s.is_empty() {
        return Err(ValueError::EmptyAdminToken);
    }
    if s.trim() != s {
        return Err(ValueError::AdminTokenSpace);
    }
    Ok(s.to_string())
}

fn parse_mode(s: &str) -> Result<ResponseMode, ValueError> {
    ResponseMode::parse(s).ok_or_else(|| ValueError::ResponseMode(s.to_string()))
}

/// `kitchen`'s arguments resolved once into what the kitchen crate takes: its own
/// [`KitchenOptions`], and for `--replay` the capture's [`CaptureLimits`] and
/// [`ReplayOptions`]. Every value was checked by its parser already (clap refuses the
/// combinations: `--replay` with `--scenario`, a `--replay-*` without `--replay`), so this
/// cannot fail; the capture file is read when serving starts, as before.
#[derive(Debug)]
pub struct KitchenConfig {
    /// Where to listen.
    pub listen: SocketAddr,
    /// `--stdio`: serve on stdin/stdout instead (the scenario, its params, the journal file).
    pub stdio: Option<mcp_triage_kitchen::stdio::StdioOptions>,
    /// The server's options.
    pub options: KitchenOptions,
    /// `--replay`: the capture to serve instead of a scenario.
    pub replay: Option<ReplayConfig>,
}

/// `--replay FILE` and the options that go with it.
#[derive(Debug)]
pub struct ReplayConfig {
    /// The capture file (`proxy --capture`).
    pub path: PathBuf,
    /// What the file may hold.
    pub limits: CaptureLimits,
    /// How it is replayed.
    pub options: ReplayOptions,
}

impl From<KitchenArgs> for KitchenConfig {
    fn from(args: KitchenArgs) -> KitchenConfig {
        let stdio = args.stdio.then(|| mcp_triage_kitchen::stdio::StdioOptions {
            scenario: args.scenario.clone(),
            params: args.params.clone().unwrap_or_else(|| serde_json::json!({})),
            journal: args.journal.clone(),
        });
        let options = KitchenOptions {
            admin_token: args.admin_token,
            scenario: args.scenario,
            params: args.params.unwrap_or_else(|| serde_json::json!({})),
            response_mode: args.response_mode,
            journal_max_bytes: args.journal_max_bytes,
            journal_max_field_bytes: args.journal_max_field,
            idempotency_max_keys: args.idempotency_max_keys,
            idempotency_max_bytes: args.idempotency_max_bytes,
            ..KitchenOptions::default()
        };
        let replay = args.replay.map(|path| ReplayConfig {
            path,
            // the kitchen only serves: the line texts and request trees are the judge's
            limits: args.replay_limits.limits(false),
            options: ReplayOptions {
                speed: args.replay_speed,
            },
        });
        KitchenConfig {
            listen: args.listen,
            stdio,
            options,
            replay,
        }
    }
}

pub fn run(config: KitchenConfig) -> Result<ExitCode, RunError> {
    let KitchenConfig {
        listen,
        stdio,
        options,
        replay,
    } = config;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(RunError::Runtime)?;
    if let Some(stdio) = stdio {
        runtime
            .block_on(mcp_triage_kitchen::stdio::serve(stdio))
            .map_err(RunError::Stdio)?;
        // stdin closed: nothing may wait on a blocked stdout or stderr write.
        runtime.shutdown_timeout(std::time::Duration::from_millis(200));
        return Ok(ExitCode::SUCCESS);
    }
    runtime.block_on(async move {
        let mut replay_path = None;
        let handle = match replay {
            None => start(listen, options).await,
            Some(ReplayConfig {
                path,
                limits,
                options: replay_options,
            }) => {
                let capture =
                    Capture::read_with(&path, &limits).map_err(|source| RunError::Capture {
                        path: path.clone(),
                        source,
                    })?;
                let n = capture.exchanges.len();
                replay_path = Some(capture.mcp_path());
                let replay = Replay::new(capture, replay_options).map_err(RunError::Replay)?;
                eprintln!(
                    "kitchen: replaying {n} captured exchanges of {}",
                    path.display()
                );
                start_replay(listen, options, replay).await
            }
        }
        .map_err(RunError::Start)?;
        // A replay serves every path; the capture's MCP path is the one its clients used.
        match &replay_path {
            Some(p) => println!("{}{p}", handle.base_url()),
            None => println!("{}", handle.mcp_url()),
        }
        eprintln!(
            "kitchen: serving on {} (admin API {}/kitchen/scenarios); Ctrl-C stops it",
            handle.local_addr(),
            handle.base_url()
        );
        shutdown_signal().await;
        handle.shutdown().await;
        Ok(ExitCode::SUCCESS)
    })
}

async fn shutdown_signal() {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{signal, SignalKind};
        let mut term = signal(SignalKind::terminate()).expect("SIGTERM handler");
        tokio::select! {
            _ = tokio::signal::ctrl_c() => {}
            _ = term.recv() => {}
        }
    }
    #[cfg(not(unix))]
    {
        let _ = tokio::signal::ctrl_c().await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cmd::args_testing::{parsed, try_parse};

    fn config(argv: &[&str]) -> KitchenConfig {
        parsed::<KitchenArgs>(argv).into()
    }

    #[test]
    fn defaults_become_the_kitchens_options() {
        let c = config(&[]);
        assert_eq!(c.listen, "127.0.0.1:8765".parse().unwrap());
        assert_eq!(c.options.scenario, "baseline");
        assert_eq!(c.options.params, serde_json::json!({}));
        assert_eq!(c.options.admin_token, None);
        assert_eq!(
            c.options.journal_max_bytes,
            mcp_triage_kitchen::journal::DEFAULT_MAX_BYTES
        );
        assert_eq!(
            c.options.idempotency_max_bytes,
            mcp_triage_kitchen::idempotency::DEFAULT_MAX_BYTES
        );
        assert!(c.replay.is_none());
    }

    #[test]
    fn flags_land_in_the_kitchens_options() {
        let c = config(&[
            "--listen",
            "127.0.0.1:0",
            "--scenario",
            "errors.tool_error",
            "--params",
            r#"{"n":2}"#,
            "--admin-token",
            "t0k",
            "--response-mode",
            "sse",
            "--journal-max-field",
            "99",
            "--idempotency-max-keys",
            "12",
            "--idempotency-max-bytes",
            "4096",
        ]);
        assert_eq!(c.listen.port(), 0);
        assert_eq!(c.options.scenario, "errors.tool_error");
        assert_eq!(c.options.params, serde_json::json!({"n": 2}));
        assert_eq!(c.options.admin_token.as_deref(), Some("t0k"));
        assert_eq!(c.options.response_mode, ResponseMode::Sse);
        assert_eq!(c.options.journal_max_field_bytes, 99);
        assert_eq!(
            (
                c.options.idempotency_max_keys,
                c.options.idempotency_max_bytes
            ),
            (12, 4096)
        );
    }

    #[test]
    fn replay_flags_become_capture_limits_and_speed() {
        let c = config(&[
            "--replay",
            "cap.jsonl",
            "--replay-speed",
            "2",
            "--replay-max-lines",
            "7",
            "--replay-max-delay",
            "1500ms",
        ]);
        let r = c.replay.expect("--replay");
        assert_eq!(r.path, PathBuf::from("cap.jsonl"));
        assert_eq!(r.options.speed, 2.0);
        assert_eq!(r.limits.max_lines, 7);
        assert_eq!(r.limits.max_delay_ms, 1500.0);
        assert_eq!(
            r.limits.max_chunks,
            mcp_triage_kitchen::replay::DEFAULT_MAX_CHUNKS
        );
    }

    #[test]
    fn bad_values_are_refused_by_their_parsers() {
        for argv in [
            &["--params", "[1]"][..],
            &["--admin-token", " t"],
            &["--response-mode", "xml"],
            &["--replay-speed", "2"],
            &["--replay", "c.jsonl", "--scenario", "baseline"],
        ] {
            let argv = std::iter::once("kitchen").chain(argv.iter().copied());
            assert!(try_parse::<KitchenArgs, _, _>(argv).is_err());
        }
    }
}
