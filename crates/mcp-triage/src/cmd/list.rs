//! `mcp-triage list`: the server's tools, each as a signature from its `inputSchema` (so the
//! `--arg KEY=VALUE` of a first `call` can be written without `--format json`), its
//! annotations and its description.

use crate::exit::Exit;
use std::process::ExitCode;

use clap::Args;
use mcp_triage_client::{Client, ConnectError};
use serde_json::{json, Value};

use super::call::Format;
use super::client_args::{runtime, stderr_block, ArgsError, ConnArgs, LimitArgs, OAuthArgs};
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

pub fn run(args: ListArgs) -> Result<ExitCode, ArgsError> {
    let target = args.conn.target(args.url.as_deref())?;
    let opts = args.conn.options(&args.oauth, &args.limits)?;
    let rt = runtime()?;
    let result = rt.block_on(async {
        let client = Client::connect(target, opts).await?;
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
    match args.format {
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
