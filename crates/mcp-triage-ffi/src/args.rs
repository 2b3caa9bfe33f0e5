//! The C arguments (`McptHeader`, `McptCallOptions`, raw byte ranges) turned into the core's
//! response head (borrowed header text) and `CallContext`, with the conventions of the Python
//! and Node bindings: status 100-999, a known protocol version or "unknown", limits as
//! camelCase JSON, `now` from the caller.

use std::ffi::{c_char, CStr};
use std::fmt::Display;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use mcp_triage_core::{CallContext, Limits, OutputSchema, ProtocolVersion, RequestId, RequestKind};

use crate::error::{FfiError, FfiResult};

/// `expect_id_kind`: the expected request id is `expect_id_number`.
pub const MCPT_ID_NUMBER: i32 = 0;
/// `expect_id_kind`: the expected request id is the string `expect_id_string`
/// (`expect_id_string_len` bytes of UTF-8): `1` and `"1"` are different ids.
pub const MCPT_ID_STRING: i32 = 1;

/// One response header: `name_len` bytes at `name`, `value_len` bytes at `value`, both UTF-8 and
/// not NUL-terminated. A pointer may be NULL only when its length is 0. The bytes are read during
/// the call only (copied), never kept.
#[repr(C)]
pub struct McptHeader {
    /// The header name (case does not matter).
    pub name: *const u8,
    /// Its length in bytes.
    pub name_len: usize,
    /// The header value.
    pub value: *const u8,
    /// Its length in bytes.
    pub value_len: usize,
}

/// What the classifier must know about the call besides the response. Every pointer is read
/// during the call only (the library copies what it keeps).
#[repr(C)]
pub struct McptCallOptions {
    /// `MCPT_ID_NUMBER` or `MCPT_ID_STRING`.
    pub expect_id_kind: i32,
    /// The expected id when `expect_id_kind` is `MCPT_ID_NUMBER`.
    pub expect_id_number: i64,
    /// The expected id when `expect_id_kind` is `MCPT_ID_STRING` (UTF-8, not NUL-terminated;
    /// NULL only with length 0).
    pub expect_id_string: *const u8,
    /// Its length in bytes.
    pub expect_id_string_len: usize,
    /// The negotiated protocol revision ("2025-06-18", ...), NUL-terminated; NULL = "unknown"
    /// (lenient: what any revision allows).
    pub protocol_version: *const c_char,
    /// "Now" in Unix milliseconds (>= 0), the clock `Retry-After` dates are read against: the
    /// core reads no clock.
    pub now_unix_ms: i64,
    /// NULL = the default limits; else a JSON object of camelCase limits (`maxBodyBytes`,
    /// `maxEventBytes`, `maxStreamBytes`, `maxStreamEvents`, `maxDepth`, `maxErrorBodyBytes`,
    /// `maxDecodedBytes`, `maxDecodedRatio`): absent members keep their defaults, an unknown
    /// member is an error. NUL-terminated.
    pub limits_json: *const c_char,
    /// NULL = none; else the tool's `outputSchema` as JSON text (NUL-terminated), compiled per call.
    pub output_schema_json: *const c_char,
    /// NULL = `tools/call`; else the request's JSON-RPC method, NUL-terminated: `tasks/get`
    /// judges the answer as a task poll's (the task's state, or the call's final outcome).
    /// Last member, so a caller that zero-fills the struct gets a tool call.
    pub request_method: *const c_char,
}

/// `len` bytes at `ptr` as a slice; NULL is allowed only for an empty range. `what` names the
/// argument in an error; it is formatted only then (for headers it is `format_args!`, so that
/// a call that succeeds formats nothing: see bench/ffi-classify.sh).
///
/// # Safety
/// When `ptr` is not NULL it must point to `len` readable bytes that stay unchanged for `'a`.
pub(crate) unsafe fn bytes<'a>(
    what: impl Display,
    ptr: *const u8,
    len: usize,
) -> FfiResult<&'a [u8]> {
    if len == 0 {
        return Ok(&[]);
    }
    if ptr.is_null() {
        return Err(FfiError::null(&format!("{what} (length {len})")));
    }
    if len > isize::MAX as usize {
        return Err(FfiError::invalid(format!(
            "{what}: length {len} is too large"
        )));
    }
    // SAFETY: the caller's contract (above); the length fits an allocation.
    Ok(unsafe { std::slice::from_raw_parts(ptr, len) })
}

