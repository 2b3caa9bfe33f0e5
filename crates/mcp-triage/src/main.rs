//! `mcp-triage`: the command line. It parses arguments and wires the workspace's crates
//! together; what a command does lives in the crate it calls (the classifier in
//! `mcp-triage-core`). See `mcp-triage --help`.

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
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Classify(args) => cmd::classify::run(args),
    };
    match result {
        Ok(code) => code,
        Err(e) => {
            eprintln!("mcp-triage: {e}");
            ExitCode::from(2)
        }
    }
}
