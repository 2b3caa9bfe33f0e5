//! A call record's JSON text written member by member, from its borrowed view
//! ([`CallRecordText::write_json`]), as the verdict's is (`verdict_json`): the proxy writes a
//! call record inside every `tools/call` record line, and serde's derived serialiser was most
//! of its writer's cost.
//!
//! This writer is the format's one home: the client's [`CallRecord::write_json`] and the
//! proxy's record line both write through it (`record_text` says why a view). The bytes are
//! exactly those of `serde_json::to_writer(w, record)`, which stays the definition: the tests
//! compare the two on generated records, so a field added to [`CallRecord`] and not here (or
//! not to the view) fails them.

use std::io::{self, Write};

use crate::json_text::{
    write_array, write_i64, write_str, write_str_parts, write_u64, ObjectWriter,
};
use crate::record::{CallRecord, Decision, RetryOrigin, ServerInfo};
use crate::record_text::{AttemptText, Attempts, CallRecordText};
use crate::verdict_json::{stream_stats, warning_lists};

impl RetryOrigin {
    /// The wire name (`none`, `sdk`, `business_logic`, `manual`).
    pub fn as_str(self) -> &'static str {
        match self {
            RetryOrigin::None => "none",
            RetryOrigin::Sdk => "sdk",
            RetryOrigin::BusinessLogic => "business_logic",
            RetryOrigin::Manual => "manual",
        }
    }
}

impl CallRecord {
    /// Writes the record's JSON text: the same bytes as `serde_json::to_writer(out, self)`,
    /// several times cheaper (see the module documentation), through its view.
    pub fn write_json(&self, out: &mut Vec<u8>) -> io::Result<()> {
        self.as_text().write_json(out)
    }
}

impl CallRecordText<'_> {
    /// Writes the JSON text of the record the view stands for: the same bytes as
    /// `serde_json::to_writer(out, &self.to_call_record())`, without building it.
    ///
    /// Into a `Vec`, so that an attempt's verdict already written into it can be copied
    /// ([`AttemptText::verdict_at`]).
    pub fn write_json(&self, out: &mut Vec<u8>) -> io::Result<()> {
        let mut o = ObjectWriter::open(out)?;
        o.uint("recordVersion", u64::from(self.record_version))?;
        o.opt_str("recordId", self.record_id)?;
        write_str_parts(o.key("client")?, &self.client)?;
        o.str("protocolVersion", self.protocol_version)?;
        o.str("transport", self.transport)?;
        o.opt_str("target", self.target)?;
        o.opt_str("scenario", self.scenario)?;
        o.str("method", self.method)?;
        o.opt_str("tool", self.tool)?;
        o.uint("postCount", u64::from(self.post_count))?;
        write_array(o.key("httpStatuses")?, self.http_statuses, |w, s| {
            write_u64(w, u64::from(*s))
        })?;
        {
            let mut j = ObjectWriter::open(o.key("jsonrpc")?)?;
            j.value("id", self.id)?;
            if let Some(code) = self.error_code {
                write_i64(j.key("errorCode")?, code)?;
            }
            j.close()?;
        }
        match self.result_type {
            Some(t) => o.str("resultType", t)?,
            None => o.key("resultType")?.write_all(b"null")?,
        }
        o.wire_name("layer", self.layer.as_str())?;
        o.wire_name("outcome", self.outcome.as_str())?;
        o.wire_name("retryOrigin", self.retry_origin.as_str())?;
        o.opt_str("retryOf", self.retry_of)?;
        let w = o.key("attempts")?;
        match &self.attempts {
            Attempts::Records(list) => {
                write_array(w, list, |w, a| AttemptText::of(a).write_json(w))?
            }
            Attempts::One(a) => {
                w.push(b'[');
                a.write_json(w)?;
                w.push(b']');
            }
        }
        o.uint("rounds", u64::from(self.rounds))?;
        o.uint("durationMs", self.duration_ms)?;
        o.opt_str("sessionId", self.session_id)?;
        if let Some(s) = self.server_info {
            server_info(o.key("serverInfo")?, s)?;
        }
        o.opt_str("message", self.message)?;
        if !self.stderr_tail.is_empty() {
            write_array(o.key("stderrTail")?, self.stderr_tail, |w, l| {
                write_str(w, l)
            })?;
        }
        warning_lists(o.key("warnings")?, &self.warnings)?;
        o.str("argumentsHash", self.arguments_hash)?;
        o.uint("argumentsSize", self.arguments_size)?;
        o.opt_value("arguments", self.arguments)?;
        o.opt_value("result", self.result)?;
        o.close()
    }
}

