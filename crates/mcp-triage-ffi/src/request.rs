//! `McptRequest`: what a gateway must know about a `tools/call` request (its id and tool name),
//! read from the request body by the library.
//!
//! Why here and not in the gateway: the nginx module decoded every request body with lua-cjson
//! into a Lua table only to read three members, most of the module's own cost per exchange.
//! Parsing in Rust skips the arguments without building them, and the id the classifier must
//! match is handed over without a round trip through Lua numbers (exact for every `i64`).
//! This is not a classification rule: it only says which requests are `tools/call` calls.

use std::borrow::Cow;
use std::fmt;

use mcp_triage_core::inline_text::InlineText;
use mcp_triage_core::RequestId;
use serde::de::{self, Deserializer, IgnoredAny, MapAccess, Visitor};
use serde::Deserialize;

use crate::args::{self, McptCallOptions, MCPT_ID_NUMBER, MCPT_ID_STRING};
use crate::error::{guard, guard_value, FfiError, FfiResult};
use crate::skim;

/// Set in a live request, cleared when it is freed (best effort, as for verdicts).
const LIVE: u64 = 0x6d63_7074_7265_7175; // "mcptrequ"

/// Largest magnitude of a JSON number with a fraction or exponent (`1.0`, `1e2`) taken as an
/// integer id: beyond 2^53 a double no longer says which integer was meant.
const MAX_EXACT_FLOAT_ID: f64 = 9_007_199_254_740_991.0;

/// A `tools/call` request (opaque, immutable): its id and tool name. Owned by the caller from
/// `mcpt_request_parse` until `mcpt_request_free`; it may be read from several threads at once.
pub struct McptRequest {
    magic: u64,
    id: RequestId,
    /// Held inline when short (tool names are): a request is parsed per exchange, and its
    /// allocation measured in bench/nginx-module-overhead.sh.
    tool: Option<InlineText<TOOL_INLINE>>,
}

/// Tool names up to this many bytes are kept without an allocation.
const TOOL_INLINE: usize = 64;

impl McptRequest {
    /// The request behind a pointer from C, checked as far as possible.
    ///
    /// # Safety
    /// `r` is NULL or a request from `mcpt_request_parse` that was not freed.
    pub(crate) unsafe fn get<'a>(r: *const McptRequest) -> FfiResult<&'a McptRequest> {
        // SAFETY: the caller's contract.
        let r = unsafe { r.as_ref() }.ok_or_else(|| FfiError::null("request"))?;
        if r.magic != LIVE {
            return Err(FfiError::invalid(
                "request is not a live request (freed, or not from mcpt_request_parse)",
            ));
        }
        Ok(r)
    }

    /// The JSON-RPC id of the request.
    pub(crate) fn id(&self) -> &RequestId {
        &self.id
    }

    /// `params.name`, when it is a string.
    pub(crate) fn tool(&self) -> Option<&str> {
        self.tool.as_ref().map(InlineText::as_str)
    }
}

/// One JSON value as far as the request needs it: a string, an object's `name` member, or
/// nothing. Everything else (numbers, arrays, the tool's arguments) is skipped without being
/// built.
enum Skimmed<'a> {
    Str(Cow<'a, str>),
    Object { name: Option<Cow<'a, str>> },
    Other,
}

impl<'a> Skimmed<'a> {
    fn into_str(self) -> Option<Cow<'a, str>> {
        match self {
            Skimmed::Str(s) => Some(s),
            _ => None,
        }
    }
}

struct SkimVisitor;

