//! One module per subcommand.

pub mod classify;
pub mod completions;
pub mod judge;
pub mod kitchen;
pub mod report;
