//! `call`'s arguments resolved once (the "high" arguments): the [`Target`], the client's
//! [`ClientOptions`], this call's [`CallOptions`] and its arguments as JSON, each checked
//! here, so a usage error is named before any server is started or connected to.

use std::path::PathBuf;
use std::time::Duration;

use mcp_triage_client::arg_text::typed_arguments;
use mcp_triage_client::{CallOptions, ClientOptions, Interrupt, RetryOrigin, Target};
use serde_json::Value;

use super::args::CallArgs;
use crate::cmd::client_args::ArgsError;
use crate::cmd::format::Format;

/// Everything `call` needs to connect, call and print.
#[derive(Debug)]
pub struct CallConfig {
    /// The server.
    pub target: Target,
    /// The tool's name.
    pub tool: String,
    /// `--args` or the `--arg`s, a JSON object (each `--arg` read JSON-first: what is sent
    /// when no `tools/list` says more).
    pub arguments: Value,
    /// The `--arg`s as typed, KEY and VALUE text, in order (empty with `--args`): once
    /// `tools/list` gives the tool's inputSchema, each VALUE is read as its property asks.
    pub arg_pairs: Vec<(String, String)>,
    /// Connection, input rounds, retries, OAuth, limits, tasks, what the record keeps.
    pub client: ClientOptions,
    /// `--retry-of` and `--idempotency-key`, and Ctrl-C's [`Interrupt`].
    pub call: CallOptions,
    /// Ctrl-C: the call watches it (to cancel a task it created), and the exit status reads it.
    pub interrupt: Interrupt,
    /// `--allow-invalid-tool`.
    pub allow_invalid_tool: bool,
    /// `--send-invalid-args`.
    pub send_invalid_args: bool,
    /// `--log`: the JSON Lines file the record is appended to.
    pub log: Option<PathBuf>,
    /// `--format`.
    pub format: Format,
}

