//! The invariant of the core's JSON [`Scanner`]: text it reads whole is JSON serde_json reads
//! too, to the same value. Shared by the fuzz target `scanner` and the corpus test of
//! `mcp-triage-core` (`tests/fuzz_corpus.rs`), which includes this file by path.

use mcp_triage_core::scan::Scanner;
use serde_json::{Map, Value};

/// The deepest nesting the check lets the scanner read.
const MAX_DEPTH: usize = 32;

/// Panics when the scanner reads `data` as a value serde_json refuses or reads otherwise.
pub fn check(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let mut s = Scanner::new(text, MAX_DEPTH);
    s.ws();
    let value = read(&mut s, 1);
    let mut skipped = Scanner::new(text, MAX_DEPTH);
    skipped.ws();
    let skips = skipped.skip(1).is_some() && skipped.at_end();
    let Some(value) = value.filter(|_| s.at_end()) else {
        assert!(!skips, "skip took text the reader did not: {text:?}");
        return;
    };
    assert!(skips, "the reader took text skip did not: {text:?}");
    let reference: Value = serde_json::from_str(text)
        .unwrap_or_else(|e| panic!("the scanner read text serde_json refuses ({e}): {text:?}"));
    assert_eq!(value, reference, "{text:?}");
}

/// A value read with the scanner's token methods only, as its callers read them.
fn read(s: &mut Scanner<'_>, depth: usize) -> Option<Value> {
    Some(match s.peek()? {
        b'"' => Value::String(s.string()?.to_string()),
        b'{' => {
            s.check_depth(depth)?;
            let mut map = Map::new();
            s.object(|s, name| {
                let v = read(s, depth + 1)?;
                map.insert(name.to_string(), v);
                Some(())
            })?;
            Value::Object(map)
        }
        b'[' => {
            s.check_depth(depth)?;
            let mut items = Vec::new();
            s.array(|s| {
                items.push(read(s, depth + 1)?);
                Some(())
            })?;
            Value::Array(items)
        }
        b't' => s.word("true").map(|()| Value::Bool(true))?,
        b'f' => s.word("false").map(|()| Value::Bool(false))?,
        b'n' => s.word("null").map(|()| Value::Null)?,
        _ => Value::from(s.integer()?),
    })
}
