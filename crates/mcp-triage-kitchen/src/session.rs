//! Legacy-era sessions (`Mcp-Session-Id`) and their SSE streams.
//!
//! A session pins the scenario instance chosen when it started, so a selection change
//! applies to the next session only (Cakewalk's contract); the shared state's session table
//! keeps that instance beside the session ([`crate::state::Shared::session`]), so a session,
//! which scenarios are handed, does not reach the scenario that is served. Each SSE response is written
//! into a [`StreamLog`], so a client that lost the connection after an event with an id can
//! resume with `GET` + `Last-Event-ID` (2025-11-25 polling) and read the rest.

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use bytes::Bytes;
use serde_json::Value;
use tokio::sync::{mpsc, oneshot, Notify};

use crate::instance_state::CatalogClock;

/// One chunk of an SSE response.
#[derive(Clone, Debug)]
pub enum Chunk {
    /// Bytes to write: a whole SSE event.
    Data(Bytes),
    /// Bytes that are not a whole event (a scenario's partial event, a comment): written to
    /// the reader on the original connection only; a resumption replays whole events.
    Fragment(Bytes),
    /// Break the connection here (the original connection's; a resumption skips it).
    Abort,
    /// The reader on the original POST stops here (the stream is not finished: the rest is
    /// served on resumption).
    Detach,
}

/// The events of one SSE stream, kept so a reader can resume after a given event.
pub struct StreamLog {
    /// Stream number within its session.
    pub id: u64,
    chunks: Mutex<Vec<(u64, Chunk)>>,
    done: AtomicBool,
    answered: AtomicBool,
    notify: Notify,
    /// The JSON-RPC id of the request the stream answers, once known.
    request_id: std::sync::OnceLock<serde_json::Value>,
}

impl StreamLog {
    /// An empty, open stream.
    pub fn new(id: u64) -> StreamLog {
        StreamLog {
            id,
            chunks: Mutex::new(Vec::new()),
            done: AtomicBool::new(false),
            answered: AtomicBool::new(false),
            notify: Notify::new(),
            request_id: std::sync::OnceLock::new(),
        }
    }

    /// Remember which request the stream answers (the first id set stays).
    pub fn set_request_id(&self, id: serde_json::Value) {
        let _ = self.request_id.set(id);
    }

    /// The JSON-RPC id of the request the stream answers, if known.
    pub fn request_id(&self) -> Option<serde_json::Value> {
        self.request_id.get().cloned()
    }

    /// The JSON-RPC response is in the log (a resumption can still deliver it).
    pub fn mark_answered(&self) {
        self.answered.store(true, Ordering::SeqCst);
    }

    /// Whether a resumption after event `seq` has nothing left to give: the stream is
    /// finished, its response was never written, and no event follows `seq`. Such a stream
    /// is gone, and the kitchen says so rather than ending the resumption cleanly again,
    /// which a 2025-11-25 client may take for polling and retry forever.
    pub fn is_gone_after(&self, seq: u64) -> bool {
        if !self.done.load(Ordering::SeqCst) || self.answered.load(Ordering::SeqCst) {
            return false;
        }
        let start = self.position_after(seq);
        let chunks = self.chunks.lock().expect("stream lock");
        !chunks[start.min(chunks.len())..]
            .iter()
            .any(|(_, c)| matches!(c, Chunk::Data(_)))
    }

    /// Append a chunk. `seq` is the SSE event sequence number (0 for chunks without id).
    pub fn push(&self, seq: u64, chunk: Chunk) {
        self.chunks.lock().expect("stream lock").push((seq, chunk));
        self.notify.notify_waiters();
    }

    /// No more chunks will come.
    pub fn finish(&self) {
        self.done.store(true, Ordering::SeqCst);
        self.notify.notify_waiters();
    }

    /// Index of the first chunk after the event with sequence number `seq`.
    pub fn position_after(&self, seq: u64) -> usize {
        let chunks = self.chunks.lock().expect("stream lock");
        chunks
            .iter()
            .position(|(s, _)| *s == seq)
            .map(|p| p + 1)
            .unwrap_or(chunks.len())
    }

