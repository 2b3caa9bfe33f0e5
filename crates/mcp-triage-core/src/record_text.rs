//! A borrowed view of a call record ([`CallRecordText`]): what the call record's JSON text is
//! written from (`record_json`), whoever owns the values.
//!
//! Why a view: two writers own a call record's values in different shapes. The client has a
//! [`CallRecord`]; the proxy has its record line's members, from which it writes the
//! `callRecord` of every `tools/call` without building a `CallRecord` (that cost about 3k
//! instructions per call, copying a dozen strings and a verdict only to turn them into text).
//! Both lend their values to this view, and its one writer is the one home of the format: the
//! bytes are `serde_json::to_string` of the [`CallRecord`] the view stands for
//! ([`CallRecordText::to_call_record`]), as the tests hold.
//!
//! The view allows the few shapes the proxy has and the owned record has not: `client` in
//! pieces to concatenate (`name`, `@`, `version`), `warnings` as two lists written as one (the
//! verdict's, then the observer's), one attempt made of borrowed values, and an attempt's
//! verdict whose text is already written earlier in the same output (copied, not written
//! again).

use std::ops::Range;

use serde_json::Value;

use crate::record::{AttemptRecord, CallRecord, Decision, JsonRpcInfo, RetryOrigin, ServerInfo};
use crate::verdict::{Layer, Outcome, StreamStats, Verdict, Warning};

/// A call record's members, borrowed: see the module documentation. Each member is the
/// [`CallRecord`] member of the same name, except where its documentation says otherwise.
#[derive(Debug, Clone)]
pub struct CallRecordText<'a> {
    /// `recordVersion`.
    pub record_version: u32,
    /// `recordId`.
    pub record_id: Option<&'a str>,
    /// `client`, in pieces written as one string (the owned record's is `[client, "", ""]`).
    pub client: [&'a str; 3],
    /// `protocolVersion`.
    pub protocol_version: &'a str,
    /// `transport`.
    pub transport: &'a str,
    /// `target`.
    pub target: Option<&'a str>,
    /// `scenario`.
    pub scenario: Option<&'a str>,
    /// `method`.
    pub method: &'a str,
    /// `tool`.
    pub tool: Option<&'a str>,
    /// `postCount`.
    pub post_count: u32,
    /// `httpStatuses`.
    pub http_statuses: &'a [u16],
    /// `jsonrpc.id` (`Value::Null` when the call had none).
    pub id: &'a Value,
    /// `jsonrpc.errorCode`.
    pub error_code: Option<i64>,
    /// `resultType`.
    pub result_type: Option<&'a str>,
    /// `layer`.
    pub layer: Layer,
    /// `outcome`.
    pub outcome: Outcome,
    /// `retryOrigin`.
    pub retry_origin: RetryOrigin,
    /// `retryOf`.
    pub retry_of: Option<&'a str>,
    /// `attempts`.
    pub attempts: Attempts<'a>,
    /// `rounds`.
    pub rounds: u32,
    /// `durationMs`.
    pub duration_ms: u64,
    /// `sessionId`.
    pub session_id: Option<&'a str>,
    /// `serverInfo`.
    pub server_info: Option<&'a ServerInfo>,
    /// `message`.
    pub message: Option<&'a str>,
    /// `stderrTail`.
    pub stderr_tail: &'a [String],
    /// `warnings`: both lists, one after the other, as one array (the owned record's is
    /// `[warnings, &[]]`).
    pub warnings: [&'a [Warning]; 2],
    /// `argumentsHash`.
    pub arguments_hash: &'a str,
    /// `argumentsSize`.
    pub arguments_size: u64,
    /// `arguments`.
    pub arguments: Option<&'a Value>,
    /// `result`.
    pub result: Option<&'a Value>,
}

/// A call record's `attempts`: an owned record's list, or one attempt made of borrowed values
/// (a proxy never resends, so its call has exactly one).
#[derive(Debug, Clone)]
pub enum Attempts<'a> {
    /// Every attempt of an owned record, each written through [`AttemptText::of`].
    Records(&'a [AttemptRecord]),
    /// The one attempt.
    One(AttemptText<'a>),
}

/// One attempt's members, borrowed: each is the [`AttemptRecord`] member of the same name.
#[derive(Debug, Clone)]
pub struct AttemptText<'a> {
    /// `id`.
    pub id: &'a Value,
    /// `kind`.
    pub kind: &'a str,
    /// `retryOf`.
    pub retry_of: Option<usize>,
    /// `status`.
    pub status: Option<u16>,
    /// `contentType`.
    pub content_type: Option<&'a str>,
    /// `stream`.
    pub stream: Option<&'a StreamStats>,
    /// `verdict`.
    pub verdict: &'a Verdict,
    /// Where `verdict`'s JSON text already is in the output the view is written into, if it
    /// is: copied from there instead of written again (the proxy's record line has the same
    /// verdict a few hundred bytes earlier; about 450 instructions per call). The writer
    /// trusts it: a wrong range copies wrong bytes (or panics when out of bounds).
    pub verdict_at: Option<Range<usize>>,
    /// `durationMs`.
    pub duration_ms: u64,
    /// `decision`.
    pub decision: Option<&'a Decision>,
}

impl<'a> AttemptText<'a> {
    /// The view of an owned attempt (no verdict text to copy).
    pub fn of(a: &'a AttemptRecord) -> Self {
        AttemptText {
            id: &a.id,
            kind: &a.kind,
            retry_of: a.retry_of,
            status: a.status,
            content_type: a.content_type.as_deref(),
            stream: a.stream.as_ref(),
            verdict: &a.verdict,
            verdict_at: None,
            duration_ms: a.duration_ms,
            decision: a.decision.as_ref(),
        }
    }

    /// The owned attempt the view stands for.
    pub fn to_attempt_record(&self) -> AttemptRecord {
        AttemptRecord {
            id: self.id.clone(),
            kind: self.kind.to_string(),
            retry_of: self.retry_of,
            status: self.status,
            content_type: self.content_type.map(str::to_string),
            stream: self.stream.cloned(),
            verdict: self.verdict.clone(),
            duration_ms: self.duration_ms,
            decision: self.decision.cloned(),
        }
    }
}

impl CallRecord {
    /// The record's view, which its JSON text is written from ([`CallRecord::write_json`]).
    pub fn as_text(&self) -> CallRecordText<'_> {
        CallRecordText {
            record_version: self.record_version,
            record_id: self.record_id.as_deref(),
            client: [&self.client, "", ""],
            protocol_version: &self.protocol_version,
            transport: &self.transport,
            target: self.target.as_deref(),
            scenario: self.scenario.as_deref(),
            method: &self.method,
            tool: self.tool.as_deref(),
            post_count: self.post_count,
            http_statuses: &self.http_statuses,
            id: &self.jsonrpc.id,
            error_code: self.jsonrpc.error_code,
            result_type: self.result_type.as_deref(),
            layer: self.layer,
            outcome: self.outcome,
            retry_origin: self.retry_origin,
            retry_of: self.retry_of.as_deref(),
            attempts: Attempts::Records(&self.attempts),
            rounds: self.rounds,
            duration_ms: self.duration_ms,
            session_id: self.session_id.as_deref(),
            server_info: self.server_info.as_ref(),
            message: self.message.as_deref(),
            stderr_tail: &self.stderr_tail,
            warnings: [&self.warnings, &[]],
            arguments_hash: &self.arguments_hash,
            arguments_size: self.arguments_size,
            arguments: self.arguments.as_ref(),
            result: self.result.as_ref(),
        }
    }
}