impl AttemptText<'_> {
    /// Writes the attempt's JSON text, the verdict's copied from `verdict_at` when set.
    fn write_json(&self, out: &mut Vec<u8>) -> io::Result<()> {
        let mut o = ObjectWriter::open(out)?;
        o.value("id", self.id)?;
        o.str("kind", self.kind)?;
        o.opt_uint("retryOf", self.retry_of.map(|i| i as u64))?;
        o.opt_uint("status", self.status.map(u64::from))?;
        o.opt_str("contentType", self.content_type)?;
        if let Some(s) = self.stream {
            stream_stats(o.key("stream")?, s)?;
        }
        let w = o.key("verdict")?;
        match &self.verdict_at {
            Some(text) => w.extend_from_within(text.clone()),
            None => self.verdict.write_json(w)?,
        }
        o.uint("durationMs", self.duration_ms)?;
        if let Some(d) = self.decision {
            decision(o.key("decision")?, d)?;
        }
        o.close()
    }
}

fn decision<W: Write>(w: &mut W, d: &Decision) -> io::Result<()> {
    let mut o = ObjectWriter::open(w)?;
    o.str("action", d.action.as_str())?;
    o.opt_uint("delayMs", d.delay_ms)?;
    o.str("reason", &d.reason)?;
    o.close()
}

