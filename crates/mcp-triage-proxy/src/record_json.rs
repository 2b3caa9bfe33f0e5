//! A record's JSON line written member by member ([`Record::write_json`]), with the core's
//! [`mcp_triage_core::json_text`] writers.
//!
//! Why: serde_json's derived serialiser was most of the record writer's cost, about 20k of its
//! 24.6k instructions per exchange (`bench/proxy-overhead.sh --instructions`), much of it
//! escaping member names that never need escaping. The bytes are exactly those of
//! `serde_json::to_writer(w, record)`, which stays the definition of the record format
//! (`Record` keeps its `Serialize` derive): the tests compare the two on generated records, so
//! a field added to [`Record`] and not here fails them.

use std::io::{self, Write};
use std::ops::Range;

use mcp_triage_core::json_text::{write_array, write_str, write_u64, ObjectWriter};

use crate::record::{ClientId, MrtrLink, Record, RecordKind};

impl RecordKind {
    /// The record's `kind` string (`request`, `serverRequest`, `taskEnd`, ...).
    pub fn as_str(self) -> &'static str {
        match self {
            RecordKind::Request => "request",
            RecordKind::Notification => "notification",
            RecordKind::Response => "response",
            RecordKind::ServerRequest => "serverRequest",
            RecordKind::Stream => "stream",
            RecordKind::SessionEnd => "sessionEnd",
            RecordKind::Http => "http",
            RecordKind::TaskEnd => "taskEnd",
        }
    }
}

impl Record {
    /// Writes the record's JSON text (one line: JSON escapes every control character): the same
    /// bytes as `serde_json::to_writer(w, self)` (with the call record it carries), several
    /// times cheaper.
    ///
    /// The `callRecord` is written by the core's call record writer
    /// (`CallRecordText::write_json`, the format's one home) from a view of this record's own
    /// members ([`Record::call_record_text`]): no `CallRecord` is built for it.
    ///
    /// Into a `Vec` (the log writer's batch): the call record's attempt has the record's own
    /// verdict, whose text is copied from the line already written rather than written twice
    /// (about 450 instructions per `tools/call`).
    pub fn write_json(&self, out: &mut Vec<u8>) -> io::Result<()> {
        let mut o = ObjectWriter::open(out)?;
        self.write_request_members(&mut o)?;
        let verdict_text = self.write_outcome_members(&mut o)?;
        self.write_link_members(&mut o)?;
        o.uint("requestBytes", self.request_bytes)?;
        o.uint("responseBytes", self.response_bytes)?;
        if self.cancelled {
            o.bool("cancelled", true)?;
        }
        if !self.warnings.is_empty() {
            write_array(o.key("warnings")?, &self.warnings, |w, x| x.write_json(w))?;
        }
        if let Some(h) = &self.request_headers {
            write_array(o.key("requestHeaders")?, h, header)?;
        }
        if let Some(h) = &self.response_headers {
            write_array(o.key("responseHeaders")?, h, header)?;
        }
        if self.with_call_record {
            if let Some(call) = self.call_record_text(verdict_text) {
                call.write_json(o.key("callRecord")?)?;
            }
        }
        o.close()
    }

    /// From `recordId` to `httpStatuses`: what was sent, by whom.
    fn write_request_members<W: Write>(&self, o: &mut ObjectWriter<'_, W>) -> io::Result<()> {
        o.str("recordId", &self.record_id)?;
        o.str("time", &self.time)?;
        o.float("durationMs", self.duration_ms)?;
        o.wire_name("kind", self.kind.as_str())?;
        o.str("transport", self.transport)?;
        o.opt_str("httpMethod", self.http_method.as_deref())?;
        o.opt_str("path", self.path.as_deref())?;
        o.opt_str("method", self.method.as_deref())?;
        o.opt_value("id", self.id.as_ref())?;
        o.opt_str("tool", self.tool.as_deref())?;
        o.opt_str("argumentsHash", self.arguments_hash.as_deref())?;
        o.opt_uint("argumentsBytes", self.arguments_bytes.map(|n| n as u64))?;
        o.opt_value("arguments", self.arguments.as_ref())?;
        o.opt_str("sessionId", self.session_id.as_deref())?;
        o.opt_str("protocolVersion", self.protocol_version.as_deref())?;
        if let Some(c) = &self.client {
            client(o.key("client")?, c)?;
        }
        o.opt_uint("sessionPostCount", self.session_post_count)?;
        statuses(o.key("httpStatuses")?, &self.http_statuses)
    }

