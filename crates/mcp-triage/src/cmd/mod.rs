//! One module per subcommand.

pub mod call;
pub mod classify;
pub mod client_args;
pub mod conformance;
pub mod demo;
pub mod kitchen;
pub mod list;
