//! One module per subcommand.

pub mod call;
pub mod classify;
pub mod client_args;
pub mod completions;
pub mod demo;
pub mod judge;
pub mod kitchen;
pub mod list;
pub mod report;
