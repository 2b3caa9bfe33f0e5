//! `mcpt_record_write`: a gateway's JSON line for one `tools/call` exchange, written by the
//! library in one call.
//!
//! Why here: the nginx module built this line in Lua (cjson.encode per field, string.format,
//! table.concat, copying the verdict JSON into a Lua string), which cost several times what the
//! classifier itself costs. The field names are those of `mcp-triage proxy --log` records
//! (`docs/record.schema.json`) where they apply, in the order the module always wrote them.

use std::fmt::Display;
use std::io::Write;

use mcp_triage_core::{RequestId, Verdict};

use crate::args;
use crate::error::{guard, FfiError, FfiResult};
use crate::request::McptRequest;
use crate::verdict::McptVerdict;

/// What the gateway knows about one exchange besides the request and the verdict. Every
/// pointer is read during the call only; text is written with invalid UTF-8 replaced (U+FFFD).
#[repr(C)]
pub struct McptRecordFields {
    /// `recordId` (NULL only with length 0).
    pub record_id: *const u8,
    /// Its length in bytes.
    pub record_id_len: usize,
    /// `time`: when the request arrived, Unix seconds with a fraction (>= 0); written as
    /// RFC 3339 UTC with milliseconds.
    pub start_unix_s: f64,
    /// `durationMs`: from the request's arrival to the end of the response (finite); written
    /// with 3 decimals.
    pub duration_ms: f64,
    /// `path`: the request target as received (path and query); written with query secrets
    /// redacted.
    pub path: *const u8,
    /// Its length in bytes.
    pub path_len: usize,
    /// `sessionId` (the request's `Mcp-Session-Id`); NULL = no such header, no member.
    pub session_id: *const u8,
    /// Its length in bytes.
    pub session_id_len: usize,
    /// `protocolVersion` (the request's `MCP-Protocol-Version`, as sent); NULL = no member.
    pub protocol_version: *const u8,
    /// Its length in bytes.
    pub protocol_version_len: usize,
    /// The HTTP status the client got, in `httpStatuses`; 0 = none was sent (`[]`).
    pub http_status: u16,
    /// `requestBytes`: the request body's length.
    pub request_bytes: u64,
    /// `responseBytes`: the response body bytes passed on.
    pub response_bytes: u64,
    /// Non-zero: `"cancelled":true` (the client hung up before the response ended).
    pub cancelled: i32,
}

/// An `io::Write` over the caller's buffer that keeps counting past its end, so that a buffer
/// too small still learns the length it needs (as `snprintf` does).
struct Sink<'a> {
    buf: &'a mut [u8],
    len: usize,
}

impl Sink<'_> {
    /// Appends `data`. Inlined everywhere: most pieces are literals (`,"layer":"`), and an
    /// inlined copy of a length known at compile time is a few moves, not a `memcpy` call
    /// (a JSON line is about a hundred pieces).
    #[inline(always)]
    fn append(&mut self, data: &[u8]) {
        let end = self.len + data.len();
        if end <= self.buf.len() {
            self.buf[self.len..end].copy_from_slice(data);
        } else {
            self.append_past_end(data);
        }
        self.len = end;
    }

    /// What fits of `data` when the buffer ends within it (the caller learns the length it
    /// needs from `len`).
    #[cold]
    fn append_past_end(&mut self, data: &[u8]) {
        if let Some(room) = self.buf.get_mut(self.len..) {
            let n = room.len().min(data.len());
            room[..n].copy_from_slice(&data[..n]);
        }
    }
}