/// `len` bytes at `ptr` as UTF-8 text.
///
/// # Safety
/// As [`bytes`].
unsafe fn text<'a>(what: impl Display, ptr: *const u8, len: usize) -> FfiResult<&'a str> {
    let b = unsafe { bytes(&what, ptr, len) }?;
    mcp_triage_core::scan::utf8(b).map_err(|e| {
        FfiError::invalid(format!(
            "{what} is not UTF-8 (invalid byte at offset {})",
            e.valid_up_to()
        ))
    })
}

/// A NUL-terminated string; `None` for NULL.
///
/// # Safety
/// When `ptr` is not NULL it must point to a NUL-terminated string.
pub(crate) unsafe fn c_text<'a>(what: &str, ptr: *const c_char) -> FfiResult<Option<&'a str>> {
    if ptr.is_null() {
        return Ok(None);
    }
    // SAFETY: the caller's contract.
    let s = unsafe { CStr::from_ptr(ptr) };
    // ASCII (a protocol revision, an id) is checked a word at a time
    mcp_triage_core::scan::utf8(s.to_bytes())
        .map(Some)
        .map_err(|e| {
            FfiError::invalid(format!(
                "{what} is not UTF-8 (invalid byte at offset {})",
                e.valid_up_to()
            ))
        })
}

/// The status and the `count` headers at `headers` as borrowed text, checked: what
/// `ResponseClassifier::with_headers` reads (nothing is copied).
///
/// # Safety
/// `headers` must point to `count` `McptHeader`s (or be NULL with `count` 0), each valid as
/// documented on [`McptHeader`], and stay so while the result is used.
pub(crate) unsafe fn head<'a>(
    status: u16,
    headers: *const McptHeader,
    count: usize,
) -> FfiResult<HeadPairs<'a>> {
    if !(100..=999).contains(&status) {
        return Err(FfiError::invalid(format!(
            "status must be an HTTP status 100-999, got {status}"
        )));
    }
    if count > isize::MAX as usize / std::mem::size_of::<McptHeader>() {
        return Err(FfiError::invalid(format!(
            "header_count {count} is too large"
        )));
    }
    let list: &[McptHeader] = if count == 0 {
        &[]
    } else if headers.is_null() {
        return Err(FfiError::null(&format!("headers (header_count {count})")));
    } else {
        // SAFETY: the caller's contract; the size fits (checked above).
        unsafe { std::slice::from_raw_parts(headers, count) }
    };
    let mut pairs = HeadPairs::with_capacity(count);
    for (i, h) in list.iter().enumerate() {
        let name = unsafe { text(format_args!("header {i}'s name"), h.name, h.name_len) }?;
        let value = unsafe { text(format_args!("header {i}'s value"), h.value, h.value_len) }?;
        pairs.push((name, value));
    }
    Ok(pairs)
}

/// The `(name, value)` pairs of one response head, read in place.
///
/// Why not a `Vec`: a gateway classifies every response, and a response has a dozen headers or
/// so; a heap allocation per exchange for a list that lives for one call was a measurable part
/// of the library's share (bench/nginx-module-overhead.sh). Up to [`HeadPairs::INLINE`] pairs
/// stay on the stack (both nginx modules pass at most eight: only the headers the core reads);
/// a head with more goes to the heap (`Vec::new` itself allocates nothing).
pub(crate) struct HeadPairs<'a> {
    inline: [(&'a str, &'a str); HeadPairs::INLINE],
    /// How many of `inline` are used.
    len: usize,
    /// Every pair, once there are more than `INLINE`.
    heap: Vec<(&'a str, &'a str)>,
}

impl<'a> HeadPairs<'a> {
    /// Pairs held without allocating.
    pub(crate) const INLINE: usize = 8;

    fn with_capacity(count: usize) -> HeadPairs<'a> {
        HeadPairs {
            inline: [("", ""); Self::INLINE],
            len: 0,
            heap: if count > Self::INLINE {
                Vec::with_capacity(count)
            } else {
                Vec::new()
            },
        }
    }

    fn push(&mut self, pair: (&'a str, &'a str)) {
        if self.heap.capacity() == 0 && self.len < Self::INLINE {
            self.inline[self.len] = pair;
            self.len += 1;
            return;
        }
        if self.len > 0 {
            self.heap.extend_from_slice(&self.inline[..self.len]);
            self.len = 0;
        }
        self.heap.push(pair);
    }
}

