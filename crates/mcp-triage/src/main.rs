//! `mcp-triage`: the command line. It parses arguments and wires the workspace's crates
//! together; what a command does lives in the crate it calls (the classifier in
//! `mcp-triage-core`, the fault-injection server in `mcp-triage-kitchen`, the client in
//! `mcp-triage-client`, the `classify --batch` engine and `report`'s summary in
//! `mcp-triage-proxy`'s `batch` and `record_log`). See `mcp-triage --help`.

mod allocator;
mod cmd;
mod exit;

use std::process::ExitCode;

use clap::{CommandFactory, Parser, Subcommand};

/// mimalloc for `proxy`, the system allocator for every other command (see [`allocator`]).
#[global_allocator]
static ALLOCATOR: allocator::PerCommand = allocator::PerCommand;

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
    /// Call one tool and report on which layer it ended, what was retried and why.
    #[command(after_help = cmd::call::EXAMPLES)]
    Call(cmd::call::CallArgs),
    /// List a server's tools: the arguments each one takes, its annotations and description.
    #[command(after_help = cmd::list::EXAMPLES)]
    List(cmd::list::ListArgs),
    /// What a server speaks and offers, and what is wrong with its tools/list.
    #[command(after_help = cmd::probe::EXAMPLES)]
    Probe(cmd::probe::ProbeArgs),
    /// Run the client through every kitchen scenario in-process and print the matrix.
    #[command(after_help = cmd::demo::EXAMPLES)]
    Demo(cmd::demo::DemoArgs),
    /// Client side of the official conformance suite (reads MCP_CONFORMANCE_SCENARIO).
    #[command(hide = true)]
    ConformanceClient(cmd::conformance::ConformanceArgs),
    /// Grade an MCP client's error handling against the kitchen: scenario × check matrix.
    #[command(after_help = cmd::judge::EXAMPLES)]
    Judge(cmd::judge::JudgeArgs),
    /// Summarise call records (call --log, proxy): outcomes, layers, retries, latency.
    #[command(after_help = cmd::report::EXAMPLES)]
    Report(cmd::report::ReportArgs),
    /// Serve the kitchen: a fault-injection MCP server for testing clients.
    #[command(after_help = cmd::kitchen::EXAMPLES)]
    Kitchen(cmd::kitchen::KitchenArgs),
    /// Print shell completions (bash, zsh, fish).
    #[command(after_help = cmd::completions::EXAMPLES)]
    Completions(cmd::completions::CompletionsArgs),
    /// Print the man page, or write one page per command.
    #[command(after_help = cmd::completions::MAN_EXAMPLES)]
    Man(cmd::completions::ManArgs),
    /// Observe an HTTP MCP server: forward every byte unchanged, record and classify each exchange.
    #[command(after_help = cmd::proxy::PROXY_EXAMPLES)]
    Proxy(cmd::proxy::ProxyArgs),
    /// Observe a stdio MCP server: run it under the wrapper, relay unchanged, record each exchange.
    #[command(after_help = cmd::proxy::WRAP_EXAMPLES)]
    Wrap(cmd::proxy::WrapArgs),
    /// Run as a database's user-defined function: ClickHouse's executable UDF protocol.
    Udf(cmd::udf::UdfArgs),
}

/// What a command's run returns, any error boxed: `main` prints it and exits with `Usage`.
type CommandResult = Result<ExitCode, Box<dyn std::error::Error>>;

/// A command whose arguments can be refused: turned into its config first (ripgrep's low to
/// high arguments), then run on that config only.
fn configured<A, C, E, F>(
    args: A,
    config: fn(A) -> Result<C, E>,
    run: fn(C) -> Result<ExitCode, F>,
) -> CommandResult
where
    E: std::error::Error + 'static,
    F: std::error::Error + 'static,
{
    run(config(args)?).map_err(Into::into)
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result: CommandResult = match cli.command {
        Command::Classify(args) => configured(args, cmd::classify::config, cmd::classify::run),
        Command::Kitchen(args) => cmd::kitchen::run(args.into()).map_err(Into::into),
        Command::Judge(args) => cmd::judge::run(args.into()).map_err(Into::into),
        Command::Report(args) => cmd::report::run(args.into()).map_err(Into::into),
        Command::Completions(args) => {
            cmd::completions::completions(args, Cli::command()).map_err(Into::into)
        }
        Command::Man(args) => cmd::completions::man(args, Cli::command()).map_err(Into::into),
        Command::Call(args) => configured(args, cmd::call::config, cmd::call::run),
        Command::List(args) => configured(args, cmd::list::config, cmd::list::run),
        Command::Demo(args) => configured(args, cmd::demo::config, cmd::demo::run),
        Command::Probe(args) => configured(args, cmd::probe::config, cmd::probe::run),
        Command::ConformanceClient(args) => {
            configured(args, cmd::conformance::config, cmd::conformance::run)
        }
        Command::Proxy(args) => cmd::proxy::run_proxy(args).map_err(Into::into),
        Command::Wrap(args) => cmd::proxy::run_wrap(args).map_err(Into::into),
        Command::Udf(args) => cmd::udf::run(args.into()).map_err(Into::into),
    };
    match result {
        Ok(code) => code,
        Err(e) => {
            eprintln!("mcp-triage: {e}");
            exit::Exit::Usage.into()
        }
    }
}