impl<'de> Visitor<'de> for SkimVisitor {
    type Value = Skimmed<'de>;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("any JSON value")
    }
    fn visit_borrowed_str<E>(self, s: &'de str) -> Result<Self::Value, E> {
        Ok(Skimmed::Str(Cow::Borrowed(s)))
    }
    fn visit_str<E>(self, s: &str) -> Result<Self::Value, E> {
        Ok(Skimmed::Str(Cow::Owned(s.to_string())))
    }
    fn visit_bool<E>(self, _: bool) -> Result<Self::Value, E> {
        Ok(Skimmed::Other)
    }
    fn visit_i64<E>(self, _: i64) -> Result<Self::Value, E> {
        Ok(Skimmed::Other)
    }
    fn visit_u64<E>(self, _: u64) -> Result<Self::Value, E> {
        Ok(Skimmed::Other)
    }
    fn visit_f64<E>(self, _: f64) -> Result<Self::Value, E> {
        Ok(Skimmed::Other)
    }
    fn visit_unit<E>(self) -> Result<Self::Value, E> {
        Ok(Skimmed::Other)
    }
    fn visit_seq<A: de::SeqAccess<'de>>(self, mut a: A) -> Result<Self::Value, A::Error> {
        while a.next_element::<IgnoredAny>()?.is_some() {}
        Ok(Skimmed::Other)
    }
    fn visit_map<A: MapAccess<'de>>(self, mut a: A) -> Result<Self::Value, A::Error> {
        let mut name = None;
        while let Some(Key(key)) = a.next_key::<Key<'de>>()? {
            if key == "name" {
                // a repeated member: the last one counts (as lua-cjson decoded it)
                name = a.next_value::<Skimmed>()?.into_str();
            } else {
                a.next_value::<IgnoredAny>()?;
            }
        }
        Ok(Skimmed::Object { name })
    }
}

/// A member name, borrowed from the body unless it has escapes. (serde's own `Cow<str>` always
/// allocates a `String`: one allocation per member of every request, on every exchange.)
struct Key<'a>(Cow<'a, str>);

struct KeyVisitor;

impl<'de> Visitor<'de> for KeyVisitor {
    type Value = Key<'de>;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a member name")
    }
    fn visit_borrowed_str<E>(self, s: &'de str) -> Result<Self::Value, E> {
        Ok(Key(Cow::Borrowed(s)))
    }
    fn visit_str<E>(self, s: &str) -> Result<Self::Value, E> {
        Ok(Key(Cow::Owned(s.to_string())))
    }
}

impl<'de> Deserialize<'de> for Key<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_str(KeyVisitor)
    }
}

impl<'de> Deserialize<'de> for Skimmed<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(SkimVisitor)
    }
}

/// The members of a request object that decide whether it is a `tools/call` call.
#[derive(Default)]
struct Envelope<'a> {
    jsonrpc: Option<Cow<'a, str>>,
    method: Option<Cow<'a, str>>,
    id: Option<serde_json::Value>,
    tool: Option<Cow<'a, str>>,
}

struct EnvelopeVisitor;

impl<'de> Visitor<'de> for EnvelopeVisitor {
    type Value = Envelope<'de>;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a JSON-RPC request object")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut a: A) -> Result<Self::Value, A::Error> {
        // a repeated member: the last one counts (as lua-cjson decoded it)
        let mut e = Envelope::default();
        while let Some(Key(key)) = a.next_key::<Key<'de>>()? {
            match key.as_ref() {
                "jsonrpc" => e.jsonrpc = a.next_value::<Skimmed>()?.into_str(),
                "method" => e.method = a.next_value::<Skimmed>()?.into_str(),
                "id" => e.id = Some(a.next_value()?),
                "params" => {
                    e.tool = match a.next_value::<Skimmed>()? {
                        Skimmed::Object { name } => name,
                        _ => None,
                    }
                }
                _ => {
                    a.next_value::<IgnoredAny>()?;
                }
            }
        }
        Ok(e)
    }
}

/// The id a response must carry: a string, or an integer (`1.0` and `1e2` are the integers a
/// JSON decoder into doubles reads them as, up to 2^53). Anything else (null, a fraction, an
/// object, an integer beyond `i64`) is not an id the classifier can match.
fn request_id(v: serde_json::Value) -> Option<RequestId> {
    match v {
        serde_json::Value::String(s) => Some(RequestId::String(s)),
        serde_json::Value::Number(n) => n.as_i64().map(RequestId::Number).or_else(|| {
            let f = n.as_f64()?;
            (f.fract() == 0.0 && f.abs() <= MAX_EXACT_FLOAT_ID)
                .then_some(RequestId::Number(f as i64))
        }),
        _ => None,
    }
}

