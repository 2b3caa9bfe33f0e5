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

use crate::json_text::{write_i64, ObjectWriter};
use crate::verdict::{AuthChallenge, LimitHit, StreamStats, ToolFailure, Verdict, Warning};

impl Verdict {
    /// Writes the verdict's JSON text: the same bytes as `serde_json::to_writer(w, self)`,
    /// several times cheaper (see the module documentation).
    pub fn write_json<W: Write>(&self, w: &mut W) -> io::Result<()> {
        let mut o = ObjectWriter::open(w)?;
        o.wire_name("layer", self.layer.as_str())?;
        o.wire_name("outcome", self.outcome.as_str())?;
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
        if let Some(f) = &self.tool_failure {
            tool_failure(o.key("toolFailure")?, f)?;
        }
        if let Some(k) = self.tool_error_kind {
            o.wire_name("toolErrorKind", k.as_str())?;
        }
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

pub(crate) fn stream_stats<W: Write>(w: &mut W, s: &StreamStats) -> io::Result<()> {
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

fn tool_failure<W: Write>(w: &mut W, f: &ToolFailure) -> io::Result<()> {
    let mut o = ObjectWriter::open(w)?;
    o.wire_name("class", f.class.as_str())?;
    o.str("code", &f.code)?;
    if let Some(r) = f.retryable {
        o.bool("retryable", r)?;
    }
    o.opt_uint("retryNotBefore", f.retry_not_before)?;
    o.opt_uint("retryAfterMs", f.retry_after_ms)?;
    o.str("correlationId", &f.correlation_id)?;
    o.opt_str("agentGuidance", f.agent_guidance.as_deref())?;
    o.close()
}

fn limit<W: Write>(w: &mut W, l: &LimitHit) -> io::Result<()> {
    let mut o = ObjectWriter::open(w)?;
    o.str("name", &l.name)?;
    o.uint("max", l.max)?;
    o.close()
}

pub(crate) fn warnings<W: Write>(w: &mut W, list: &[Warning]) -> io::Result<()> {
    warning_lists(w, &[list])
}

/// Several lists of warnings written as one array, one after the other: a call record's
/// `warnings` are its verdict's and its observer's, not copied into one list to be written.
pub(crate) fn warning_lists<W: Write>(w: &mut W, lists: &[&[Warning]]) -> io::Result<()> {
    w.write_all(b"[")?;
    let mut first = true;
    for warning in lists.iter().flat_map(|l| l.iter()) {
        if !first {
            w.write_all(b",")?;
        }
        first = false;
        warning.write_json(w)?;
    }
    w.write_all(b"]")
}

impl Warning {
    /// Writes the warning's JSON text as serde_json writes it (`{"code":..,"detail":..}`): a
    /// verdict's, a call record's and the proxy's record line's warnings.
    pub fn write_json<W: Write>(&self, w: &mut W) -> io::Result<()> {
        let mut o = ObjectWriter::open(w)?;
        o.str("code", &self.code)?;
        o.str("detail", &self.detail)?;
        o.close()
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;
    use crate::verdict::{FailureClass, Outcome, ToolErrorKind};

    /// `wire_name` writes these without escaping them: none may need it.
    #[test]
    fn outcome_and_layer_names_need_no_escaping() {
        for o in Outcome::ALL {
            for name in [o.as_str(), o.layer().as_str()] {
                assert_eq!(
                    crate::scan::plain_len(name.as_bytes()),
                    name.len(),
                    "{name}"
                );
                assert_eq!(serde_json::to_string(name).unwrap(), format!("\"{name}\""));
            }
        }
    }

    fn same_as_serde(v: &Verdict) {
        assert_eq!(v.to_json(), serde_json::to_string(v).unwrap(), "{v:?}");
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
        v.tool_failure = Some(Box::new(ToolFailure {
            class: FailureClass::Reliability,
            code: "retryable_transient_error \" \u{1}".into(),
            retryable: Some(true),
            retry_not_before: Some(u64::MAX),
            retry_after_ms: Some(0),
            correlation_id: "c-1".into(),
            agent_guidance: Some("é 😀".into()),
        }));
        v.tool_error_kind = Some(ToolErrorKind::UnknownTool);
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
        // the optional members of a declared failure, left out
        v.tool_failure = Some(Box::new(ToolFailure {
            class: FailureClass::Governance,
            code: String::new(),
            retryable: None,
            retry_not_before: None,
            retry_after_ms: None,
            correlation_id: String::new(),
            agent_guidance: None,
        }));
        v.tool_error_kind = Some(ToolErrorKind::InvalidOutput);
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
                            last_event_id: b.clone(),
                            retry_ms: retry,
                            terminal: n[0] % 2 == 0,
                        });
                        v.tool_failure = Some(Box::new(ToolFailure {
                            class: [
                                FailureClass::Capability,
                                FailureClass::Reliability,
                                FailureClass::Governance,
                            ][(n[2] % 3) as usize],
                            code: a.clone(),
                            retryable: is_error,
                            retry_not_before: retry,
                            retry_after_ms: retry.map(|r| r / 2),
                            correlation_id: message.clone().unwrap_or_default(),
                            agent_guidance: b.clone(),
                        }));
                        v.tool_error_kind = [
                            None,
                            Some(ToolErrorKind::UnknownTool),
                            Some(ToolErrorKind::ToolUnavailable),
                            Some(ToolErrorKind::InvalidInput),
                            Some(ToolErrorKind::InvalidOutput),
                        ][(n[3] % 5) as usize];
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
