//! Start a kitchen and print its MCP URL on stdout (first line), then serve until Ctrl-C.
//!
//! `cargo run -p mcp-triage-kitchen --example serve -- --listen 127.0.0.1:0 [--scenario ID]
//! [--params JSON] [--admin-token T] [--response-mode auto|json|sse] [--max-instances N]`
//!
//! Used by `interop/conformance-server.sh` until the `mcp-triage kitchen` subcommand exists.

use std::net::SocketAddr;

use mcp_triage_kitchen::{start, KitchenOptions, ResponseMode};

fn usage(msg: &str) -> ! {
    eprintln!("serve: {msg}\nusage: serve [--listen ADDR] [--scenario ID] [--params JSON] [--admin-token T] [--response-mode auto|json|sse] [--max-instances N]");
    std::process::exit(2)
}

#[tokio::main]
async fn main() {
    let mut listen: SocketAddr = "127.0.0.1:0".parse().expect("default address");
    let mut opts = KitchenOptions::default();
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        let mut val = || {
            args.next()
                .unwrap_or_else(|| usage(&format!("{a} needs a value")))
        };
        match a.as_str() {
            "--listen" => {
                listen = val()
                    .parse()
                    .unwrap_or_else(|_| usage("bad --listen address"))
            }
            "--scenario" => opts.scenario = val(),
            "--params" => {
                opts.params =
                    serde_json::from_str(&val()).unwrap_or_else(|_| usage("--params must be JSON"))
            }
            "--admin-token" => opts.admin_token = Some(val()),
            "--response-mode" => {
                opts.response_mode =
                    ResponseMode::parse(&val()).unwrap_or_else(|| usage("bad --response-mode"))
            }
            "--max-instances" => {
                opts.max_instances = val()
                    .parse()
                    .ok()
                    .filter(|n: &usize| *n >= 1)
                    .unwrap_or_else(|| usage("--max-instances needs an integer >= 1"))
            }
            other => usage(&format!("unknown argument {other}")),
        }
    }
    let handle = match start(listen, opts).await {
        Ok(h) => h,
        Err(e) => {
            eprintln!("serve: {e}");
            std::process::exit(1)
        }
    };
    println!("{}", handle.mcp_url());
    let _ = tokio::signal::ctrl_c().await;
    handle.shutdown().await;
}
