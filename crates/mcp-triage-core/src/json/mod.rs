//! A JSON reader built for judging untrusted bodies.
//!
//! It parses with `serde_json` into a small borrowed tree ([`Node`]) that remembers what a
//! `serde_json::Value` forgets: duplicate member names (two parsers must never read one body two
//! ways, so a duplicate is a finding, not a silent "last wins"). Nesting is bounded by
//! [`crate::Limits::max_depth`] and the stack grows on demand, so 1,000 levels is ordinary input
//! and 100,000 levels is a clear limit verdict, never a stack overflow. Numbers beyond the range
//! of an f64 (`1e400`), which serde_json refuses, are valid JSON: they become [`Node::BigNumber`]
//! (see [`node::parse_str`]).

mod compact;
mod fast;
mod node;

pub(crate) use compact::{Compactor, ScanFailure, KEEP_SOLID_CHARS};
pub(crate) use node::{
    drop_value_iteratively, escape_pointer, parse, HeldValue, JsonKind, Node, Object, ParseFailure,
    Parsed,
};
