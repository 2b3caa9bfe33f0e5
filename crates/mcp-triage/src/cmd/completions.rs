//! `mcp-triage completions SHELL` and `mcp-triage man`: generated from the CLI definition
//! itself (clap_complete, clap_mangen), so they never drift from `--help`.

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Args, ValueEnum};

pub const EXAMPLES: &str = "\
Examples:
  mcp-triage completions bash > ~/.local/share/bash-completion/completions/mcp-triage
  mcp-triage completions zsh  > \"${fpath[1]}/_mcp-triage\"
  mcp-triage completions fish > ~/.config/fish/completions/mcp-triage.fish";

pub const MAN_EXAMPLES: &str = "\
Examples:
  mcp-triage man | man -l -                 # read it now
  mcp-triage man --dir target/man           # mcp-triage.1 and one page per command";

/// Shells with completions.
#[derive(Clone, Copy, ValueEnum)]
pub enum Shell {
    /// Bash.
    Bash,
    /// Zsh.
    Zsh,
    /// Fish.
    Fish,
}

#[derive(Args)]
pub struct CompletionsArgs {
    /// Which shell.
    #[arg(value_enum)]
    shell: Shell,
}

#[derive(Args)]
pub struct ManArgs {
    /// Write mcp-triage.1 and mcp-triage-COMMAND.1 into this directory instead of printing
    /// the main page to stdout.
    #[arg(long, value_name = "DIR")]
    dir: Option<PathBuf>,
}

/// Why a completion script or man page was not written.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum OutputError {
    /// Standard output failed (other than a closed pipe).
    #[error("stdout: {0}")]
    Stdout(#[source] std::io::Error),
    /// The man page did not render.
    #[error("man page: {0}")]
    Render(#[source] std::io::Error),
    /// The `--dir` directory or a page in it could not be written.
    #[error("{}: {source}", dir.display())]
    Dir {
        /// The directory.
        dir: PathBuf,
        /// Why.
        source: std::io::Error,
    },
}

pub fn completions(args: CompletionsArgs, mut cmd: clap::Command) -> Result<ExitCode, OutputError> {
    let shell = match args.shell {
        Shell::Bash => clap_complete::Shell::Bash,
        Shell::Zsh => clap_complete::Shell::Zsh,
        Shell::Fish => clap_complete::Shell::Fish,
    };
    // Into memory first: clap_complete panics on a write error (e.g. `| head`).
    let mut buf = Vec::new();
    clap_complete::generate(shell, &mut cmd, "mcp-triage", &mut buf);
    write_stdout(&buf)
}

/// Write to stdout; a closed pipe is a normal end, not an error.
fn write_stdout(bytes: &[u8]) -> Result<ExitCode, OutputError> {
    let mut out = std::io::stdout().lock();
    match out.write_all(bytes).and_then(|()| out.flush()) {
        Ok(()) => Ok(ExitCode::SUCCESS),
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(ExitCode::SUCCESS),
        Err(e) => Err(OutputError::Stdout(e)),
    }
}

pub fn man(args: ManArgs, cmd: clap::Command) -> Result<ExitCode, OutputError> {
    let Some(dir) = args.dir else {
        let mut buf = Vec::new();
        clap_mangen::Man::new(cmd)
            .render(&mut buf)
            .map_err(OutputError::Render)?;
        return write_stdout(&buf);
    };
    let in_dir = |source| OutputError::Dir {
        dir: dir.clone(),
        source,
    };
    std::fs::create_dir_all(&dir).map_err(in_dir)?;
    clap_mangen::generate_to(cmd, &dir).map_err(in_dir)?;
    eprintln!("man pages written to {}", dir.display());
    Ok(ExitCode::SUCCESS)
}