impl CallRecordText<'_> {
    /// The owned record the view stands for: its JSON text is the view's, by definition (the
    /// tests hold `write_json` to `serde_json::to_string` of this). Copies every value; the
    /// proxy uses it only where it needs a `CallRecord` as such (its tests), never to write.
    pub fn to_call_record(&self) -> CallRecord {
        let opt = |s: Option<&str>| s.map(str::to_string);
        CallRecord {
            record_version: self.record_version,
            record_id: opt(self.record_id),
            client: self.client.concat(),
            protocol_version: self.protocol_version.to_string(),
            transport: self.transport.to_string(),
            target: opt(self.target),
            scenario: opt(self.scenario),
            method: self.method.to_string(),
            tool: opt(self.tool),
            post_count: self.post_count,
            http_statuses: self.http_statuses.to_vec(),
            jsonrpc: JsonRpcInfo {
                id: self.id.clone(),
                error_code: self.error_code,
            },
            result_type: opt(self.result_type),
            layer: self.layer,
            outcome: self.outcome,
            retry_origin: self.retry_origin,
            retry_of: opt(self.retry_of),
            attempts: match &self.attempts {
                Attempts::Records(list) => list.to_vec(),
                Attempts::One(a) => vec![a.to_attempt_record()],
            },
            rounds: self.rounds,
            duration_ms: self.duration_ms,
            session_id: opt(self.session_id),
            server_info: self.server_info.cloned(),
            message: opt(self.message),
            stderr_tail: self.stderr_tail.to_vec(),
            warnings: self.warnings.concat(),
            arguments_hash: self.arguments_hash.to_string(),
            arguments_size: self.arguments_size,
            arguments: self.arguments.cloned(),
            result: self.result.cloned(),
        }
    }
}