    /// From `outcome` to `attempt`: what it came to.
    /// Returns where the verdict's text is in the line, when there is one.
    fn write_outcome_members(
        &self,
        o: &mut ObjectWriter<'_, Vec<u8>>,
    ) -> io::Result<Option<Range<usize>>> {
        o.wire_name("outcome", self.outcome.as_str())?;
        o.opt_wire_name("layer", self.layer.map(|l| l.as_str()))?;
        o.bool("classified", self.classified)?;
        let verdict_text = match &self.verdict {
            Some(v) => {
                let w = o.key("verdict")?;
                let start = w.len();
                v.write_json(w)?;
                Some(start..w.len())
            }
            None => None,
        };
        o.opt_str("retryOrigin", self.retry_origin)?;
        o.opt_str("retryOf", self.retry_of.as_deref())?;
        o.opt_uint("attempt", self.attempt.map(u64::from))?;
        Ok(verdict_text)
    }

    /// From `mrtr` to `taskPolls`: the records this one is linked to.
    fn write_link_members<W: Write>(&self, o: &mut ObjectWriter<'_, W>) -> io::Result<()> {
        if let Some(m) = &self.mrtr {
            mrtr(o.key("mrtr")?, m)?;
        }
        o.opt_str("viaRecordId", self.via_record_id.as_deref())?;
        o.opt_str("inReplyTo", self.in_reply_to.as_deref())?;
        o.opt_str("taskId", self.task_id.as_deref())?;
        o.opt_str("linksTo", self.links_to.as_deref())?;
        o.opt_uint("taskPolls", self.task_polls.map(u64::from))
    }
}

/// HTTP statuses as a JSON array of numbers.
fn statuses<W: Write>(w: &mut W, statuses: &[u16]) -> io::Result<()> {
    write_array(w, statuses, |w, s| write_u64(w, u64::from(*s)))
}

fn client<W: Write>(w: &mut W, c: &ClientId) -> io::Result<()> {
    let mut o = ObjectWriter::open(w)?;
    o.opt_str("name", c.name.as_deref())?;
    o.opt_str("version", c.version.as_deref())?;
    o.opt_str("userAgent", c.user_agent.as_deref())?;
    o.close()
}

fn mrtr<W: Write>(w: &mut W, m: &MrtrLink) -> io::Result<()> {
    let mut o = ObjectWriter::open(w)?;
    o.uint("round", u64::from(m.round))?;
    o.str("originalRecordId", &m.original_record_id)?;
    o.close()
}

/// A header as serde writes a `(String, String)`: a two-element array.
fn header<W: Write>(w: &mut W, (name, value): &(String, String)) -> io::Result<()> {
    w.write_all(b"[")?;
    write_str(w, name)?;
    w.write_all(b",")?;
    write_str(w, value)?;
    w.write_all(b"]")
}

#[cfg(test)]
mod tests {
    use mcp_triage_core::{Layer, Outcome, StreamStats, Verdict, Warning};
    use proptest::prelude::*;
    use serde_json::{json, Value};

    use super::*;
    use crate::record::RecordOutcome;

    const KINDS: [RecordKind; 8] = [
        RecordKind::Request,
        RecordKind::Notification,
        RecordKind::Response,
        RecordKind::ServerRequest,
        RecordKind::Stream,
        RecordKind::SessionEnd,
        RecordKind::Http,
        RecordKind::TaskEnd,
    ];

    fn text(r: &Record) -> String {
        let mut out = Vec::new();
        r.write_json(&mut out).unwrap();
        String::from_utf8(out).unwrap()
    }

