//! One module per subcommand.

pub mod classify;