fn server_info<W: Write>(w: &mut W, s: &ServerInfo) -> io::Result<()> {
    let mut o = ObjectWriter::open(w)?;
    o.str("name", &s.name)?;
    o.opt_str("version", s.version.as_deref())?;
    o.close()
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;
    use serde_json::{json, Value};

    use super::*;
    use crate::record::{AttemptRecord, DecisionAction, JsonRpcInfo};
    use crate::verdict::{Outcome, StreamStats, Verdict, Warning};

    fn text(r: &CallRecord) -> String {
        let mut out = Vec::new();
        r.write_json(&mut out).unwrap();
        String::from_utf8(out).unwrap()
    }

    fn any_text() -> impl Strategy<Value = String> {
        prop_oneof!["[ -~]{0,12}", "[\\x00-\\x1f\"\\\\a]{0,8}", any::<String>(),]
    }

    fn any_json() -> impl Strategy<Value = Value> {
        prop_oneof![
            Just(Value::Null),
            any::<i64>().prop_map(Value::from),
            any::<f64>().prop_map(Value::from),
            any_text().prop_map(Value::from),
            (any_text(), any::<u32>()).prop_map(|(k, n)| json!({ k: [n, null, true] })),
        ]
    }

    fn any_attempt() -> impl Strategy<Value = AttemptRecord> {
        (
            any_json(),
            any_text(),
            any::<Option<usize>>(),
            any::<Option<u16>>(),
            proptest::option::of(any_text()),
            any::<Option<u64>>(),
            any::<u64>(),
            proptest::option::of((
                proptest::sample::select(DecisionAction::ALL.to_vec()),
                any::<Option<u64>>(),
                any_text(),
            )),
            0..Outcome::ALL.len(),
        )
            .prop_map(|(id, kind, retry_of, status, ct, events, ms, dec, o)| {
                let stream = events.map(|n| StreamStats {
                    events: n,
                    last_event_id: Some("1".into()),
                    ..StreamStats::default()
                });
                let mut verdict = Verdict::new(Outcome::ALL[o]);
                verdict.stream = stream.clone();
                AttemptRecord {
                    id,
                    kind,
                    retry_of,
                    status,
                    content_type: ct,
                    stream,
                    verdict,
                    duration_ms: ms,
                    decision: dec.map(|(action, delay_ms, reason)| Decision {
                        action,
                        delay_ms,
                        reason,
                    }),
                }
            })
    }

    fn any_record() -> impl Strategy<Value = CallRecord> {
        let names = (
            any_text(),
            any_text(),
            proptest::option::of(any_text()),
            proptest::option::of(any_text()),
            proptest::option::of(any_text()),
            proptest::option::of(any_text()),
            proptest::option::of((any_text(), proptest::option::of(any_text()))),
        );
        let numbers = (
            any::<u32>(),
            proptest::collection::vec(any::<u16>(), 0..3),
            any::<Option<i64>>(),
            0..Outcome::ALL.len(),
            0..4usize,
            any::<(u32, u64, u64)>(),
        );
        let rest = (
            proptest::collection::vec(any_attempt(), 0..3),
            proptest::collection::vec(any_text(), 0..2),
            proptest::collection::vec((any_text(), any_text()), 0..2),
            proptest::option::of(any_json()),
            proptest::option::of(any_json()),
            any_json(),
        );
        (names, numbers, rest).prop_map(|(names, numbers, rest)| {
            let (client, hash, record_id, target, tool, message, server) = names;
            let (post_count, statuses, code, o, origin, (rounds, ms, size)) = numbers;
            let (attempts, stderr, warns, arguments, result, id) = rest;
            let mut r = CallRecord::new(client, "proxy", "tools/call");
            r.record_id = record_id;
            r.target = target.clone();
            r.scenario = target;
            r.tool = tool;
            r.post_count = post_count;
            r.http_statuses = statuses;
            r.jsonrpc = JsonRpcInfo {
                id,
                error_code: code,
            };
            r.result_type = message.clone();
            r.outcome = Outcome::ALL[o];
            r.layer = r.outcome.layer();
            r.retry_origin = [
                RetryOrigin::None,
                RetryOrigin::Sdk,
                RetryOrigin::BusinessLogic,
                RetryOrigin::Manual,
            ][origin];
            r.retry_of = message.clone();
            r.attempts = attempts;
            r.rounds = rounds;
            r.duration_ms = ms;
            r.session_id = message.clone();
            r.server_info = server.map(|(name, version)| ServerInfo { name, version });
            r.message = message;
            r.stderr_tail = stderr;
            r.warnings = warns
                .into_iter()
                .map(|(code, detail)| Warning { code, detail })
                .collect();
            r.arguments_hash = hash;
            r.arguments_size = size;
            r.arguments = arguments;
            r.result = result;
            r
        })
    }

    #[test]
    fn a_fresh_record_is_written_as_serde_writes_it() {
        let r = CallRecord::new("c", "proxy", "tools/call");
        assert_eq!(text(&r), serde_json::to_string(&r).unwrap());
    }

    #[test]
    fn retry_origins_have_their_serde_names() {
        for o in [
            RetryOrigin::None,
            RetryOrigin::Sdk,
            RetryOrigin::BusinessLogic,
            RetryOrigin::Manual,
        ] {
            assert_eq!(serde_json::to_value(o).unwrap(), json!(o.as_str()));
        }
    }

    /// `s` in two pieces at its `k`-th character boundary (or its end).
    fn split_at_char(s: &str, k: usize) -> (&str, &str) {
        let at = s.char_indices().nth(k).map_or(s.len(), |(i, _)| i);
        s.split_at(at)
    }

    proptest! {
        #[test]
        fn generated_records_are_written_as_serde_writes_them(r in any_record()) {
            prop_assert_eq!(text(&r), serde_json::to_string(&r).unwrap());
        }

        /// The view of an owned record stands for that record, every member of it.
        #[test]
        fn a_records_view_stands_for_the_record(r in any_record()) {
            prop_assert_eq!(r.as_text().to_call_record(), r);
        }

        /// The shapes only a borrowed view has (the proxy's): `client` in pieces, warnings in
        /// two lists, one borrowed attempt whose verdict text is copied from earlier in the
        /// output. Written as serde writes the record the view stands for.
        #[test]
        fn a_borrowed_view_is_written_as_serde_writes_its_record(
            r in any_record(),
            a in any_attempt(),
            (cut, split, copy) in (0..6usize, 0..3usize, any::<bool>()),
            before in any_text(),
        ) {
            let (head, tail) = split_at_char(&r.client, cut);
            let (ours, theirs) = r.warnings.split_at(split.min(r.warnings.len()));
            let mut out = before.into_bytes();
            let verdict_at = copy.then(|| {
                let start = out.len();
                a.verdict.write_json(&mut out).unwrap();
                start..out.len()
            });
            let mut attempt = AttemptText::of(&a);
            attempt.verdict_at = verdict_at;
            let view = CallRecordText {
                client: [head, "@", tail],
                warnings: [ours, theirs],
                attempts: Attempts::One(attempt),
                ..r.as_text()
            };
            let start = out.len();
            view.write_json(&mut out).unwrap();
            let owned = view.to_call_record();
            prop_assert_eq!(&owned.client, &format!("{head}@{tail}"));
            prop_assert_eq!(&owned.warnings, &r.warnings);
            prop_assert_eq!(&owned.attempts, &vec![a.clone()]);
            prop_assert_eq!(
                String::from_utf8(out[start..].to_vec()).unwrap(),
                serde_json::to_string(&owned).unwrap()
            );
        }
    }
}