impl Write for Sink<'_> {
    #[inline(always)]
    fn write(&mut self, data: &[u8]) -> std::io::Result<usize> {
        self.append(data);
        Ok(data.len())
    }

    #[inline(always)]
    fn write_all(&mut self, data: &[u8]) -> std::io::Result<()> {
        self.append(data);
        Ok(())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

// The line is written with the small writers below instead of `write!`: this runs once per
// exchange in a gateway (bench/nginx-module-overhead.sh), and `core::fmt` with float precision
// cost about as much as classifying the response. The bytes are those `write!` and serde_json
// wrote (the tests below compare them).
impl Sink<'_> {
    #[inline(always)]
    fn put(&mut self, data: &[u8]) {
        self.append(data);
    }

    /// `n` in decimal, at least `width` (<= 20) digits (zero-padded), as `{n:0width$}` writes
    /// it. Two digits per division: a line has about a dozen numbers, most of them the time's
    /// two-digit fields, which are written as one constant-length copy.
    #[inline(always)]
    fn uint(&mut self, n: u64, width: usize) {
        if n < 100 && width <= 2 {
            let pair = n as usize * 2;
            if n >= 10 || width == 2 {
                self.put(&Self::PAIRS[pair..pair + 2]);
            } else {
                self.put(&Self::PAIRS[pair + 1..pair + 2]);
            }
        } else if (100..10_000).contains(&n) && width <= 4 {
            // a year, milliseconds, a status: four digits, the first left out below 1,000
            let (hi, lo) = (n as usize / 100 * 2, n as usize % 100 * 2);
            let digits = [
                Self::PAIRS[hi],
                Self::PAIRS[hi + 1],
                Self::PAIRS[lo],
                Self::PAIRS[lo + 1],
            ];
            if n >= 1_000 || width == 4 {
                self.put(&digits);
            } else {
                self.put(&digits[1..]);
            }
        } else {
            self.uint_long(n, width);
        }
    }

    /// "00" "01" … "99" (the core's table, which its record writer uses too).
    const PAIRS: [u8; 200] = mcp_triage_core::json_text::DIGIT_PAIRS;

    fn uint_long(&mut self, n: u64, width: usize) {
        let (digits, i) = mcp_triage_core::json_text::decimal_digits(n);
        // the buffer is '0's before the digits: the padding is already there
        self.put(&digits[i.min(digits.len() - width.min(digits.len()))..]);
    }

    fn int(&mut self, n: i64) {
        if n < 0 {
            self.put(b"-");
        }
        self.uint(n.unsigned_abs(), 1);
    }

    /// `x` with three decimals, as `{x:.3}` writes it. A whole number of milliseconds (what
    /// nginx's clock gives) is written without float formatting; anything else by `write!`.
    fn millis(&mut self, x: f64) {
        if x.fract() == 0.0 && (0.0..9.0e15).contains(&x) {
            self.uint(x as u64, 1);
            self.put(b".000");
        } else {
            let _ = write!(self, "{x:.3}");
        }
    }
}

/// `len` bytes at `ptr` as text, invalid UTF-8 replaced.
///
/// # Safety
/// As [`args::bytes`].
unsafe fn lossy<'a>(
    what: impl Display,
    ptr: *const u8,
    len: usize,
) -> FfiResult<std::borrow::Cow<'a, str>> {
    let b = unsafe { args::bytes(what, ptr, len) }?;
    // valid UTF-8 (the usual case) is borrowed without the lossy decoder's per-chunk walk
    Ok(match mcp_triage_core::scan::utf8(b) {
        Ok(s) => std::borrow::Cow::Borrowed(s),
        Err(_) => String::from_utf8_lossy(b),
    })
}

/// A JSON string: serde_json's escaping (the verdict JSON's own). Text with nothing to escape
/// (no quote, backslash or control character: what serde_json escapes) is copied as it is.
fn string(w: &mut Sink, s: &str) {
    if mcp_triage_core::scan::plain_len(s.as_bytes()) == s.len() {
        w.put(b"\"");
        w.put(s.as_bytes());
        w.put(b"\"");
    } else {
        // writing into a Sink never fails and a str always serialises
        let _ = serde_json::to_writer(w, s);
    }
}

/// `"YYYY-MM-DDTHH:MM:SS.mmmZ"` of Unix seconds (milliseconds cut, not rounded, as before).
fn rfc3339(w: &mut Sink, t: f64) -> FfiResult<()> {
    if !(t.is_finite() && (0.0..1e12).contains(&t)) {
        return Err(FfiError::invalid(format!(
            "start_unix_s must be a time after 1970 in seconds, got {t}"
        )));
    }
    let secs = t.floor();
    let ms = ((t - secs) * 1000.0).floor() as u64;
    let secs = secs as i64;
    let (y, mo, d) = mcp_triage_wire::time::civil_from_days(secs.div_euclid(86_400));
    let s = secs.rem_euclid(86_400) as u64;
    w.put(b"\"");
    // t >= 0: the year is at least 1970
    w.uint(y as u64, 4);
    w.put(b"-");
    w.uint(mo, 2);
    w.put(b"-");
    w.uint(d, 2);
    w.put(b"T");
    w.uint(s / 3600, 2);
    w.put(b":");
    w.uint(s / 60 % 60, 2);
    w.put(b":");
    w.uint(s % 60, 2);
    w.put(b".");
    w.uint(ms, 3);
    w.put(b"Z\"");
    Ok(())
}