impl<'a> std::ops::Deref for HeadPairs<'a> {
    type Target = [(&'a str, &'a str)];

    fn deref(&self) -> &Self::Target {
        if self.heap.is_empty() {
            &self.inline[..self.len]
        } else {
            &self.heap
        }
    }
}

/// The call context from the options (NULL: id 1, "unknown", now 0, default limits, no schema).
///
/// # Safety
/// `opts`, when not NULL, must point to a `McptCallOptions` valid as documented there.
pub(crate) unsafe fn context(opts: *const McptCallOptions) -> FfiResult<CallContext> {
    // SAFETY: the caller's contract.
    let Some(o) = (unsafe { opts.as_ref() }) else {
        return Ok(CallContext::new(RequestId::Number(1)));
    };
    let id = match o.expect_id_kind {
        MCPT_ID_NUMBER => RequestId::Number(o.expect_id_number),
        MCPT_ID_STRING => RequestId::String(
            unsafe {
                text(
                    "expect_id_string",
                    o.expect_id_string,
                    o.expect_id_string_len,
                )
            }?
            .to_string(),
        ),
        k => {
            return Err(FfiError::invalid(format!(
                "expect_id_kind must be MCPT_ID_NUMBER (0) or MCPT_ID_STRING (1), got {k}"
            )))
        }
    };
    let version = match unsafe { c_text("protocol_version", o.protocol_version) }? {
        None => ProtocolVersion::Unknown,
        Some(v) => ProtocolVersion::parse(v).ok_or_else(|| {
            let known: Vec<&str> = ProtocolVersion::KNOWN.iter().map(|v| v.as_str()).collect();
            FfiError::invalid(format!(
                "protocol_version {v:?} is not a known revision ({}, or \"unknown\" to be lenient)",
                known.join(", ")
            ))
        })?,
    };
    let now_ms = u64::try_from(o.now_unix_ms).map_err(|_| {
        FfiError::invalid(format!(
            "now_unix_ms must be a time at or after 1970-01-01, got {} ms",
            o.now_unix_ms
        ))
    })?;
    let limits = match unsafe { c_text("limits_json", o.limits_json) }? {
        None => Limits::DEFAULT,
        Some(t) => {
            serde_json::from_str(t).map_err(|e| FfiError::invalid(format!("limits_json: {e}")))?
        }
    };
    let mut ctx = CallContext::new(id)
        .with_protocol_version(version)
        .with_now(SystemTime::UNIX_EPOCH + Duration::from_millis(now_ms))
        .with_limits(limits);
    if let Some(t) = unsafe { c_text("output_schema_json", o.output_schema_json) }? {
        let value: serde_json::Value = serde_json::from_str(t)
            .map_err(|e| FfiError::invalid(format!("output_schema_json is not JSON: {e}")))?;
        let compiled = OutputSchema::compile(&value)
            .map_err(|e| FfiError::invalid(format!("output_schema_json: {e}")))?;
        ctx = ctx.with_output_schema(Arc::new(compiled));
    }
    if let Some(m) = unsafe { c_text("request_method", o.request_method) }? {
        ctx = ctx.with_request_kind(RequestKind::from_method(m));
    }
    Ok(ctx)
}

#[cfg(test)]
mod tests {
    use super::HeadPairs;

    #[test]
    fn head_pairs_keep_order_on_the_stack_and_past_it() {
        let names: Vec<String> = (0..60).map(|i| format!("h{i}")).collect();
        for count in [0, 1, HeadPairs::INLINE, HeadPairs::INLINE + 1, 60] {
            let mut pairs = HeadPairs::with_capacity(count);
            for n in &names[..count] {
                pairs.push((n, "v"));
            }
            let got: Vec<&str> = pairs.iter().map(|(n, _)| *n).collect();
            assert_eq!(
                got,
                names[..count]
                    .iter()
                    .map(String::as_str)
                    .collect::<Vec<_>>()
            );
            assert_eq!(pairs.heap.is_empty(), count <= HeadPairs::INLINE);
        }
        // more pushes than announced still keep every pair, in order
        let mut pairs = HeadPairs::with_capacity(1);
        for n in &names[..30] {
            pairs.push((n, "v"));
        }
        assert_eq!(pairs.len(), 30);
        assert_eq!(pairs[0].0, "h0");
        assert_eq!(pairs[29].0, "h29");
    }
}
