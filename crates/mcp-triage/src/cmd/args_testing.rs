//! For the tests of the commands' configs: one command's arguments parsed alone, as the command
//! line parses them, without a `#[derive(Parser)]` wrapper in every test module.

use std::ffi::OsString;

use clap::{Args, Command, FromArgMatches};

/// `argv` (the command's name first, as clap's `try_parse_from` takes it) parsed into `A`.
pub(crate) fn try_parse<A, I, T>(argv: I) -> Result<A, clap::Error>
where
    A: Args + FromArgMatches,
    I: IntoIterator<Item = T>,
    T: Into<OsString> + Clone,
{
    let matches = A::augment_args(Command::new("mcp-triage")).try_get_matches_from(argv)?;
    A::from_arg_matches(&matches)
}

/// `argv` (the arguments alone, no command name) parsed into `A`, which the test expects clap
/// to accept.
pub(crate) fn parsed<A: Args + FromArgMatches>(argv: &[&str]) -> A {
    try_parse(std::iter::once("mcp-triage").chain(argv.iter().copied()))
        .expect("arguments clap accepts")
}