/// The request when `body` is one JSON-RPC 2.0 `tools/call` request with a usable id; `None`
/// for anything else (a batch, a notification, another method, not JSON, nesting deeper than
/// serde_json's 128 levels).
pub(crate) fn parse(body: &[u8]) -> Option<McptRequest> {
    // the common shape without serde (see skim.rs); anything else by serde, as before
    match skim::skim(body) {
        Some(s) => from_skimmed(s),
        None => parse_serde(body),
    }
}

/// [`parse`] for a body [`skim::skim`] read.
fn from_skimmed(s: skim::Skimmed) -> Option<McptRequest> {
    if s.jsonrpc != Some("2.0") || s.method != Some("tools/call") {
        return None;
    }
    let id = match s.id? {
        skim::SkimmedId::Number(n) => RequestId::Number(n),
        skim::SkimmedId::String(t) => RequestId::String(t.to_string()),
    };
    Some(McptRequest {
        magic: LIVE,
        id,
        tool: s.tool.map(InlineText::of),
    })
}

/// [`parse`] by serde_json, for every body.
fn parse_serde(body: &[u8]) -> Option<McptRequest> {
    let mut de = serde_json::Deserializer::from_slice(body);
    let e = de.deserialize_map(EnvelopeVisitor).ok()?;
    de.end().ok()?;
    if e.jsonrpc.as_deref() != Some("2.0") || e.method.as_deref() != Some("tools/call") {
        return None;
    }
    Some(McptRequest {
        magic: LIVE,
        id: request_id(e.id?)?,
        tool: e.tool.as_deref().map(InlineText::of),
    })
}

/// Reads a request body (`len` bytes at `body`, NULL only when `len` is 0; read during the call
/// only). Returns 1 and sets `*out` when the body is one JSON-RPC 2.0 `tools/call` request
/// whose id is a string or an integer (an `int64_t`; `1.0` counts as 1); returns 0 and sets
/// `*out` to NULL for anything else: a batch, a notification, another method, a body that is
/// not JSON (an id nested deeper than 128 levels included; deep arguments are skipped without
/// recursion). A gateway passes those on unclassified. A member
/// given twice counts with its last value. Negative on error (`MCPT_ERR_NULL_ARGUMENT` for
/// `out`, or for `body` with a length), `*out` then NULL.
///
/// The request is owned by the caller: free it with `mcpt_request_free`.
///
/// # Safety
/// `body` points to `len` readable bytes (or is NULL with `len` 0); `out` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn mcpt_request_parse(
    body: *const u8,
    len: usize,
    out: *mut *mut McptRequest,
) -> i32 {
    let mut found = false;
    let code = guard("mcpt_request_parse", || {
        if out.is_null() {
            return Err(FfiError::null("out"));
        }
        // SAFETY: checked non-NULL; cleared first so that an error leaves no stale pointer.
        unsafe { out.write(std::ptr::null_mut()) };
        let bytes = unsafe { args::bytes("body", body, len) }?;
        if let Some(r) = parse(bytes) {
            found = true;
            unsafe { out.write(Box::into_raw(Box::new(r))) };
        }
        Ok(())
    });
    if code < 0 {
        code
    } else {
        i32::from(found)
    }
}

/// The tool name (`params.name`) as UTF-8 bytes, not NUL-terminated: `*len` receives the
/// length. Owned by the request: valid until `mcpt_request_free(r)`, do not free it. NULL (and
/// `*len` 0) when the request names no tool (no `params.name` string) and for NULL `r`. `len`
/// may be NULL.
///
/// # Safety
/// `r` is NULL or a live request from this library; `len` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn mcpt_request_tool(r: *const McptRequest, len: *mut usize) -> *const u8 {
    let tool = guard_value("mcpt_request_tool", None, || {
        unsafe { McptRequest::get(r) }
            .ok()
            .and_then(McptRequest::tool)
    });
    if !len.is_null() {
        // SAFETY: the caller's contract.
        unsafe { len.write(tool.map_or(0, str::len)) };
    }
    tool.map_or(std::ptr::null(), str::as_ptr)
}

