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
    /// `path`: the request target as received (path and query).
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

impl Write for Sink<'_> {
    fn write(&mut self, data: &[u8]) -> std::io::Result<usize> {
        if let Some(room) = self.buf.get_mut(self.len..) {
            let n = room.len().min(data.len());
            room[..n].copy_from_slice(&data[..n]);
        }
        self.len += data.len();
        Ok(data.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
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
    Ok(String::from_utf8_lossy(unsafe {
        args::bytes(what, ptr, len)
    }?))
}

/// A JSON string: serde_json's escaping (the verdict JSON's own).
fn string(w: &mut Sink, s: &str) {
    // writing into a Sink never fails and a str always serialises
    let _ = serde_json::to_writer(w, s);
}

/// `"YYYY-MM-DDTHH:MM:SS.mmmZ"` of Unix seconds (milliseconds cut, not rounded, as before).
fn rfc3339(w: &mut Sink, t: f64) -> FfiResult<()> {
    if !(t.is_finite() && (0.0..1e12).contains(&t)) {
        return Err(FfiError::invalid(format!(
            "start_unix_s must be a time after 1970 in seconds, got {t}"
        )));
    }
    let secs = t.floor();
    let ms = ((t - secs) * 1000.0).floor() as u32;
    let secs = secs as i64;
    let (y, mo, d) = mcp_triage_wire::time::civil_from_days(secs.div_euclid(86_400));
    let s = secs.rem_euclid(86_400);
    let _ = write!(
        w,
        "\"{y:04}-{mo:02}-{d:02}T{:02}:{:02}:{:02}.{ms:03}Z\"",
        s / 3600,
        s / 60 % 60,
        s % 60
    );
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
    let _ = w.write_all(b"{\"recordId\":");
    string(w, &unsafe {
        lossy("record_id", f.record_id, f.record_id_len)
    }?);
    let _ = w.write_all(b",\"time\":");
    rfc3339(w, f.start_unix_s)?;
    let _ = write!(
        w,
        ",\"durationMs\":{:.3},\"kind\":\"request\",\"transport\":\"http\",\"httpMethod\":\"POST\",\"path\":",
        f.duration_ms
    );
    string(w, &unsafe { lossy("path", f.path, f.path_len) }?);
    let _ = w.write_all(b",\"method\":\"tools/call\",\"id\":");
    match r.id() {
        RequestId::Number(n) => {
            let _ = write!(w, "{n}");
        }
        RequestId::String(s) => string(w, s),
    }
    unsafe { optional_members(w, r.tool(), f) }?;
    let _ = w.write_all(b",\"httpStatuses\":[");
    if f.http_status != 0 {
        let _ = write!(w, "{}", f.http_status);
    }
    let _ = write!(
        w,
        "],\"outcome\":\"{}\",\"layer\":\"{}\",\"classified\":true,\"verdict\":",
        v.outcome.as_str(),
        v.layer.as_str()
    );
    let _ = serde_json::to_writer(&mut *w, v);
    let _ = write!(
        w,
        ",\"requestBytes\":{},\"responseBytes\":{}",
        f.request_bytes, f.response_bytes
    );
    if f.cancelled != 0 {
        let _ = w.write_all(b",\"cancelled\":true");
    }
    let _ = w.write_all(b"}");
    Ok(())
}

/// Writes the JSON line of one exchange (no newline, no NUL) into `buf` (`cap` bytes; NULL only
/// with `cap` 0): `recordId`, `time`, `durationMs`, `kind` "request", `transport` "http",
/// `httpMethod` "POST", `path`, `method` "tools/call", `id` and `tool` (from the request),
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