/// The optional string members: `tool`, `sessionId`, `protocolVersion`.
///
/// # Safety
/// As [`McptRecordFields`].
unsafe fn optional_members(
    w: &mut Sink,
    tool: Option<&str>,
    f: &McptRecordFields,
) -> FfiResult<()> {
    if let Some(t) = tool {
        let _ = w.write_all(b",\"tool\":");
        string(w, t);
    }
    if !f.session_id.is_null() {
        let _ = w.write_all(b",\"sessionId\":");
        string(w, &unsafe {
            lossy("session_id", f.session_id, f.session_id_len)
        }?);
    }
    if !f.protocol_version.is_null() {
        let _ = w.write_all(b",\"protocolVersion\":");
        let v = unsafe {
            lossy(
                "protocol_version",
                f.protocol_version,
                f.protocol_version_len,
            )
        }?;
        string(w, &v);
    }
    Ok(())
}

/// The whole line (without a newline).
///
/// # Safety
/// As [`McptRecordFields`].
unsafe fn line(w: &mut Sink, r: &McptRequest, v: &Verdict, f: &McptRecordFields) -> FfiResult<()> {
    if !f.duration_ms.is_finite() {
        return Err(FfiError::invalid(format!(
            "duration_ms must be finite, got {}",
            f.duration_ms
        )));
    }
    w.put(b"{\"recordId\":");
    string(w, &unsafe {
        lossy("record_id", f.record_id, f.record_id_len)
    }?);
    w.put(b",\"time\":");
    rfc3339(w, f.start_unix_s)?;
    w.put(b",\"durationMs\":");
    w.millis(f.duration_ms);
    w.put(b",\"kind\":\"request\",\"transport\":\"http\",\"httpMethod\":\"POST\",\"path\":");
    // query secrets (`?access_token=…`) redacted by the redaction the proxy's records use
    let path = unsafe { lossy("path", f.path, f.path_len) }?;
    string(w, &mcp_triage_wire::redact::redact_query(&path, &[]));
    w.put(b",\"method\":\"tools/call\",\"id\":");
    match r.id() {
        RequestId::Number(n) => w.int(*n),
        RequestId::String(s) => string(w, s),
    }
    unsafe { optional_members(w, r.tool(), f) }?;
    w.put(b",\"httpStatuses\":[");
    if f.http_status != 0 {
        w.uint(u64::from(f.http_status), 1);
    }
    w.put(b"],\"outcome\":\"");
    w.put(v.outcome.as_str().as_bytes());
    w.put(b"\",\"layer\":\"");
    w.put(v.layer.as_str().as_bytes());
    w.put(b"\",\"classified\":true,\"verdict\":");
    let _ = v.write_json(&mut *w);
    w.put(b",\"requestBytes\":");
    w.uint(f.request_bytes, 1);
    w.put(b",\"responseBytes\":");
    w.uint(f.response_bytes, 1);
    if f.cancelled != 0 {
        let _ = w.write_all(b",\"cancelled\":true");
    }
    let _ = w.write_all(b"}");
    Ok(())
}