/// Sets the expected id of `opts` (`expect_id_kind`, `expect_id_number`, `expect_id_string`,
/// `expect_id_string_len`) to the request's id, leaving its other members as they are. A string
/// id points into the request: `opts` must not be used after `mcpt_request_free(r)`. Returns
/// `MCPT_OK`, or `MCPT_ERR_NULL_ARGUMENT` / `MCPT_ERR_INVALID_ARGUMENT` (a request that is not
/// live) with `opts` unchanged.
///
/// # Safety
/// `r` is NULL or a live request from this library; `opts` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn mcpt_request_expect_id(
    r: *const McptRequest,
    opts: *mut McptCallOptions,
) -> i32 {
    guard("mcpt_request_expect_id", || {
        let r = unsafe { McptRequest::get(r) }?;
        // SAFETY: the caller's contract.
        let o = unsafe { opts.as_mut() }.ok_or_else(|| FfiError::null("opts"))?;
        match &r.id {
            RequestId::Number(n) => {
                o.expect_id_kind = MCPT_ID_NUMBER;
                o.expect_id_number = *n;
                o.expect_id_string = std::ptr::null();
                o.expect_id_string_len = 0;
            }
            RequestId::String(s) => {
                o.expect_id_kind = MCPT_ID_STRING;
                o.expect_id_number = 0;
                o.expect_id_string = s.as_ptr();
                o.expect_id_string_len = s.len();
            }
        }
        Ok(())
    })
}

