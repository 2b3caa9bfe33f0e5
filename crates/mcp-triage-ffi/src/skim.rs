//! The common shape of a request body read without serde: one object whose members are plain
//! strings (no escapes), integers, literals, and objects and arrays of those, read with the
//! core's [`Scanner`] (the token rules live there).
//!
//! Why: a gateway parses every request body, and serde_json's visitor machinery cost about 4,000
//! instructions for a 100-byte `tools/call` (bench/nginx-module-overhead.sh). This reader finds
//! the same four members [`crate::request`]'s serde path finds (the last of a repeated member
//! counts, as there); anything else (an escape, a fraction, `jsonrpc`, `method`, `name` or `id`
//! of another type, nesting deeper than [`MAX_DEPTH`], any syntax error, bytes that are not
//! UTF-8) makes it give up with `None`, and the body goes through serde as before.

use mcp_triage_core::scan::Scanner;

/// Deeper arguments go to the serde path (which stops at 128 levels).
const MAX_DEPTH: usize = 32;

/// The id as written: an integer that fits 18 digits, or a string without escapes.
pub(crate) enum SkimmedId<'a> {
    Number(i64),
    String(&'a str),
}

/// The members of a request object that decide whether it is a `tools/call` call.
#[derive(Default)]
pub(crate) struct Skimmed<'a> {
    pub jsonrpc: Option<&'a str>,
    pub method: Option<&'a str>,
    pub id: Option<SkimmedId<'a>>,
    pub tool: Option<&'a str>,
}

/// The members of `body` when it has the common shape, else `None` (see the module comment).
pub(crate) fn skim(body: &[u8]) -> Option<Skimmed<'_>> {
    let mut s = Scanner::new(std::str::from_utf8(body).ok()?, MAX_DEPTH);
    let mut out = Skimmed::default();
    s.ws();
    s.object(|s, key| {
        match key {
            "jsonrpc" => out.jsonrpc = Some(s.string()?),
            "method" => out.method = Some(s.string()?),
            "id" => out.id = Some(id(s)?),
            "params" => out.tool = params(s)?,
            _ => s.skip(2)?,
        }
        Some(())
    })?;
    s.at_end().then_some(out)
}

/// The id as written: an integer or a string of the common shape.
fn id<'a>(s: &mut Scanner<'a>) -> Option<SkimmedId<'a>> {
    if s.peek()? == b'"' {
        s.string().map(SkimmedId::String)
    } else {
        s.integer().map(SkimmedId::Number)
    }
}

/// `params`: an object; its `name` (a string) is the tool.
fn params<'a>(s: &mut Scanner<'a>) -> Option<Option<&'a str>> {
    let mut name = None;
    s.check_depth(2)?;
    s.object(|s, key| {
        if key == "name" {
            name = Some(s.string()?);
        } else {
            s.skip(3)?;
        }
        Some(())
    })?;
    Some(name)
}
