//! One module per subcommand.

pub mod classify;
pub mod judge;
pub mod kitchen;
pub mod report;
