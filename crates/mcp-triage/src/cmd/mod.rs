//! One module per subcommand.

/// `println!` that ignores a closed stdout (`mcp-triage probe | head` must not panic).
macro_rules! outln {
    ($($t:tt)*) => {{
        use std::io::Write as _;
        let _ = writeln!(std::io::stdout().lock(), $($t)*);
    }};
}

#[cfg(test)]
mod args_testing;
pub mod call;
pub mod capture_args;
pub mod classify;
pub mod client_args;
pub mod completions;
pub mod conformance;
pub mod demo;
pub mod format;
pub mod judge;
pub mod kitchen;
pub mod list;
pub mod probe;
pub mod probe_checks;
pub mod prompt;
pub mod proxy;
pub mod replay_limits;
pub mod report;
pub mod signature;
pub mod tool_checks;
pub mod udf;
pub mod ui_args;