/// Frees a request. NULL is a no-op; after this call `r` and every pointer obtained from it
/// (its tool name, an `expect_id_string` set from it) are invalid.
///
/// # Safety
/// `r` is NULL or a live request from this library, not used again afterwards.
#[no_mangle]
pub unsafe extern "C" fn mcpt_request_free(r: *mut McptRequest) {
    guard_value("mcpt_request_free", (), || {
        if r.is_null() {
            return;
        }
        // SAFETY: the caller's contract: `r` came from `Box::into_raw` and is freed once.
        let mut b = unsafe { Box::from_raw(r) };
        b.magic = 0;
        drop(b);
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A tool name longer than the inline room is kept whole too.
    #[test]
    fn tool_names_short_and_long_are_kept_whole() {
        for name in ["t", &"n".repeat(TOOL_INLINE), &"é".repeat(TOOL_INLINE)] {
            let body = format!(
                r#"{{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{{"name":"{name}"}}}}"#
            );
            assert_eq!(parse(body.as_bytes()).unwrap().tool(), Some(name));
            assert_eq!(parse_serde(body.as_bytes()).unwrap().tool(), Some(name));
        }
    }

    /// The serde-free reader finds what serde finds in every body it takes, and gives up on
    /// the rest (which serde then reads, as before it existed).
    #[test]
    fn skimming_agrees_with_serde() {
        let taken = [
            r#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"echo","arguments":{}}}"#,
            r#" {"method":"tools/call","params":{"arguments":{"a":[1,-2,true,null,{"b":[]}]},"name":"t"},"jsonrpc":"2.0","id":"x-1"} "#,
            r#"{"jsonrpc":"2.0","id":1,"id":2,"method":"tools/call","params":{"name":"a","name":"b"}}"#,
            r#"{"jsonrpc":"2.0","id":-123456789012345678,"method":"tools/call","params":{}}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#,
            r#"{"jsonrpc":"1.0","id":1,"method":"tools/call","params":{"name":"é😀"}}"#,
            r#"{"jsonrpc":"2.0","method":"tools/call","params":{"name":"no id"}}"#,
            r#"{}"#,
        ];
        for body in taken {
            assert!(skim::skim(body.as_bytes()).is_some(), "{body}");
            let fast = parse(body.as_bytes()).map(|r| (r.id.clone(), r.tool().map(str::to_string)));
            let serde =
                parse_serde(body.as_bytes()).map(|r| (r.id.clone(), r.tool().map(str::to_string)));
            assert_eq!(fast, serde, "{body}");
        }
        let refused = [
            r#"{"jsonrpc":"2.0","id":1.0,"method":"tools/call"}"#,
            r#"{"jsonrpc":"2.0","id":-0,"method":"tools/call"}"#,
            r#"{"jsonrpc":"2.0","id":null,"method":"tools/call"}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"tools\/call"}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":5}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":[]}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":1}}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"arguments":{"x":1.5}}}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call",}"#,
            r#"[{"jsonrpc":"2.0","id":1,"method":"tools/call"}]"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call"} {}"#,
            r#"{"jsonrpc":"2.0","id":12345678901234567890,"method":"tools/call"}"#,
        ];
        for body in refused {
            assert!(skim::skim(body.as_bytes()).is_none(), "{body}");
        }
        let deep = format!(
            r#"{{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{{"arguments":{}1{}}}}}"#,
            "[".repeat(40),
            "]".repeat(40)
        );
        assert!(skim::skim(deep.as_bytes()).is_none());
        assert!(parse(deep.as_bytes()).is_some());
        assert!(skim::skim(b"{\"id\":\"\xff\"}").is_none());
    }

    fn id_and_tool(body: &str) -> Option<(RequestId, Option<String>)> {
        parse(body.as_bytes()).map(|r| (r.id.clone(), r.tool().map(str::to_string)))
    }

    #[test]
    fn a_tools_call_gives_its_id_and_tool() {
        let body = r#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"arguments":{"a":[1,{"name":"x"}]},"name":"echo"}}"#;
        assert_eq!(
            id_and_tool(body),
            Some((RequestId::Number(7), Some("echo".into())))
        );
        let body =
            r#"{"method":"tools/call","params":{"name":"a\"b\u00e9"},"id":"x\/1","jsonrpc":"2.0"}"#;
        assert_eq!(
            id_and_tool(body),
            Some((RequestId::String("x/1".into()), Some("a\"bé".into())))
        );
        for (id, want) in [
            ("1.0", 1),
            ("1e2", 100),
            ("-3", -3),
            ("9223372036854775807", i64::MAX),
        ] {
            let body = format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call"}}"#);
            assert_eq!(
                id_and_tool(&body),
                Some((RequestId::Number(want), None)),
                "{id}"
            );
        }
    }

    #[test]
    fn a_params_without_a_string_name_gives_no_tool() {
        for params in [
            r#"[]"#,
            r#""x""#,
            r#"{"name":3}"#,
            r#"{"name":{"name":"x"}}"#,
            "null",
        ] {
            let body =
                format!(r#"{{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{params}}}"#);
            assert_eq!(
                id_and_tool(&body),
                Some((RequestId::Number(1), None)),
                "{params}"
            );
        }
        let body =
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"a","name":"b"}}"#;
        assert_eq!(
            id_and_tool(body),
            Some((RequestId::Number(1), Some("b".into())))
        );
    }

    /// serde_json skips a value without recursing: deep arguments cost no stack (a test
    /// thread has 2 MiB) and do not stop the call from being classified.
    #[test]
    fn deep_arguments_are_skipped_without_recursion() {
        let n = 1 << 20;
        let body = format!(
            r#"{{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{{"name":"t","arguments":{}1{}}}}}"#,
            "[".repeat(n),
            "]".repeat(n)
        );
        assert_eq!(
            id_and_tool(&body),
            Some((RequestId::Number(1), Some("t".into())))
        );
    }

    #[test]
    fn anything_else_passes() {
        let deep = format!(
            r#"{{"jsonrpc":"2.0","id":{}1{},"method":"tools/call"}}"#,
            "[".repeat(200),
            "]".repeat(200)
        );
        for body in [
            "",
            "nul",
            r#"[{"jsonrpc":"2.0","id":1,"method":"tools/call"}]"#,
            r#"{"jsonrpc":"2.0","method":"tools/call"}"#,
            r#"{"jsonrpc":"2.0","id":null,"method":"tools/call"}"#,
            r#"{"jsonrpc":"2.0","id":1.5,"method":"tools/call"}"#,
            r#"{"jsonrpc":"2.0","id":1e300,"method":"tools/call"}"#,
            r#"{"jsonrpc":"2.0","id":18446744073709551615,"method":"tools/call"}"#,
            r#"{"jsonrpc":"2.0","id":[1],"method":"tools/call"}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#,
            r#"{"jsonrpc":"1.0","id":1,"method":"tools/call"}"#,
            r#"{"id":1,"method":"tools/call"}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call"} x"#,
            &deep,
        ] {
            assert!(parse(body.as_bytes()).is_none(), "{body}");
        }
    }
}
