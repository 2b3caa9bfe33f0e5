//! `mcp-triage list`: the server's tools, each as a signature from its `inputSchema` (so the
//! `--arg KEY=VALUE` of a first `call` can be written without `--format json`), its
//! annotations and its description.

use crate::exit::Exit;
use std::process::ExitCode;

use clap::Args;
use mcp_triage_client::{Client, ClientOptions, ConnectError, Target};
use serde_json::{json, Value};

use super::client_args::{runtime, stderr_block, ArgsError, ConnArgs, LimitArgs, OAuthArgs};
use super::format::Format;
use super::signature::signature;

pub const EXAMPLES: &str = "\
Examples:
  mcp-triage list http://127.0.0.1:8765/mcp
  mcp-triage list --stdio 'npx -y @modelcontextprotocol/server-everything'
  mcp-triage list --config ~/.cursor/mcp.json --server github --format json";

/// `list` connects and lists; it calls no tool, so it takes no retry or input-round options.
#[derive(Args, Debug)]
pub struct ListArgs {
    /// The server URL (left out with --stdio or --config).
    #[arg(value_name = "URL")]
    pub url: Option<String>,

    #[command(flatten)]
    pub conn: ConnArgs,

    /// Output format: text (a signature a line), or json (protocol, server and the raw tool
    /// definitions).
    #[arg(long, value_enum, default_value = "text", help_heading = "Output")]
    pub format: Format,

    #[command(flatten)]
    pub oauth: OAuthArgs,

    #[command(flatten)]
    pub limits: LimitArgs,
}

/// `list`'s arguments resolved once: where the server is and the client's options, checked
/// before anything is started or connected to.
#[derive(Debug)]
pub struct ListConfig {
    /// The server.
    pub target: Target,
    /// Connection, OAuth and limits; the retry and input-round options at their defaults,
    /// since `list` calls no tool.
    pub client: ClientOptions,
    /// `--format`.
    pub format: Format,
}

/// Checks `list`'s arguments: the target (a URL, `--stdio` or `--config`, exactly one), then
/// the client options.
pub fn config(args: ListArgs) -> Result<ListConfig, ArgsError> {
    Ok(ListConfig {
        target: args.conn.target(args.url.as_deref())?,
        client: args.conn.options(&args.oauth, &args.limits)?,
        format: args.format,
    })
}

pub fn run(config: ListConfig) -> Result<ExitCode, ArgsError> {
    let rt = runtime()?;
    let result = rt.block_on(async {
        let client = Client::connect(config.target, config.client).await?;
        let tools = client.list_tools().await;
        let version = client.protocol_version().await;
        let info = client.server_info().await;
        let stderr = match tools {
            Ok(_) => Vec::new(),
            Err(_) => client.server_stderr_tail().await,
        };
        client.close().await;
        Ok::<_, ConnectError>((tools, version, info, stderr))
    });
    let (tools, version, info, stderr) = match result {
        Ok(x) => x,
        Err(e) => {
            eprintln!("mcp-triage: {e}");
            return Ok(Exit::Transport.into());
        }
    };
    let tools = match tools {
        Ok(t) => t,
        Err(e) => {
            eprint!("mcp-triage: {e}\n{}", stderr_block(&stderr));
            return Ok(Exit::Transport.into());
        }
    };
    match config.format {
        Format::Json => {
            let doc = json!({
                "protocolVersion": version,
                "serverInfo": info,
                "tools": tools.iter().map(|t| t.definition.clone()).collect::<Vec<Value>>(),
            });
            outln!("{doc}");
        }
        Format::Text => {
            let name = info.map(|i| format!("{} {}", i.name, i.version.unwrap_or_default()));
            outln!(
                "{} tool(s), {version}{}",
                tools.len(),
                name.map(|n| format!(", {n}")).unwrap_or_default()
            );
            for t in &tools {
                outln!(
                    "  {}{}",
                    signature(&t.name, &t.definition["inputSchema"]),
                    flags(t)
                );
                if let Some(d) = t.description.as_deref().filter(|d| !d.is_empty()) {
                    outln!("      {d}");
                }
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// ` [read-only, idempotent, key→Mcp-Param-Key, outputSchema]`: what the retry policy and a
/// 2026-07-28 call make of the tool, or nothing when none applies.
fn flags(t: &mcp_triage_client::ToolInfo) -> String {
    let mut flags = Vec::new();
    if let Some(a) = &t.annotations {
        for (key, label) in [
            ("readOnlyHint", "read-only"),
            ("idempotentHint", "idempotent"),
            ("destructiveHint", "destructive"),
            ("openWorldHint", "open-world"),
        ] {
            if a.get(key).and_then(Value::as_bool) == Some(true) {
                flags.push(label.to_string());
            }
        }
    }
    for (arg, h) in &t.header_params {
        flags.push(format!("{arg}→Mcp-Param-{h}"));
    }
    if t.output_schema.is_some() {
        flags.push("outputSchema".into());
    }
    if flags.is_empty() {
        String::new()
    } else {
        format!(" [{}]", flags.join(", "))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cmd::args_testing::parsed;
    use std::time::Duration;

    fn config_of(argv: &[&str]) -> Result<ListConfig, ArgsError> {
        config(parsed(argv))
    }

    #[test]
    fn a_url_becomes_the_target_and_the_flags_the_options() {
        let c = config_of(&[
            "http://127.0.0.1:9/mcp",
            "--header",
            "X-A: 1",
            "--timeout",
            "2.5",
            "--format",
            "json",
        ])
        .unwrap();
        let Target::Http { url, headers } = &c.target else {
            panic!("an HTTP target expected: {:?}", c.target);
        };
        assert_eq!(url, "http://127.0.0.1:9/mcp");
        assert!(headers.contains(&("X-A".to_string(), "1".to_string())));
        assert_eq!(c.client.timeout, Duration::from_millis(2500));
        assert_eq!(c.format, Format::Json);
    }

    #[test]
    fn one_target_exactly() {
        let e = config_of(&[]).unwrap_err();
        assert!(matches!(e, ArgsError::NoTarget), "{e}");
        let e = config_of(&["http://x/mcp", "--stdio", "server"]).unwrap_err();
        assert!(matches!(e, ArgsError::TwoTargets), "{e}");
        let e = config_of(&["--stdio", "server", "--header", "X-A: 1"]).unwrap_err();
        assert!(matches!(e, ArgsError::HeaderNotHttp), "{e}");
    }
}