    /// The definition of a record line: serde's text of the record with the call record it
    /// carries (`to_call_record`, serialised by serde too) as its last member.
    #[derive(serde::Serialize)]
    struct Line<'a> {
        #[serde(flatten)]
        record: &'a Record,
        #[serde(rename = "callRecord", skip_serializing_if = "Option::is_none")]
        call_record: Option<mcp_triage_core::CallRecord>,
    }

    fn serde_text(r: &Record) -> String {
        let call_record = r.to_call_record().filter(|_| r.with_call_record);
        serde_json::to_string(&Line {
            record: r,
            call_record,
        })
        .unwrap()
    }

    fn any_text() -> impl Strategy<Value = String> {
        prop_oneof!["[ -~]{0,12}", "[\\x00-\\x1f\"\\\\a]{0,8}", any::<String>(),]
    }

    fn opt_text() -> impl Strategy<Value = Option<String>> {
        proptest::option::of(any_text())
    }

    fn any_json() -> impl Strategy<Value = Value> {
        prop_oneof![
            any::<i64>().prop_map(Value::from),
            any_text().prop_map(Value::from),
            (any_text(), any::<f64>()).prop_map(|(k, f)| json!({ k: [f, null, false] })),
        ]
    }

    /// Records with every member present or absent, any text in every string.
    fn any_record() -> impl Strategy<Value = Record> {
        let who = (
            (any_text(), any_text(), 0..KINDS.len(), any::<f64>()),
            (opt_text(), opt_text(), opt_text()),
            proptest::option::of(any_json()),
            proptest::option::of((any_text(), any::<usize>(), any_json())),
            proptest::option::of((opt_text(), opt_text(), opt_text())),
            (
                any::<Option<u64>>(),
                proptest::collection::vec(any::<u16>(), 0..3),
            ),
        );
        let what = (
            0..Outcome::ALL.len() + 3,
            any::<bool>(),
            any::<Option<u32>>(),
            (opt_text(), opt_text(), opt_text()),
            proptest::option::of((any::<u32>(), any_text())),
            any::<(u64, u64, bool)>(),
            proptest::collection::vec((any_text(), any_text()), 0..3),
            proptest::option::of(proptest::collection::vec((any_text(), any_text()), 0..2)),
        );
        (who, what).prop_map(|(who, what)| {
            let ((id, time, kind, ms), (method, path, session), rpc_id, args, client, counts) = who;
            let (o, flag, n, (via, reply, task), mrtr, bytes, warns, headers) = what;
            let mut r = Record::new(id, time, KINDS[kind], if flag { "http" } else { "stdio" });
            r.duration_ms = ms;
            r.http_method = method.clone();
            r.path = path;
            r.method = method;
            r.id = rpc_id;
            if let Some((hash, size, value)) = args {
                r.tool = Some(hash.clone());
                r.arguments_hash = Some(hash);
                r.arguments_bytes = Some(size);
                r.arguments = Some(value);
            }
            r.session_id = session.clone();
            r.protocol_version = session;
            r.client = client.map(|(name, version, user_agent)| ClientId {
                name,
                version,
                user_agent,
            });
            (r.session_post_count, r.http_statuses) = counts;
            if let Some(outcome) = Outcome::ALL.get(o) {
                let mut v = Verdict::new(*outcome).with_detail(r.time.clone());
                v.code = n.map(i64::from);
                v.message = reply.clone();
                v.result_type = task.clone();
                v.warnings = warns
                    .iter()
                    .map(|(code, detail)| Warning {
                        code: detail.clone(),
                        detail: code.clone(),
                    })
                    .collect();
                v.stream = flag.then(|| StreamStats {
                    events: ms as u64,
                    last_event_id: via.clone(),
                    ..StreamStats::default()
                });
                r.set_verdict(None, v);
                // most lines with a verdict are a finished tools/call's, with its call record
                if o % 4 != 0 {
                    r.method = Some("tools/call".into());
                }
                r.with_call_record = o % 8 != 1;
            } else {
                r.outcome = [
                    RecordOutcome::Accepted,
                    RecordOutcome::Undecided,
                    RecordOutcome::TaskUnfinished,
                ][o - Outcome::ALL.len()];
                r.layer = flag.then_some(Layer::Transport);
                r.classified = flag;
            }
            r.retry_origin = flag.then_some("client");
            r.retry_of = via.clone();
            r.attempt = n;
            r.mrtr = mrtr.map(|(round, original_record_id)| MrtrLink {
                round,
                original_record_id,
            });
            r.via_record_id = via;
            r.in_reply_to = reply;
            r.task_id = task.clone();
            r.links_to = task;
            r.task_polls = n;
            (r.request_bytes, r.response_bytes, r.cancelled) = bytes;
            r.warnings = warns
                .into_iter()
                .map(|(code, detail)| Warning { code, detail })
                .collect();
            r.request_headers = headers.clone();
            r.response_headers = headers;
            r
        })
    }

    #[test]
    fn kinds_have_their_serde_names() {
        for k in KINDS {
            assert_eq!(serde_json::to_value(k).unwrap(), json!(k.as_str()));
        }
    }

    #[test]
    fn a_fresh_record_is_written_as_serde_writes_it() {
        let r = Record::new(
            "1".into(),
            crate::record::rfc3339(0),
            RecordKind::Request,
            "http",
        );
        assert_eq!(text(&r), serde_text(&r));
    }

    proptest! {
        #[test]
        fn generated_records_are_written_as_serde_writes_them(r in any_record()) {
            prop_assert_eq!(text(&r), serde_text(&r));
        }
    }
}
