//! A verdict's JSON text written field by field, without serde's machinery.
//!
//! Why: a gateway writes one verdict per exchange (the nginx module's JSON line, the C ABI's
//! `mcpt_verdict_json`), and serde_json's derived serialiser cost about 1,000 instructions for
//! a tool success and 3,500 with an SSE stream's statistics (bench/nginx-module-overhead.sh),
//! most of it escaping member names that never need escaping. The bytes are exactly those of
//! `serde_json::to_string(&verdict)`, which stays the definition: the tests below compare the
//! two on every golden vector's verdict and on generated verdicts, so a field added to
//! [`Verdict`] and not here fails them.

use std::io::{self, Write};

use crate::verdict::{AuthChallenge, LimitHit, StreamStats, Verdict, Warning};

/// Writes JSON text a member at a time: `{` and `}`, and a `,` before every member but the
/// first.
struct ObjectWriter<'w, W: Write> {
    w: &'w mut W,
    first: bool,
}

impl<'w, W: Write> ObjectWriter<'w, W> {
    #[inline(always)]
    fn open(w: &'w mut W) -> io::Result<Self> {
        w.write_all(b"{")?;
        Ok(ObjectWriter { w, first: true })
    }

    /// `"name":` (the name is one of ours: nothing in it needs escaping). Always inlined, as
    /// the helpers below: every name is a literal, and an inlined copy of a length known at
    /// compile time is a few moves instead of a `memcpy` call (a verdict has up to 25 members).
    #[inline(always)]
    fn key(&mut self, name: &str) -> io::Result<&mut W> {
        if self.first {
            self.first = false;
            self.w.write_all(b"\"")?;
        } else {
            self.w.write_all(b",\"")?;
        }
        self.w.write_all(name.as_bytes())?;
        self.w.write_all(b"\":")?;
        Ok(self.w)
    }

    #[inline(always)]
    fn str(&mut self, name: &str, value: &str) -> io::Result<()> {
        let w = self.key(name)?;
        write_str(w, value)
    }

    #[inline(always)]
    fn opt_str(&mut self, name: &str, value: Option<&str>) -> io::Result<()> {
        match value {
            Some(v) => self.str(name, v),
            None => Ok(()),
        }
    }

    #[inline(always)]
    fn uint(&mut self, name: &str, value: u64) -> io::Result<()> {
        let w = self.key(name)?;
        write_u64(w, value)
    }

    #[inline(always)]
    fn opt_uint(&mut self, name: &str, value: Option<u64>) -> io::Result<()> {
        match value {
            Some(v) => self.uint(name, v),
            None => Ok(()),
        }
    }

    #[inline(always)]
    fn bool(&mut self, name: &str, value: bool) -> io::Result<()> {
        let w = self.key(name)?;
        w.write_all(if value { b"true" } else { b"false" })
    }

    #[inline(always)]
    fn close(self) -> io::Result<()> {
        self.w.write_all(b"}")
    }
}

/// A JSON string with serde_json's escaping: `"` and `\` escaped, the control characters
/// U+0000-U+001F as `\b \t \n \f \r` or `\u00xx` (lower-case hex), everything else as it is.
pub(crate) fn write_str<W: Write>(w: &mut W, s: &str) -> io::Result<()> {
    w.write_all(b"\"")?;
    let bytes = s.as_bytes();
    let mut start = 0;
    while start < bytes.len() {
        let i = start + crate::scan::plain_len(&bytes[start..]);
        if i == bytes.len() {
            break;
        }
        let b = bytes[i];
        let short: &[u8] = match b {
            b'"' => b"\\\"",
            b'\\' => b"\\\\",
            0x08 => b"\\b",
            0x09 => b"\\t",
            0x0a => b"\\n",
            0x0c => b"\\f",
            0x0d => b"\\r",
            _ => b"", // another control character (plain_len stops at nothing else)
        };
        w.write_all(&bytes[start..i])?;
        start = i + 1;
        if short.is_empty() {
            const HEX: &[u8; 16] = b"0123456789abcdef";
            w.write_all(&[
                b'\\',
                b'u',
                b'0',
                b'0',
                HEX[usize::from(b >> 4)],
                HEX[usize::from(b & 0xf)],
            ])?;
        } else {
            w.write_all(short)?;
        }
    }
    w.write_all(&bytes[start..])?;
    w.write_all(b"\"")
}