    /// Wait for the chunk at `index`; `None` when the stream is finished before it.
    pub async fn next(&self, index: usize) -> Option<Chunk> {
        loop {
            let notified = self.notify.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            {
                let chunks = self.chunks.lock().expect("stream lock");
                if let Some((_, c)) = chunks.get(index) {
                    return Some(c.clone());
                }
            }
            if self.done.load(Ordering::SeqCst) {
                let chunks = self.chunks.lock().expect("stream lock");
                return chunks.get(index).map(|(_, c)| c.clone());
            }
            notified.await;
        }
    }
}

/// A legacy session.
pub struct Session {
    /// The `Mcp-Session-Id`.
    pub id: String,
    /// Negotiated protocol version.
    pub protocol_version: String,
    /// Capabilities the client declared in `initialize`.
    pub client_capabilities: Value,
    /// Client identity from `initialize`.
    pub client_info: Value,
    /// Level set with `logging/setLevel`.
    pub log_level: Mutex<Option<String>>,
    /// Set by DELETE or by a scenario; a terminated session answers 404.
    pub terminated: AtomicBool,
    /// POSTs seen in this session (for `session.expire`).
    pub requests: AtomicU64,
    /// Server→client requests waiting for the client's answer, by JSON-RPC id.
    pub pending: Mutex<HashMap<String, oneshot::Sender<Value>>>,
    /// SSE streams of the session, by stream number.
    pub streams: Mutex<HashMap<u64, Arc<StreamLog>>>,
    next_stream: AtomicU64,
    next_request: AtomicU64,
    /// Resource URIs the client subscribed to.
    pub subscriptions: Mutex<HashSet<String>>,
    /// Sender of the standalone GET stream, when one is open.
    pub get_stream: Mutex<Option<mpsc::UnboundedSender<Value>>>,
    /// Recency stamp for LRU eviction when the session table is full.
    pub(crate) last_used: AtomicU64,
    /// When the session started: the origin of its catalogue timeline (`catalog.mutation`).
    pub started: std::time::Instant,
}

impl Session {
    /// A new session.
    pub fn new(id: String, protocol_version: String, caps: Value, info: Value) -> Session {
        Session {
            id,
            protocol_version,
            client_capabilities: caps,
            client_info: info,
            log_level: Mutex::new(None),
            terminated: AtomicBool::new(false),
            requests: AtomicU64::new(0),
            pending: Mutex::new(HashMap::new()),
            streams: Mutex::new(HashMap::new()),
            next_stream: AtomicU64::new(1),
            next_request: AtomicU64::new(1),
            subscriptions: Mutex::new(HashSet::new()),
            get_stream: Mutex::new(None),
            started: std::time::Instant::now(),
            last_used: AtomicU64::new(0),
        }
    }

    /// Open a new stream log (kept for resumption; older finished logs are dropped so a
    /// long session does not grow without bound).
    pub fn open_stream(&self) -> Arc<StreamLog> {
        let id = self.next_stream.fetch_add(1, Ordering::SeqCst);
        let log = Arc::new(StreamLog::new(id));
        let mut streams = self.streams.lock().expect("streams lock");
        if streams.len() >= 64 {
            let oldest = streams.keys().min().copied();
            if let Some(k) = oldest {
                streams.remove(&k);
            }
        }
        streams.insert(id, log.clone());
        log
    }

    /// Stream log by number.
    pub fn stream(&self, id: u64) -> Option<Arc<StreamLog>> {
        self.streams.lock().expect("streams lock").get(&id).cloned()
    }

    /// A fresh id for a server→client request.
    pub fn next_request_id(&self) -> String {
        format!(
            "kitchen-{}",
            self.next_request.fetch_add(1, Ordering::SeqCst)
        )
    }

    /// True once terminated.
    pub fn is_terminated(&self) -> bool {
        self.terminated.load(Ordering::SeqCst)
    }

    /// The session's catalogue clock.
    pub fn clock(&self) -> CatalogClock {
        CatalogClock {
            started: Some(self.started),
        }
    }

    /// Send a notification on the standalone GET stream; false when none is open.
    pub fn push_get_stream(&self, msg: Value) -> bool {
        let mut g = self.get_stream.lock().expect("get stream lock");
        match g.as_ref() {
            Some(tx) if tx.send(msg).is_ok() => true,
            Some(_) => {
                *g = None;
                false
            }
            None => false,
        }
    }

    /// Whether the client declared capability `name` in `initialize`.
    pub fn has_capability(&self, name: &str) -> bool {
        self.client_capabilities.get(name).is_some()
    }
}
