//! One module per subcommand.

pub mod classify;
pub mod kitchen;
pub mod proxy;
