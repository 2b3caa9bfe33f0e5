//! # mcp-triage-judge
//!
//! Grades an MCP client's failure handling. Where it sits in the flow:
//!
//! ```text
//! client under test ──HTTP──▶ kitchen (mcp-triage-kitchen) ──writes──▶ journal (JournalEntry)
//!                                                                          │
//!        report (mcp-triage-report) ◀── checks (this crate) ◀──reads───────┘
//! ```
//!
//! The kitchen injects one failure per case; the client under test (any command, run with
//! `sh -c`) meets it; the kitchen's journal records what the client sent back; the checks here
//! read that journal, as [`mcp_triage_kitchen::journal::JournalEntry`] values, and say pass,
//! fail (with the journal lines that prove it) or n/a. Reading the typed entry the kitchen
//! writes, rather than JSON by field name, makes a renamed field a compile error here instead
//! of a check that silently turns n/a.
//!
//! - [`cases`]: which scenario (and parameters) each case runs, which tool it asks for, which
//!   checks grade it; [`replay_cases`]: the cases of a capture file (`judge --replay`).
//! - [`checks`]: the graders (the tasks extension's in `task_checks`).
//! - [`run`]: the runner behind `mcp-triage judge` (the binary only parses its arguments into
//!   [`JudgeOptions`]).
//! - [`plan`]: the same kitchen scenarios from the other side — what mcp-triage's own client
//!   must end with in each, run by `mcp-triage demo` and the tests.
//! - [`hop`]: `judge --hop`: the same kitchen and journal grading a hop (gateway, bridge,
//!   proxy) that our own client calls through.
//! - [`stdio`]: `judge --client-stdio`: a stdio host that spawns `kitchen --stdio`, graded from
//!   the journal file that kitchen appends to.

#![deny(missing_docs)]

pub mod cases;
pub mod checks;
mod ctx;
pub mod hop;
pub mod plan;
pub mod replay_cases;
pub mod run;
pub mod stdio;
mod task_checks;

pub use run::{checks_of, run, JudgeError, JudgeOptions, Judged};
