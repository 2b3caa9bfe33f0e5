//! What the observer remembers between exchanges, and how a JSON-RPC message becomes a record.
//!
//! Transport-independent: the HTTP proxy and the stdio wrapper both parse the client's messages
//! here, open a [`Call`] per request, and close it with the core's verdict. The state is per
//! process and bounded ([`MAX_ENTRIES`] per table): legacy sessions (client, negotiated version,
//! POST count), tool annotations seen in `tools/list`, the last attempt of every distinct
//! `tools/call` (for retry observation), open MRTR calls, and server requests awaiting answers.

use foldhash::{HashMap, HashMapExt, HashSet};
use std::hash::Hash;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::Instant;

use mcp_triage_core::{Limits, Outcome, Verdict, Warning};
use serde_json::Value;

use crate::log::RecordSink;
use crate::record::{now_ms, rfc3339, ClientId, MrtrLink, Record, RecordKind, RecordOutcome};
use crate::tasks::{Evicted, OpenTask, OpenTasks};

/// Most entries kept in each table; the oldest-looking entry is evicted beyond it.
pub const MAX_ENTRIES: usize = 65_536;

/// `_meta` key under which a client marks a call as safe to repeat (the client writes it: its
/// one home is `mcp_triage_wire::meta`).
pub use mcp_triage_wire::meta::IDEMPOTENCY_KEY;

/// Header names whose values never reach a log or a span, whatever the options say: the one
/// list records and captures share.
pub use crate::guard::SECRET_HEADERS as ALWAYS_REDACTED;

/// Options that shape records.
#[derive(Debug, Clone)]
pub struct ObserveOptions {
    /// Put `params.arguments` into records (otherwise only hash and size).
    pub log_arguments: bool,
    /// Put request and response headers into records (redacted names left out).
    pub log_headers: bool,
    /// Extra header names to redact (case-insensitive), on top of [`ALWAYS_REDACTED`].
    pub redact_headers: Vec<String>,
    /// The core's classification limits.
    pub limits: Limits,
    /// Most bytes of a request body kept to read its JSON-RPC message(s); a larger body is
    /// forwarded whole and recorded as not classified.
    pub max_request_bytes: u64,
    /// Most open tasks remembered (`--max-open-tasks`); past it the least recently polled one
    /// is reported unfinished.
    pub max_open_tasks: usize,
    /// How long an open task is remembered without a poll (`--open-task-ttl`).
    pub open_task_ttl: std::time::Duration,
    /// Draft proposals the classifier reads (`--draft`); all off by default, so that records
    /// do not change under a user who did not ask.
    pub drafts: mcp_triage_core::Drafts,
}

impl Default for ObserveOptions {
    fn default() -> Self {
        ObserveOptions {
            log_arguments: false,
            log_headers: false,
            redact_headers: Vec::new(),
            limits: Limits::DEFAULT,
            max_request_bytes: 4 << 20,
            max_open_tasks: crate::tasks::DEFAULT_MAX_OPEN_TASKS,
            open_task_ttl: crate::tasks::DEFAULT_OPEN_TASK_TTL,
            drafts: mcp_triage_core::Drafts::default(),
        }
    }
}

pub use crate::message::{parse_messages, parse_requests, Message, Params};

/// SHA-256 (hex) and size of the canonical JSON of `arguments`: the wire crate's
/// [`ArgumentsDigest`](mcp_triage_wire::canonical::ArgumentsDigest), which the client and the
/// kitchen's journal compute too.
pub fn arguments_hash(arguments: &Value) -> (String, usize) {
    let d = mcp_triage_wire::canonical::ArgumentsDigest::of(arguments);
    (d.hex, d.size as usize)
}

/// Where a message came from, besides its body.
#[derive(Debug, Clone, Default)]
pub struct Origin {
    /// `Mcp-Session-Id` of the request.
    pub session_id: Option<String>,
    /// `MCP-Protocol-Version` of the request.
    pub protocol_version: Option<String>,
    /// `User-Agent`.
    pub user_agent: Option<String>,
    /// The peer's address without port (HTTP), or the wrapped command (stdio).
    pub peer: String,
}

