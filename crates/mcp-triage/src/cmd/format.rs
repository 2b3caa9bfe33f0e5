//! `--format` of the commands that report on a server (`call`, `list`, `probe`, `demo`): one
//! type, so the four spell the choice and its help the same way.

use clap::ValueEnum;

#[derive(Clone, Copy, Debug, ValueEnum, PartialEq, Eq)]
pub enum Format {
    /// A readable account.
    Text,
    /// JSON for programs: call's record, list's tool definitions, probe's findings, demo's
    /// records (one a line).
    Json,
}