/// `n` in decimal.
#[inline]
pub(crate) fn write_u64<W: Write>(w: &mut W, n: u64) -> io::Result<()> {
    // most numbers in a verdict (stream counts) are one digit: one byte, no copy loop
    if n < 10 {
        return w.write_all(&[b'0' + n as u8]);
    }
    write_u64_long(w, n)
}

fn write_u64_long<W: Write>(w: &mut W, mut n: u64) -> io::Result<()> {
    let mut digits = [0u8; 20];
    let mut i = digits.len();
    loop {
        i -= 1;
        digits[i] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    w.write_all(&digits[i..])
}

fn write_i64<W: Write>(w: &mut W, n: i64) -> io::Result<()> {
    if n < 0 {
        w.write_all(b"-")?;
    }
    write_u64(w, n.unsigned_abs())
}

impl Verdict {
    /// Writes the verdict's JSON text: the same bytes as `serde_json::to_writer(w, self)`,
    /// several times cheaper (see the module documentation).
    pub fn write_json<W: Write>(&self, w: &mut W) -> io::Result<()> {
        let mut o = ObjectWriter::open(w)?;
        o.str("layer", self.layer.as_str())?;
        o.str("outcome", self.outcome.as_str())?;
        o.opt_uint("status", self.status.map(u64::from))?;
        if let Some(code) = self.code {
            write_i64(o.key("code")?, code)?;
        }
        o.opt_str("message", self.message.as_deref())?;
        o.opt_str("resultType", self.result_type.as_deref())?;
        if let Some(e) = self.is_error {
            o.bool("isError", e)?;
        }
        o.opt_uint("retryAfterMs", self.retry_after_ms)?;
        if let Some(a) = &self.auth_challenge {
            auth_challenge(o.key("authChallenge")?, a)?;
        }
        if let Some(s) = &self.stream {
            stream_stats(o.key("stream")?, s)?;
        }
        o.opt_str("taskId", self.task_id.as_deref())?;
        if let Some(l) = &self.limit {
            limit(o.key("limit")?, l)?;
        }
        if !self.warnings.is_empty() {
            warnings(o.key("warnings")?, &self.warnings)?;
        }
        o.opt_str("detail", self.detail.as_deref())?;
        o.close()
    }

    /// The verdict's JSON text (see [`Verdict::write_json`]).
    pub fn to_json(&self) -> String {
        let mut out = Vec::with_capacity(128);
        // writing into a Vec does not fail
        let _ = self.write_json(&mut out);
        // only str slices and ASCII were written
        String::from_utf8(out).expect("the verdict's JSON text is UTF-8")
    }
}

/// The member names as serde writes them: `AuthChallenge` is not renamed (snake_case).
fn auth_challenge<W: Write>(w: &mut W, a: &AuthChallenge) -> io::Result<()> {
    let mut o = ObjectWriter::open(w)?;
    o.str("scheme", &a.scheme)?;
    o.opt_str("resource_metadata", a.resource_metadata.as_deref())?;
    o.opt_str("scope", a.scope.as_deref())?;
    o.opt_str("error", a.error.as_deref())?;
    o.opt_str("error_description", a.error_description.as_deref())?;
    o.opt_str("realm", a.realm.as_deref())?;
    o.close()
}

fn stream_stats<W: Write>(w: &mut W, s: &StreamStats) -> io::Result<()> {
    let mut o = ObjectWriter::open(w)?;
    o.uint("events", s.events)?;
    o.uint("notifications", s.notifications)?;
    o.uint("serverRequests", s.server_requests)?;
    o.uint("otherResponses", s.other_responses)?;
    o.uint("ignoredEvents", s.ignored_events)?;
    o.uint("primingEvents", s.priming_events)?;
    o.uint("comments", s.comments)?;
    o.uint("bytes", s.bytes)?;
    o.opt_str("lastEventId", s.last_event_id.as_deref())?;
    o.opt_uint("retryMs", s.retry_ms)?;
    o.bool("terminal", s.terminal)?;
    o.close()
}

fn limit<W: Write>(w: &mut W, l: &LimitHit) -> io::Result<()> {
    let mut o = ObjectWriter::open(w)?;
    o.str("name", &l.name)?;
    o.uint("max", l.max)?;
    o.close()
}

fn warnings<W: Write>(w: &mut W, list: &[Warning]) -> io::Result<()> {
    w.write_all(b"[")?;
    for (i, warning) in list.iter().enumerate() {
        if i > 0 {
            w.write_all(b",")?;
        }
        let mut o = ObjectWriter::open(&mut *w)?;
        o.str("code", &warning.code)?;
        o.str("detail", &warning.detail)?;
        o.close()?;
    }
    w.write_all(b"]")
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;
    use crate::verdict::Outcome;

    fn same_as_serde(v: &Verdict) {
        assert_eq!(v.to_json(), serde_json::to_string(v).unwrap(), "{v:?}");
    }

    #[test]
    fn numbers_are_written_as_display_writes_them() {
        for n in (0u64..=120).chain([999, 1_000, 65_535, u64::MAX]) {
            let mut out = Vec::new();
            write_u64(&mut out, n).unwrap();
            assert_eq!(String::from_utf8(out).unwrap(), n.to_string());
        }
    }

    #[test]
    fn every_field_is_written_as_serde_writes_it() {
        let mut v = Verdict::new(Outcome::HttpError);
        v.status = Some(503);
        v.code = Some(-32_603);
        v.message = Some("quote \" back\\slash \u{1} \u{1f} tab\t nl\n é 😀 \u{7f}".into());
        v.result_type = Some("complete".into());
        v.is_error = Some(false);
        v.retry_after_ms = Some(u64::MAX);
        v.auth_challenge = Some(Box::new(AuthChallenge {
            scheme: "Bearer".into(),
            resource_metadata: Some("https://a/.well-known".into()),
            scope: Some("x y".into()),
            error: Some("insufficient_scope".into()),
            error_description: Some("\u{8}\u{c}\r".into()),
            realm: Some("r".into()),
        }));
        v.stream = Some(StreamStats {
            events: 1,
            notifications: 2,
            server_requests: 3,
            other_responses: 4,
            ignored_events: 5,
            priming_events: 6,
            comments: 7,
            bytes: 0,
            last_event_id: Some("1-1".into()),
            retry_ms: Some(10),
            terminal: true,
        });
        v.task_id = Some("t".into());
        v.limit = Some(LimitHit {
            name: "maxBodyBytes".into(),
            max: 1,
        });
        v.warn("A", "one");
        v.warn("B", "two");
        v.detail = Some(String::new());
        same_as_serde(&v);
        same_as_serde(&Verdict::new(Outcome::ToolSuccess));
        v.code = Some(i64::MIN);
        same_as_serde(&v);
    }

    fn text() -> impl Strategy<Value = String> {
        prop_oneof!["[ -~]{0,12}", "[\\x00-\\x1f\"\\\\a]{0,8}", any::<String>(),]
    }

    fn verdict() -> impl Strategy<Value = Verdict> {
        (
            0..Outcome::ALL.len(),
            any::<Option<u16>>(),
            any::<Option<i64>>(),
            proptest::option::of(text()),
            any::<Option<bool>>(),
            any::<Option<u64>>(),
            proptest::option::of((text(), proptest::option::of(text()), any::<[u64; 8]>())),
            proptest::collection::vec((text(), text()), 0..3),
        )
            .prop_map(
                |(o, status, code, message, is_error, retry, extra, warns)| {
                    let mut v = Verdict::new(Outcome::ALL[o]);
                    v.status = status;
                    v.code = code;
                    v.message = message.clone();
                    v.is_error = is_error;
                    v.retry_after_ms = retry;
                    if let Some((a, b, n)) = extra {
                        v.auth_challenge = Some(Box::new(AuthChallenge {
                            scheme: a.clone(),
                            scope: b.clone(),
                            ..AuthChallenge::default()
                        }));
                        v.stream = Some(StreamStats {
                            events: n[0],
                            notifications: n[1],
                            server_requests: n[2],
                            other_responses: n[3],
                            ignored_events: n[4],
                            priming_events: n[5],
                            comments: n[6],
                            bytes: n[7],
                            last_event_id: b,
                            retry_ms: retry,
                            terminal: n[0] % 2 == 0,
                        });
                        v.task_id = Some(a);
                        v.limit = Some(LimitHit {
                            name: "maxEventBytes".into(),
                            max: n[1],
                        });
                    }
                    for (c, d) in warns {
                        v.warn(&c, d);
                    }
                    v.detail = message;
                    v
                },
            )
    }

    proptest! {
        #[test]
        fn generated_verdicts_are_written_as_serde_writes_them(v in verdict()) {
            prop_assert_eq!(v.to_json(), serde_json::to_string(&v).unwrap());
        }
    }
}