/// Why `call`'s arguments cannot be used.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ConfigError {
    /// The connection, client or input options cannot be used.
    #[error(transparent)]
    Args(#[from] ArgsError),
    /// `--args` is not JSON.
    #[error("--args is not JSON: {0}")]
    ArgsNotJson(#[source] serde_json::Error),
    /// `--args` is JSON but not an object.
    #[error("--args must be a JSON object")]
    ArgsNotObject,
    /// An `--arg` without `=`.
    #[error("--arg {0:?} is not KEY=VALUE")]
    Arg(String),
    /// A URL positional besides --stdio or --config.
    #[error("with --stdio or --config give only the TOOL")]
    OnlyTheTool,
    /// Not a URL and a tool.
    #[error("give the URL and the TOOL (or --stdio/--config and the TOOL)")]
    UrlAndTool,
    /// `--task-timeout` out of range.
    #[error("--task-timeout must be a positive number of seconds below a day")]
    TaskTimeout,
    /// `--max-task-attempts` below 2.
    #[error("--max-task-attempts must be at least 2")]
    MaxTaskAttempts,
    /// `--progress-max-wait` out of range.
    #[error("--progress-max-wait must be a number of seconds from 0 to a day")]
    ProgressMaxWait,
}

/// Checks `call`'s arguments in the order the command always checked them (the positionals,
/// the target, the client options, the arguments) and resolves them.
pub fn config(args: CallArgs) -> Result<CallConfig, ConfigError> {
    let (url, tool) = url_and_tool(&args)?;
    let target = args.conn.target(url.as_deref())?;
    let client = client_options(&args)?;
    let arg_pairs = arg_pairs(&args)?;
    let arguments = arguments(&args, &arg_pairs)?;
    let interrupt = Interrupt::new();
    let call = CallOptions {
        retry_origin: if args.retry_of.is_some() {
            RetryOrigin::Manual
        } else {
            RetryOrigin::None
        },
        retry_of: args.retry_of,
        idempotency_key: args.idempotency_key,
        interrupt: Some(interrupt.clone()),
        ..CallOptions::default()
    };
    Ok(CallConfig {
        target,
        tool,
        arguments,
        arg_pairs,
        client,
        call,
        interrupt,
        allow_invalid_tool: args.allow_invalid_tool,
        send_invalid_args: args.send_invalid_args,
        log: args.log,
        format: args.format,
    })
}

/// The positional arguments: `URL TOOL`, or only `TOOL` when a target flag (`--stdio`,
/// `--config`) names the server; any other count is a usage error.
fn url_and_tool(args: &CallArgs) -> Result<(Option<String>, String), ConfigError> {
    match (args.conn.has_target_flag(), args.positional.as_slice()) {
        (true, [tool]) => Ok((None, tool.clone())),
        (false, [url, tool]) => Ok((Some(url.clone()), tool.clone())),
        (true, _) => Err(ConfigError::OnlyTheTool),
        (false, _) => Err(ConfigError::UrlAndTool),
    }
}

/// The `--arg KEY=VALUE`s split at their first `=`; one without `=` is a usage error.
fn arg_pairs(args: &CallArgs) -> Result<Vec<(String, String)>, ConfigError> {
    args.arg
        .iter()
        .map(|a| {
            a.split_once('=')
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .ok_or_else(|| ConfigError::Arg(a.clone()))
        })
        .collect()
}

/// `--args JSON` (an object), or the `--arg KEY=VALUE`s, each VALUE JSON when it parses
/// (the reading without a schema; `call` retypes them by the listed inputSchema).
fn arguments(args: &CallArgs, pairs: &[(String, String)]) -> Result<Value, ConfigError> {
    if let Some(text) = &args.args {
        let v: Value = serde_json::from_str(text).map_err(ConfigError::ArgsNotJson)?;
        if !v.is_object() {
            return Err(ConfigError::ArgsNotObject);
        }
        return Ok(v);
    }
    Ok(typed_arguments(None, pairs))
}

/// The client options `call`'s flags set: connection, input, retries, tasks, logging.
fn client_options(args: &CallArgs) -> Result<ClientOptions, ConfigError> {
    let mut opts = args.conn.options(&args.oauth, &args.limits)?;
    args.input.apply(&mut opts)?;
    args.retry.apply(&mut opts)?;
    opts.use_tasks = args.task;
    opts.task_timeout = match args.task_timeout {
        Some(s) if s.is_finite() && s > 0.0 && s < 86_400.0 => Some(Duration::from_secs_f64(s)),
        Some(_) => return Err(ConfigError::TaskTimeout),
        None => None,
    };
    if args.max_task_attempts < 2 {
        return Err(ConfigError::MaxTaskAttempts);
    }
    opts.progress_max_wait = match args.progress_max_wait {
        s if s.is_finite() && (0.0..=86_400.0).contains(&s) => Duration::from_secs_f64(s),
        _ => return Err(ConfigError::ProgressMaxWait),
    };
    opts.max_task_attempts = args.max_task_attempts;
    opts.scenario = args.scenario.clone();
    opts.list_tools_first = !args.no_list;
    opts.log_arguments = args.log_arguments;
    opts.keep_result = args.log_result;
    opts.drafts = args.draft;
    Ok(opts)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cmd::args_testing::parsed;
    use serde_json::json;

    fn config_of(argv: &[&str]) -> Result<CallConfig, ConfigError> {
        config(parsed(argv))
    }

    #[test]
    fn a_url_call_becomes_target_tool_arguments_and_options() {
        let c = config_of(&[
            "http://127.0.0.1:9/mcp",
            "set_value",
            "--arg",
            "key=a",
            "--arg",
            "value=3",
            "--task",
            "--task-timeout",
            "5",
            "--no-list",
            "--retry-of",
            "rec-1",
            "--idempotency-key",
            "k1",
            "--format",
            "json",
            "--log",
            "calls.jsonl",
            "--no-prompt",
        ])
        .unwrap();
        assert_eq!(c.target, Target::url("http://127.0.0.1:9/mcp").unwrap());
        assert_eq!(c.tool, "set_value");
        assert_eq!(c.arguments, json!({"key": "a", "value": 3}));
        assert_eq!(
            c.arg_pairs,
            [("key".into(), "a".into()), ("value".into(), "3".into())]
        );
        assert!(c.client.use_tasks);
        assert_eq!(c.client.task_timeout, Some(Duration::from_secs(5)));
        assert!(!c.client.list_tools_first);
        assert_eq!(c.client.max_task_attempts, 64);
        assert_eq!(c.call.retry_origin, RetryOrigin::Manual);
        assert_eq!(c.call.retry_of.as_deref(), Some("rec-1"));
        assert_eq!(c.call.idempotency_key.as_deref(), Some("k1"));
        assert!(c.call.interrupt.is_some());
        assert_eq!(c.format, Format::Json);
        assert_eq!(c.log, Some(PathBuf::from("calls.jsonl")));
        assert!(!c.allow_invalid_tool && !c.send_invalid_args);
        assert!(!c.client.drafts.any());
    }

    #[test]
    fn draft_switches_reach_the_classifier() {
        let c = config_of(&["http://x/mcp", "t", "--draft", "tool-failure"]).unwrap();
        assert!(c.client.drafts.tool_failure && !c.client.drafts.sep_2145);
        let c = config_of(&["http://x/mcp", "t", "--draft", "tool-failure,sep-2145"]).unwrap();
        assert_eq!(c.client.drafts, mcp_triage_core::Drafts::ALL);
    }

    #[test]
    fn with_stdio_only_the_tool_is_given() {
        let c = config_of(&["--stdio", "server --flag", "echo", "--args", r#"{"m":1}"#]).unwrap();
        assert_eq!(c.tool, "echo");
        assert_eq!(c.arguments, json!({"m": 1}));
        assert_eq!(c.call.retry_origin, RetryOrigin::None);
        let e = config_of(&["--stdio", "server", "http://x/mcp", "echo"]).unwrap_err();
        assert!(matches!(e, ConfigError::OnlyTheTool), "{e}");
    }

    #[test]
    fn bad_combinations_and_values_name_their_option() {
        let e = config_of(&["echo"]).unwrap_err();
        assert!(matches!(e, ConfigError::UrlAndTool), "{e}");
        let e = config_of(&["http://x/mcp", "t", "--args", "[1]"]).unwrap_err();
        assert!(matches!(e, ConfigError::ArgsNotObject), "{e}");
        let e = config_of(&["http://x/mcp", "t", "--args", "{"]).unwrap_err();
        assert!(matches!(e, ConfigError::ArgsNotJson(_)), "{e}");
        let e = config_of(&["http://x/mcp", "t", "--arg", "novalue"]).unwrap_err();
        assert!(
            matches!(e, ConfigError::Arg(ref a) if a == "novalue"),
            "{e}"
        );
        let e = config_of(&["http://x/mcp", "t", "--task-timeout", "0"]).unwrap_err();
        assert!(matches!(e, ConfigError::TaskTimeout), "{e}");
        let e = config_of(&["http://x/mcp", "t", "--max-task-attempts", "1"]).unwrap_err();
        assert!(matches!(e, ConfigError::MaxTaskAttempts), "{e}");
        for bad in ["1e9", "NaN", "inf"] {
            let e = config_of(&["http://x/mcp", "t", "--progress-max-wait", bad]).unwrap_err();
            assert!(matches!(e, ConfigError::ProgressMaxWait), "{bad}: {e}");
        }
        let c = config_of(&["http://x/mcp", "t", "--progress-max-wait", "0"]).unwrap();
        assert!(c.client.progress_max_wait.is_zero());
        let e = config_of(&["http://x/mcp", "t", "--timeout", "0"]).unwrap_err();
        assert!(
            matches!(e, ConfigError::Args(ArgsError::Seconds("timeout"))),
            "{e}"
        );
    }
}