/// Writes the JSON line of one exchange (no newline, no NUL) into `buf` (`cap` bytes; NULL only
/// with `cap` 0): `recordId`, `time`, `durationMs`, `kind` "request", `transport` "http",
/// `httpMethod` "POST", `path` (the value of every secret query parameter, `access_token` and
/// the rest of the proxy's list, written `REDACTED` as the proxy's records write it), `method`
/// "tools/call", `id` and `tool` (from the request),
/// `sessionId`, `protocolVersion`, `httpStatuses`, `outcome`, `layer`, `classified` true,
/// `verdict` (the bytes of `mcpt_verdict_json`), `requestBytes`, `responseBytes`, `cancelled`.
///
/// `*len` receives the line's length. Returns `MCPT_OK` when it fit; when `cap` is too small,
/// `MCPT_ERR_INVALID_ARGUMENT` with `*len` the size needed (call again with a larger buffer);
/// `MCPT_ERR_NULL_ARGUMENT` for a NULL `r`, `v`, `fields` or `len`, `MCPT_ERR_INVALID_ARGUMENT`
/// for a request or verdict that is not live, a time before 1970 or a duration that is not
/// finite (then `*len` is 0). Nothing is kept after the call.
///
/// # Safety
/// `r` and `v` are NULL or live; `fields` is NULL or valid as documented on
/// `McptRecordFields`; `buf` points to `cap` writable bytes; `len` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn mcpt_record_write(
    r: *const McptRequest,
    v: *const McptVerdict,
    fields: *const McptRecordFields,
    buf: *mut u8,
    cap: usize,
    len: *mut usize,
) -> i32 {
    guard("mcpt_record_write", || {
        if len.is_null() {
            return Err(FfiError::null("len"));
        }
        // SAFETY: checked non-NULL; set to 0 until a line is written.
        unsafe { len.write(0) };
        let r = unsafe { McptRequest::get(r) }?;
        if v.is_null() {
            return Err(FfiError::null("verdict"));
        }
        let v = unsafe { McptVerdict::get(v) }
            .ok_or_else(|| FfiError::invalid("verdict is not a live verdict"))?;
        // SAFETY: the caller's contract.
        let f = unsafe { fields.as_ref() }.ok_or_else(|| FfiError::null("fields"))?;
        let out: &mut [u8] = if cap == 0 {
            &mut []
        } else if buf.is_null() {
            return Err(FfiError::null(&format!("buf (cap {cap})")));
        } else {
            // SAFETY: the caller's contract: `cap` writable bytes.
            unsafe { std::slice::from_raw_parts_mut(buf, cap) }
        };
        let mut w = Sink { buf: out, len: 0 };
        unsafe { line(&mut w, r, v, f) }?;
        unsafe { len.write(w.len) };
        if w.len > cap {
            return Err(FfiError::invalid(format!(
                "buf is too small: the line takes {} bytes, cap is {cap}",
                w.len
            )));
        }
        Ok(())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn date(t: f64) -> String {
        let mut buf = [0u8; 64];
        let mut w = Sink {
            buf: &mut buf,
            len: 0,
        };
        rfc3339(&mut w, t).unwrap();
        let n = w.len;
        String::from_utf8(buf[..n].to_vec()).unwrap()
    }

    #[test]
    fn times_are_rfc3339_utc_with_milliseconds() {
        assert_eq!(date(0.0), "\"1970-01-01T00:00:00.000Z\"");
        assert_eq!(date(951_782_400.5), "\"2000-02-29T00:00:00.500Z\"");
        assert_eq!(date(1_796_330_122.174), "\"2026-12-03T20:35:22.174Z\"");
        assert_eq!(date(4_107_542_399.999), "\"2100-02-28T23:59:59.999Z\"");
    }

    /// What `f` writes into a Sink, as text.
    fn written(f: impl FnOnce(&mut Sink)) -> String {
        let mut buf = [0u8; 512];
        let mut w = Sink {
            buf: &mut buf,
            len: 0,
        };
        f(&mut w);
        let n = w.len;
        String::from_utf8(buf[..n].to_vec()).unwrap()
    }

    #[test]
    fn the_small_writers_write_what_fmt_and_serde_json_write() {
        for n in [0u64, 7, 10, 99, 200, 12_345, u64::MAX] {
            assert_eq!(written(|w| w.uint(n, 1)), n.to_string());
            assert_eq!(written(|w| w.uint(n, 3)), format!("{n:03}"));
        }
        // the short path (below 100, width up to 2) and the long one meet at 99/100
        for n in (0u64..=120).chain(990..=1_010).chain(9_990..=10_010) {
            for width in 0..=5 {
                assert_eq!(written(|w| w.uint(n, width)), format!("{n:0width$}"));
            }
        }
        for n in [0i64, -1, 42, i64::MIN, i64::MAX] {
            assert_eq!(written(|w| w.int(n)), n.to_string());
        }
        for x in [
            0.0,
            1.0,
            40.0,
            12_345.0,
            0.5,
            2.0005,
            1e-7,
            123.456_789,
            9.1e15,
            1e300,
        ] {
            assert_eq!(written(|w| w.millis(x)), format!("{x:.3}"), "{x}");
        }
        for s in [
            "",
            "plain",
            "quote \" here",
            "back\\slash",
            "tab\t",
            "\u{7f}\u{1}",
            "é ü 😀",
        ] {
            assert_eq!(
                written(|w| string(w, s)),
                serde_json::to_string(s).unwrap(),
                "{s:?}"
            );
        }
    }

    #[test]
    fn a_short_buffer_learns_the_length_it_needs() {
        let mut buf = [0u8; 4];
        let mut w = Sink {
            buf: &mut buf,
            len: 0,
        };
        let _ = w.write_all(b"abcdefgh");
        assert_eq!(w.len, 8);
        assert_eq!(&buf, b"abcd");
    }
}