#[derive(Debug, Clone, Default)]
struct Session {
    client: Option<ClientId>,
    protocol_version: Option<String>,
    posts: u64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Safety {
    /// `readOnlyHint` or `idempotentHint` was true in `tools/list`.
    Safe,
    /// Seen, and neither hint was true (the spec's defaults: destructive, not idempotent).
    Unsafe,
}

#[derive(Debug, Clone)]
struct Attempt {
    record_id: String,
    attempt: u32,
    /// None while the attempt is in flight.
    failed: Option<bool>,
    may_have_executed: bool,
}

/// The attempt that follows `prev`, a failed attempt of the same call: the record names `prev`
/// as what it retries, and warns `UNSAFE_RETRY` when `prev` may have executed and nothing says
/// running the tool twice is harmless (annotations marking it safe, or an idempotency key).
fn retry_attempt(
    record: &mut Record,
    prev: Attempt,
    tool: &str,
    safety: Option<Safety>,
    has_key: bool,
) -> Attempt {
    record.retry_of = Some(prev.record_id.clone());
    record.retry_origin = Some("client");
    if prev.may_have_executed && safety != Some(Safety::Safe) && !has_key {
        let why = match safety {
            None => "its annotations were never seen in tools/list",
            _ => "tools/list marks it neither read-only nor idempotent",
        };
        record.warnings.push(Warning {
            code: "UNSAFE_RETRY".into(),
            detail: format!(
                "tools/call {tool:?} was sent again after attempt {} ({}) may have executed; {why} and the call carries no _meta {IDEMPOTENCY_KEY:?}",
                prev.attempt, prev.record_id
            ),
        });
    }
    Attempt {
        record_id: record.record_id.clone(),
        attempt: prev.attempt + 1,
        failed: None,
        may_have_executed: false,
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
struct AttemptKey {
    client: String,
    tool: String,
    arguments_hash: String,
}

/// A bounded map: evicts an arbitrary entry when full, so a flood of distinct keys costs memory
/// up to the bound and no more.
#[derive(Debug)]
struct Table<K, V>(HashMap<K, V>);

impl<K: Hash + Eq + Clone, V> Table<K, V> {
    fn new() -> Self {
        Table(HashMap::new())
    }
    fn insert(&mut self, k: K, v: V) {
        if self.0.len() >= MAX_ENTRIES && !self.0.contains_key(&k) {
            if let Some(victim) = self.0.keys().next().cloned() {
                self.0.remove(&victim);
            }
        }
        self.0.insert(k, v);
    }
}

#[derive(Debug)]
struct State {
    sessions: Table<String, Session>,
    tools: Table<String, Safety>,
    attempts: Table<AttemptKey, Attempt>,
    /// (client key, tool) → (record of the call that first got input_required, rounds so far).
    mrtr: Table<(String, String), (String, u32)>,
    /// (client key, id as JSON text) → record of the server request.
    server_requests: Table<(String, String), String>,
    /// Tasks created by an observed `tools/call` whose end has not been seen.
    tasks: OpenTasks,
}

impl State {
    fn state_session(&mut self, sid: &str) -> &mut Session {
        if !self.sessions.0.contains_key(sid) {
            self.sessions.insert(sid.to_string(), Session::default());
        }
        self.sessions.0.get_mut(sid).expect("just inserted")
    }
}

/// The observer: record ids, state tables and the sink.
pub struct Observer {
    options: ObserveOptions,
    redacted: HashSet<String>,
    /// `may_log_header("mcp-session-id")`, asked for every record: the set does not change,
    /// and each lookup lower-cased the name into a new `String` first.
    log_session_id: bool,
    prefix: String,
    seq: AtomicU64,
    state: Mutex<State>,
    sink: RecordSink,
    transport: &'static str,
}

/// One open request, closed by [`Observer::finish_call`].
#[derive(Debug)]
pub struct Call {
    /// The record being built. Boxed: a call moves from the observer into the plan's list, out
    /// of it and into [`Observer::finish_call`] and on to the writer, and each move of an
    /// inline `Record` (about a kilobyte) was a `memcpy`.
    pub record: Box<Record>,
    /// When the exchange began (set it to the request's arrival).
    pub started: Instant,
    /// The attempt table's key of a `tools/call` (its `client` is the client's key).
    attempt_key: Option<AttemptKey>,
    is_initialize_of: Option<ClientId>,
}

impl Call {
    /// The JSON-RPC method: the record's (set by [`Observer::start_call`]; one `String`, not a
    /// second copy in the call).
    pub fn method(&self) -> &str {
        self.record.method.as_deref().unwrap_or("")
    }
}

impl Observer {
    /// An observer writing to `sink`; `transport` is `http` or `stdio`.
    pub fn new(options: ObserveOptions, sink: RecordSink, transport: &'static str) -> Observer {
        let tasks = OpenTasks::new(options.max_open_tasks, options.open_task_ttl);
        let mut redacted: HashSet<String> = ALWAYS_REDACTED.iter().map(|s| s.to_string()).collect();
        redacted.extend(
            options
                .redact_headers
                .iter()
                .map(|h| h.to_ascii_lowercase()),
        );
        let log_session_id = !redacted.contains("mcp-session-id");
        Observer {
            options,
            redacted,
            log_session_id,
            prefix: format!("{:x}-{:x}", std::process::id(), now_ms()),
            seq: AtomicU64::new(0),
            state: Mutex::new(State {
                sessions: Table::new(),
                tools: Table::new(),
                attempts: Table::new(),
                mrtr: Table::new(),
                server_requests: Table::new(),
                tasks,
            }),
            sink,
            transport,
        }
    }

    /// The options.
    pub fn options(&self) -> &ObserveOptions {
        &self.options
    }

    /// True when a header's value may appear in a record or span.
    pub fn may_log_header(&self, name: &str) -> bool {
        !self.redacted.contains(&name.to_ascii_lowercase())
    }

    /// [`Observer::may_log_header`] for `Mcp-Session-Id`, which every record asks.
    pub fn may_log_session_id(&self) -> bool {
        self.log_session_id
    }

    /// Headers with redacted names removed, for records.
    pub fn loggable_headers<'a>(
        &self,
        headers: impl Iterator<Item = (&'a str, &'a [u8])>,
    ) -> Vec<(String, String)> {
        headers
            .filter(|(n, _)| self.may_log_header(n))
            .map(|(n, v)| (n.to_string(), String::from_utf8_lossy(v).into_owned()))
            .collect()
    }

    /// A fresh record with id and time set.
    pub fn new_record(&self, kind: RecordKind) -> Record {
        let n = self.seq.fetch_add(1, Ordering::Relaxed) + 1;
        // `prefix-n` by hand: `format!` was about 300 instructions of every record.
        let mut digits = [0u8; 20];
        let at = decimal(n, &mut digits);
        let mut id = String::with_capacity(self.prefix.len() + 1 + digits.len() - at);
        id.push_str(&self.prefix);
        id.push('-');
        id.push_str(mcp_triage_core::scan::utf8(&digits[at..]).expect("decimal digits are ASCII"));
        Record::new(id, rfc3339(now_ms()), kind, self.transport)
    }

    /// Sends a finished record.
    pub fn emit(&self, record: Record) {
        self.sink.send(record);
    }

    /// [`Observer::emit`] for a record in a box already (a call's).
    pub fn emit_boxed(&self, record: Box<Record>) {
        self.sink.send_boxed(record);
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        // A panic while holding the lock leaves tables that are still valid maps.
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn session_id_for_log(&self, origin: &Origin) -> Option<String> {
        origin.session_id.clone().filter(|_| self.log_session_id)
    }

    /// Counts one POST of the request's legacy session and returns its number.
    pub fn count_post(&self, origin: &Origin) -> Option<u64> {
        let sid = origin.session_id.as_ref()?;
        let mut st = self.lock();
        // a known session: one lookup (state_session looks twice)
        if let Some(s) = st.sessions.0.get_mut(sid.as_str()) {
            s.posts += 1;
            return Some(s.posts);
        }
        let s = st.state_session(sid);
        s.posts += 1;
        Some(s.posts)
    }

    /// A legacy session was created by an `initialize` answered with this session id.
    pub fn session_started(
        &self,
        session_id: &str,
        client: Option<ClientId>,
        version: Option<String>,
    ) {
        let mut st = self.lock();
        let s = st.state_session(session_id);
        s.client = client.or(s.client.take());
        s.protocol_version = version;
        // The initialize POST is the session's first.
        s.posts = s.posts.max(1);
    }

    /// A DELETE ended a legacy session.
    pub fn session_ended(&self, session_id: &str) {
        self.lock().sessions.0.remove(session_id);
    }

    /// Who sent a message: its session's client, else the one its `_meta` (or `initialize`)
    /// names, else its `User-Agent`.
    fn client_of(&self, origin: &Origin, params: &Params) -> Option<ClientId> {
        let st = self.lock();
        let session = origin
            .session_id
            .as_ref()
            .and_then(|s| st.sessions.0.get(s));
        let meta_client = || {
            params
                .meta
                .client_info
                .as_ref()
                .or(params.client_info.as_ref())
                .cloned()
        };
        session
            .and_then(|s| s.client.clone())
            .or_else(meta_client)
            .or_else(|| {
                origin.user_agent.as_ref().map(|ua| ClientId {
                    user_agent: Some(ua.clone()),
                    ..ClientId::default()
                })
            })
    }

    /// Opens a call for a client request, starting now.
    pub fn start_call(&self, id: &Value, method: &str, params: &Value, origin: &Origin) -> Call {
        let params = Box::new(Params::of(params));
        self.start_call_at(
            id.clone(),
            method.to_string(),
            params,
            origin,
            Instant::now(),
        )
    }

    /// [`Observer::start_call`] for a request that arrived at `started` (the HTTP proxy knows
    /// when: no second reading of the clock), with its `params` read as [`Params`]
    /// ([`parse_requests`]). Takes the message's parts: they become the record's.
    pub fn start_call_at(
        &self,
        id: Value,
        method: String,
        mut params: Box<Params>,
        origin: &Origin,
        started: Instant,
    ) -> Call {
        let mut record = Box::new(self.new_record(RecordKind::Request));
        record.id = Some(id);
        record.session_id = self.session_id_for_log(origin);
        record.client = self.client_of(origin, &params);
        record.protocol_version = self.protocol_version_of(origin, &params);
        let mut attempt_key = None;
        let mut is_initialize_of = None;
        match method.as_str() {
            "tools/call" => {
                // The client's key only where it is used: the attempt table of `tools/call`.
                let key = client_key(origin, record.client.as_ref());
                attempt_key = Some(self.note_tool_call(&mut record, &mut params, key));
            }
            "initialize" => {
                is_initialize_of = Some(self.note_initialize(&mut record, &params, origin));
            }
            m if m.starts_with("tasks/") => self.link_task_request(&mut record, &params),
            _ => {}
        }
        record.method = Some(method);
        Call {
            record,
            started,
            attempt_key,
            is_initialize_of,
        }
    }

    /// The request's protocol revision: its `MCP-Protocol-Version` header, else the one in its
    /// `_meta` (where 2026-07-28 requests carry it), else the one its session has.
    fn protocol_version_of(&self, origin: &Origin, params: &Params) -> Option<String> {
        origin
            .protocol_version
            .clone()
            .or_else(|| params.meta.protocol_version.clone())
            .or_else(|| {
                let st = self.lock();
                origin
                    .session_id
                    .as_ref()
                    .and_then(|s| st.sessions.0.get(s))
                    .and_then(|s| s.protocol_version.clone())
            })
    }

    /// A `tools/call`: the tool and the arguments' hash go into the record, an MRTR round is
    /// linked to the call it continues, and the attempt is numbered against the earlier ones of
    /// the same client, tool and arguments. Returns the attempt's key, under which the call's
    /// end notes how the attempt went.
    fn note_tool_call(
        &self,
        record: &mut Record,
        params: &mut Params,
        client_key: String,
    ) -> AttemptKey {
        let tool = params.name.take().unwrap_or_default();
        let args = params.arguments.take().unwrap_or(Value::Null);
        let (hash, bytes) = arguments_hash(&args);
        record.arguments_hash = Some(hash.clone());
        record.arguments_bytes = Some(bytes);
        if self.options.log_arguments {
            record.arguments = Some(args);
        }
        let has_key = params.meta.idempotency_key;
        let is_mrtr_round = params.mrtr_round;
        let key = AttemptKey {
            client: client_key,
            tool,
            arguments_hash: hash,
        };
        let tool = key.tool.as_str();
        record.tool = Some(tool.to_string());
        let mut guard = self.lock();
        let st = &mut *guard;
        if is_mrtr_round {
            if let Some((original, rounds)) =
                st.mrtr.0.get_mut(&(key.client.clone(), tool.to_string()))
            {
                *rounds += 1;
                record.mrtr = Some(MrtrLink {
                    round: *rounds,
                    original_record_id: original.clone(),
                });
            }
        }
        let first = |record: &Record| Attempt {
            record_id: record.record_id.clone(),
            attempt: 1,
            failed: None,
            may_have_executed: false,
        };
        // One lookup of the key (three strings to hash and compare): a repeated call replaces
        // its entry in place, a new one is inserted.
        match st.attempts.0.get_mut(&key) {
            Some(prev) => {
                // A repeat of a failed attempt is a retry; one of a success or of a call still
                // in flight is a new call (the client may mean to run it twice).
                let next = if prev.failed == Some(true) && !is_mrtr_round {
                    let safety = st.tools.0.get(tool).copied();
                    retry_attempt(record, prev.clone(), tool, safety, has_key)
                } else {
                    first(record)
                };
                record.attempt = Some(next.attempt);
                *prev = next;
            }
            None => {
                let next = first(record);
                record.attempt = Some(next.attempt);
                st.attempts.insert(key.clone(), next);
            }
        }
        key
    }

    /// An `initialize`: the client it names (empty when it names none), which becomes the
    /// record's client when it has a name.
    fn note_initialize(&self, record: &mut Record, params: &Params, origin: &Origin) -> ClientId {
        let c = params.client_info.clone().unwrap_or_default();
        if c.name.is_some() {
            record.client = Some(c.clone());
            // Over stdio the session exists before the answer: later requests may be sent
            // before initialize is answered and still belong to this client.
            if let Some(sid) = &origin.session_id {
                let mut st = self.lock();
                let s = st.state_session(sid);
                s.client = Some(c.clone());
                // The requested revision until the answer names the negotiated one.
                s.protocol_version = params.protocol_version.clone();
            }
        }
        c
    }

    /// Closes a call with its verdict and emits its record.
    ///
    /// `reached_upstream` is false when the request never left the observer (connection refused),
    /// so the call cannot have executed. `session_id` is the `Mcp-Session-Id` an `initialize`
    /// response assigned; `tools` is the `tools` array of a `tools/list` result, when read.
    pub fn finish_call(
        &self,
        mut call: Call,
        verdict: Verdict,
        reached_upstream: bool,
        session_id: Option<&str>,
        tools: Option<&[Value]>,
    ) {
        call.record.duration_ms = call.started.elapsed().as_secs_f64() * 1000.0;
        let task_records = self.track_task(&mut call, &verdict);
        let outcome = verdict.outcome;
        let status = verdict.status;
        let code = verdict.code;
        if let Some(s) = verdict.status {
            if call.record.http_statuses.is_empty() {
                call.record.http_statuses.push(s);
            }
        }
        let method = call.record.method.take();
        call.record.set_verdict(method.as_deref(), verdict);
        call.record.method = method;
        {
            let mut st = self.lock();
            if let Some(key) = &call.attempt_key {
                let failed = !matches!(
                    outcome,
                    Outcome::ToolSuccess | Outcome::InputRequired | Outcome::TaskCreated
                );
                let executed = reached_upstream && may_have_executed(outcome, status, code);
                if let Some(a) = st.attempts.0.get_mut(key) {
                    if a.record_id == call.record.record_id {
                        a.failed = Some(failed);
                        a.may_have_executed = executed;
                    }
                }
                // The MRTR key only when a round starts or ends (two copies of strings).
                let mk = || {
                    let tool = call.record.tool.clone().unwrap_or_default();
                    (key.client.clone(), tool)
                };
                if outcome == Outcome::InputRequired {
                    if call.record.mrtr.is_none() {
                        st.mrtr.insert(mk(), (call.record.record_id.clone(), 0));
                    }
                } else if call.record.mrtr.is_some() {
                    st.mrtr.0.remove(&mk());
                }
            }

            if let Some(tools) = tools {
                for t in tools {
                    let Some(name) = t.get("name").and_then(Value::as_str) else {
                        continue;
                    };
                    let hint = |h: &str| {
                        t.pointer(&format!("/annotations/{h}"))
                            .and_then(Value::as_bool)
                            == Some(true)
                    };
                    let safety = if hint("readOnlyHint") || hint("idempotentHint") {
                        Safety::Safe
                    } else {
                        Safety::Unsafe
                    };
                    st.tools.insert(name.to_string(), safety);
                }
            }
        }
        if let (Some(client), Some(sid)) = (call.is_initialize_of.take(), session_id) {
            let client = Some(client).filter(|c| c.name.is_some());
            self.session_started(sid, client, call.record.protocol_version.clone());
            if self.log_session_id {
                call.record.session_id = Some(sid.to_string());
            }
        }
        // The line carries the call record; the writer writes it from the record itself.
        call.record.with_call_record = true;
        self.emit_boxed(call.record);
        for r in task_records {
            self.emit(r);
        }
    }

    /// Writes a `TASK_UNFINISHED` end for every task still open: the proxy is stopping, and
    /// a call whose end was not seen must still be reported, once.
    pub fn close_open_tasks(&self) {
        let open = self.lock().tasks.drain();
        for (t, why) in open {
            let r = self.unfinished(t, why);
            self.emit(r);
        }
    }

    /// A `tasks/*` request names its task; link it to the call that created it.
    fn link_task_request(&self, record: &mut Record, params: &Params) {
        let Some(id) = params.task_id.as_deref() else {
            return;
        };
        record.task_id = Some(id.to_string());
        let mut st = self.lock();
        // No `tool`: a poll is not a call of the tool (summaries count records by tool).
        if let Some(t) = st.tasks.touch(id, Instant::now()) {
            record.links_to = Some(t.record_id.clone());
        }
    }

    /// Task bookkeeping when an exchange ends: a `tools/call` answered `TASK_CREATED` opens a
    /// task; a `tasks/get` or `tasks/result` showing a terminal state closes it. Returns the
    /// records to write after this one: the task's `taskEnd`, and `TASK_UNFINISHED` ends of
    /// tasks the bounded table let go.
    fn track_task(&self, call: &mut Call, verdict: &Verdict) -> Vec<Record> {
        let creates = call.method() == "tools/call" && verdict.outcome == Outcome::TaskCreated;
        let polls = matches!(call.method(), "tasks/get" | "tasks/result");
        if !creates && !polls {
            // most calls: neither the clock nor the lock
            return Vec::new();
        }
        let now = Instant::now();
        let mut out = Vec::new();
        let mut st = self.lock();
        if creates {
            let Some(id) = verdict.task_id.clone() else {
                return out;
            };
            call.record.task_id = Some(id.clone());
            let task = OpenTask {
                task_id: id,
                record_id: call.record.record_id.clone(),
                tool: call.record.tool.clone(),
                client: call.record.client.clone(),
                session_id: call.record.session_id.clone(),
                protocol_version: call.record.protocol_version.clone(),
                started: call.started,
                last_seen: now,
                polls: 0,
            };
            let evicted = st.tasks.open(task, now);
            drop(st);
            out.extend(evicted.into_iter().map(|(t, why)| self.unfinished(t, why)));
            return out;
        }
        let Some(id) = call.record.task_id.clone() else {
            return out;
        };
        let Some(t) = st.tasks.touch(&id, now) else {
            return out;
        };
        t.polls += 1;
        if !is_task_end(verdict.outcome) {
            return out;
        }
        let Some(t) = st.tasks.close(&id) else {
            return out;
        };
        drop(st);
        let mut end = self.task_end_record(&t);
        end.via_record_id = Some(call.record.record_id.clone());
        end.set_verdict(Some("tools/call"), verdict.clone());
        out.push(end);
        out
    }

    /// A `taskEnd` record for `t`, without its verdict yet.
    fn task_end_record(&self, t: &OpenTask) -> Record {
        let mut r = self.new_record(RecordKind::TaskEnd);
        r.method = Some("tools/call".to_string());
        r.tool = t.tool.clone();
        r.task_id = Some(t.task_id.clone());
        r.links_to = Some(t.record_id.clone());
        r.client = t.client.clone();
        r.session_id = t.session_id.clone();
        r.protocol_version = t.protocol_version.clone();
        r.task_polls = Some(t.polls);
        r.duration_ms = t.started.elapsed().as_secs_f64() * 1000.0;
        r
    }

    /// The end of a task the proxy stopped waiting for: no verdict, outcome
    /// `TASK_UNFINISHED`, so the call is still counted once and its record says why.
    fn unfinished(&self, t: OpenTask, why: Evicted) -> Record {
        let mut r = self.task_end_record(&t);
        r.outcome = RecordOutcome::TaskUnfinished;
        r.layer = Some(mcp_triage_core::Layer::Interaction);
        r.classified = false;
        let detail = match why {
            Evicted::Expired => format!(
                "no terminal state of task {:?} seen for {} s (--open-task-ttl)",
                t.task_id,
                self.options.open_task_ttl.as_secs()
            ),
            Evicted::Stopped => format!(
                "the proxy stopped while task {:?} was open; its end was not seen",
                t.task_id
            ),
            Evicted::Full => format!(
                "task {:?} was the least recently polled of {} open tasks (--max-open-tasks); its end will not be linked",
                t.task_id, self.options.max_open_tasks
            ),
        };
        r.warnings.push(Warning {
            code: "TASK_UNFINISHED".into(),
            detail,
        });
        r
    }

    /// A record for a client notification or answer; `in_reply_to` is filled for answers whose
    /// server request was observed.
    pub fn message_record<P>(&self, msg: &Message<P>, origin: &Origin) -> Record {
        let (kind, method, id) = match msg {
            Message::Notification { method } => {
                (RecordKind::Notification, Some(method.clone()), None)
            }
            Message::Response { id, .. } => (RecordKind::Response, None, Some(id.clone())),
            Message::Request { id, method, .. } => {
                (RecordKind::Request, Some(method.clone()), Some(id.clone()))
            }
        };
        let mut r = self.new_record(kind);
        r.method = method;
        r.session_id = self.session_id_for_log(origin);
        r.client = self.client_of(origin, &Params::default());
        let key = client_key(origin, r.client.as_ref());
        r.protocol_version = origin.protocol_version.clone();
        if let Some(id) = &id {
            if kind == RecordKind::Response {
                r.in_reply_to = self.lock().server_requests.0.remove(&(key, id.to_string()));
            }
        }
        r.id = id;
        r
    }

    /// Records a server request seen on a stream and remembers it for the client's answer.
    pub fn server_request(&self, id: Value, method: String, origin: &Origin, via: &str) {
        let mut r = self.new_record(RecordKind::ServerRequest);
        r.method = Some(method);
        r.session_id = self.session_id_for_log(origin);
        r.client = self.client_of(origin, &Params::default());
        let key = client_key(origin, r.client.as_ref());
        r.via_record_id = Some(via.to_string());
        r.outcome = RecordOutcome::Observed;
        self.lock()
            .server_requests
            .insert((key, id.to_string()), r.record_id.clone());
        r.id = Some(id);
        self.emit(r);
    }
}

/// The key under which the state tables know a client: its session, else its address and who
/// it says it is.
fn client_key(origin: &Origin, client: Option<&ClientId>) -> String {
    match &origin.session_id {
        Some(sid) => ["s:", sid].concat(),
        None => format!(
            "c:{}|{}",
            origin.peer,
            client
                .map(|c| format!("{:?}|{:?}|{:?}", c.name, c.version, c.user_agent))
                .unwrap_or_default()
        ),
    }
}

/// `n` in decimal at the end of `buf`; returns where the digits start.
fn decimal(mut n: u64, buf: &mut [u8; 20]) -> usize {
    let mut at = buf.len();
    loop {
        at -= 1;
        buf[at] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            return at;
        }
    }
}

/// Whether a `tasks/get`/`tasks/result` verdict is the task's end: its result or error (a
/// completed, failed or cancelled task, or the `-32602` of a task that is gone). Working
/// (`TASK_CREATED`), `INPUT_REQUIRED` and transport failures are not.
fn is_task_end(outcome: Outcome) -> bool {
    matches!(
        outcome,
        Outcome::ToolSuccess
            | Outcome::ToolError
            | Outcome::InvalidToolResult
            | Outcome::JsonrpcError
    )
}

/// Whether a failed attempt may have run the tool: false only when the response proves the
/// server rejected the request before executing it.
fn may_have_executed(outcome: Outcome, status: Option<u16>, code: Option<i64>) -> bool {
    match outcome {
        Outcome::HttpError => !matches!(
            status,
            Some(400 | 401 | 403 | 404 | 405 | 406 | 409 | 413 | 415 | 422 | 429)
        ),
        // Parse error, invalid request, method not found, invalid params: never dispatched.
        Outcome::JsonrpcError => !matches!(code, Some(-32700 | -32600 | -32601 | -32602)),
        _ => true,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::log::{LogWriter, MemoryConsumer};
    use serde_json::json;

    fn observer() -> (Observer, MemoryConsumer, LogWriter) {
        let mem = MemoryConsumer::default();
        let (sink, w) = LogWriter::start(None, vec![Box::new(mem.clone())]);
        (
            Observer::new(ObserveOptions::default(), sink, "http"),
            mem,
            w,
        )
    }

    fn http(status: u16) -> Verdict {
        let mut v = Verdict::new(Outcome::HttpError);
        v.status = Some(status);
        v
    }

    #[test]
    fn messages_parse() {
        let (m, batch) = parse_messages(br#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#).unwrap();
        assert!(!batch);
        assert!(matches!(&m[0], Message::Request { method, .. } if method == "ping"));
        let (m, batch) = parse_messages(
            br#"[{"jsonrpc":"2.0","method":"notifications/initialized"},{"jsonrpc":"2.0","id":"a","result":{}}]"#,
        )
        .unwrap();
        assert!(batch);
        assert_eq!(m.len(), 2);
        assert!(matches!(
            &m[1],
            Message::Response {
                is_error: false,
                ..
            }
        ));
        assert!(parse_messages(b"[]").is_none());
        assert!(parse_messages(b"{nope").is_none());
        assert!(parse_messages(br#"{"jsonrpc":"2.0"}"#).is_none());
    }

    #[test]
    fn hashes_ignore_key_order() {
        let a = arguments_hash(&json!({"a":1,"b":[1,2]}));
        let b = arguments_hash(&serde_json::from_str(r#"{"b":[1,2],"a":1}"#).unwrap());
        assert_eq!(a, b);
        assert_ne!(a.0, arguments_hash(&json!({"a":2,"b":[1,2]})).0);
    }

    #[test]
    fn retries_and_unsafe_retries() {
        let (o, mem, w) = observer();
        let origin = Origin {
            session_id: Some("S".into()),
            ..Origin::default()
        };
        let list = o.start_call(&json!(1), "tools/list", &json!({}), &origin);
        let tools = vec![
            json!({"name":"inc","annotations":{"destructiveHint":true,"idempotentHint":false}}),
            json!({"name":"read","annotations":{"readOnlyHint":true}}),
        ];
        o.finish_call(
            list,
            Verdict::new(Outcome::InvalidToolResult),
            true,
            None,
            Some(&tools),
        );
        for tool in ["inc", "read", "unknown"] {
            let p = json!({"name": tool, "arguments": {"by": 1}});
            let first = o.start_call(&json!(2), "tools/call", &p, &origin);
            o.finish_call(first, http(503), true, None, None);
            let again = o.start_call(&json!(3), "tools/call", &p, &origin);
            assert_eq!(again.record.attempt, Some(2));
            assert!(again.record.retry_of.is_some());
            let flagged = again
                .record
                .warnings
                .iter()
                .any(|w| w.code == "UNSAFE_RETRY");
            assert_eq!(flagged, tool != "read", "{tool}");
            o.finish_call(again, Verdict::new(Outcome::ToolSuccess), true, None, None);
            // After a success the same call is a new first attempt.
            let third = o.start_call(&json!(4), "tools/call", &p, &origin);
            assert_eq!(third.record.attempt, Some(1));
            o.finish_call(third, Verdict::new(Outcome::ToolSuccess), true, None, None);
        }
        // A 429 rejected the call before execution, and an idempotency key makes it safe.
        let p = json!({"name": "inc", "arguments": {}});
        let c = o.start_call(&json!(5), "tools/call", &p, &origin);
        o.finish_call(c, http(429), true, None, None);
        let c = o.start_call(&json!(6), "tools/call", &p, &origin);
        assert!(c.record.warnings.is_empty());
        o.finish_call(c, http(503), true, None, None);
        let keyed = json!({"name": "inc", "arguments": {}, "_meta": {IDEMPOTENCY_KEY: "k1"}});
        let c = o.start_call(&json!(7), "tools/call", &keyed, &origin);
        assert!(c.record.warnings.is_empty());
        o.finish_call(c, Verdict::new(Outcome::ToolSuccess), true, None, None);
        drop(o);
        w.drain();
        assert_eq!(mem.0.lock().unwrap().len(), 1 + 9 + 3);
    }

    #[test]
    fn mrtr_rounds_link_to_the_original_call() {
        let (o, mem, w) = observer();
        let origin = Origin {
            peer: "127.0.0.1".into(),
            user_agent: Some("t".into()),
            ..Origin::default()
        };
        let first = o.start_call(&json!(1), "tools/call", &json!({"name":"x"}), &origin);
        let original = first.record.record_id.clone();
        o.finish_call(
            first,
            Verdict::new(Outcome::InputRequired),
            true,
            None,
            None,
        );
        for round in 1..=2 {
            let p = json!({"name":"x","inputResponses":{"a":{}},"requestState":"s"});
            let c = o.start_call(&json!(1 + round), "tools/call", &p, &origin);
            let link = c.record.mrtr.clone().unwrap();
            assert_eq!(link.round, round as u32);
            assert_eq!(link.original_record_id, original);
            let v = if round == 1 {
                Outcome::InputRequired
            } else {
                Outcome::ToolSuccess
            };
            o.finish_call(c, Verdict::new(v), true, None, None);
        }
        drop(o);
        w.drain();
        assert_eq!(mem.0.lock().unwrap().len(), 3);
    }

    #[test]
    fn sessions_count_posts_and_answers_link() {
        let (o, mem, w) = observer();
        let none = Origin::default();
        let init = o.start_call(
            &json!(1),
            "initialize",
            &json!({"clientInfo":{"name":"c","version":"1"}}),
            &none,
        );
        o.finish_call(
            init,
            Verdict::new(Outcome::InvalidToolResult),
            true,
            Some("S1"),
            None,
        );
        let origin = Origin {
            session_id: Some("S1".into()),
            ..Origin::default()
        };
        assert_eq!(o.count_post(&origin), Some(2));
        assert_eq!(o.count_post(&origin), Some(3));
        o.server_request(json!(9), "elicitation/create".into(), &origin, "via-1");
        let answer = o.message_record(
            &Message::<Value>::Response {
                id: json!(9),
                is_error: false,
            },
            &origin,
        );
        assert!(answer.in_reply_to.is_some());
        assert_eq!(answer.client.as_ref().unwrap().name.as_deref(), Some("c"));
        drop(o);
        w.drain();
        let recs = mem.0.lock().unwrap();
        assert_eq!(recs[0].session_id.as_deref(), Some("S1"));
        assert_eq!(recs[0].outcome, "RESULT");
    }

    #[test]
    fn tables_stay_bounded() {
        let mut t = Table::new();
        for i in 0..(MAX_ENTRIES + 10) {
            t.insert(i, ());
        }
        assert_eq!(t.0.len(), MAX_ENTRIES);
    }
}
