//! `mcp-triage kitchen`: serve the fault-injection MCP server until Ctrl-C or SIGTERM.

use std::net::SocketAddr;
use std::process::ExitCode;

use clap::Args;
use mcp_triage_kitchen::{start, KitchenOptions, ResponseMode};

pub const EXAMPLES: &str = "\
Examples:
  mcp-triage kitchen                                  # 127.0.0.1:8765, scenario baseline
  mcp-triage kitchen --listen 127.0.0.1:0 --scenario errors.http_status_sequence \\
      --params '{\"statusCodes\":[503,200]}'
  curl -s http://127.0.0.1:8765/kitchen/scenarios     # the catalogue
  # per-URL instances with their own counters: http://127.0.0.1:8765/s/errors.tool_error/mcp

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
}

fn parse_params(s: &str) -> Result<serde_json::Value, String> {
    let v: serde_json::Value =
        serde_json::from_str(s).map_err(|e| format!("--params is not JSON: {e}"))?;
    if !v.is_object() {
        return Err("--params must be a JSON object".to_string());
    }
    Ok(v)
}

/// An empty token would make `Authorization: Bearer ` a credential, and white space at its ends
/// can never arrive (HTTP strips it): refuse both at once, naming the flag.
fn parse_admin_token(s: &str) -> Result<String, String> {
    if s.is_empty() {
        return Err("the admin token must not be empty".to_string());
    }
    if s.trim() != s {
        return Err("the admin token must not begin or end with white space (HTTP strips it from the Authorization header)".to_string());
    }
    Ok(s.to_string())
}

fn parse_mode(s: &str) -> Result<ResponseMode, String> {
    ResponseMode::parse(s).ok_or_else(|| format!("{s:?} is not auto, json or sse"))
}

pub fn run(args: KitchenArgs) -> Result<ExitCode, String> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|e| format!("cannot start the runtime: {e}"))?;
    runtime.block_on(async move {
        let options = KitchenOptions {
            admin_token: args.admin_token,
            scenario: args.scenario,
            params: args.params.unwrap_or_else(|| serde_json::json!({})),
            response_mode: args.response_mode,
            ..KitchenOptions::default()
        };
        let handle = start(args.listen, options)
            .await
            .map_err(|e| format!("kitchen: {e}"))?;
        println!("{}", handle.mcp_url());
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
