//! `mcp-triage`: the command line. It parses arguments and wires the workspace's crates
//! together; what a command does lives in the crate it calls (the classifier in
//! `mcp-triage-core`, the fault-injection server in `mcp-triage-kitchen`). See `mcp-triage --help`.

mod cmd;

use std::process::ExitCode;

use clap::{Parser, Subcommand};

/// On which layer did this MCP tool call fail, and may it be sent again?
#[derive(Parser)]
#[command(name = "mcp-triage", version, about, long_about = None)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Classify recorded tools/call responses offline: one response, or an exchange file.
    #[command(after_help = cmd::classify::EXAMPLES)]
    Classify(cmd::classify::ClassifyArgs),
    /// Serve the kitchen: a fault-injection MCP server for testing clients.
    #[command(after_help = cmd::kitchen::EXAMPLES)]
    Kitchen(cmd::kitchen::KitchenArgs),
    /// Observe an HTTP MCP server: forward every byte unchanged, record and classify each exchange.
    #[command(after_help = cmd::proxy::PROXY_EXAMPLES)]
    Proxy(cmd::proxy::ProxyArgs),
    /// Observe a stdio MCP server: run it under the wrapper, relay unchanged, record each exchange.
    #[command(after_help = cmd::proxy::WRAP_EXAMPLES)]
    Wrap(cmd::proxy::WrapArgs),
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Classify(args) => cmd::classify::run(args),
        Command::Kitchen(args) => cmd::kitchen::run(args),
        Command::Proxy(args) => cmd::proxy::run_proxy(args),
        Command::Wrap(args) => cmd::proxy::run_wrap(args),
    };
    match result {
        Ok(code) => code,
        Err(e) => {
            eprintln!("mcp-triage: {e}");
            ExitCode::from(2)
        }
    }
}
