//! The live view (`proxy --ui ADDR`, `wrap --ui ADDR`): a second listener, apart from the
//! proxied traffic, serving
//!
//! - `GET /`: one page (HTML, CSS, JS and SVG inline, nothing fetched from elsewhere) showing
//!   calls by tool and layer, recent failures with their verdict detail, retries and unsafe
//!   retries;
//! - `GET /events`: Server-Sent Events, a `snapshot` event and then one `record` event per
//!   finished record;
//! - `GET /metrics`: the Prometheus text exposition of [`metrics`].
//!
//! Why it hangs off the record writer ([`UiConsumer`] is a [`RecordConsumer`]): records are
//! finished there, off the forwarding path, so the view costs the forwarding thread nothing,
//! and without `--ui` no consumer exists and nothing at all is done. Each `/events` client has a
//! bounded queue filled with `try_send`: a client that does not keep up is dropped (its browser
//! reconnects and gets a fresh snapshot) rather than slowing the writer or growing memory.
//!
//! The listener applies the proxy's DNS-rebinding check ([`crate::guard`]): the page shows
//! tool names and failure details, which a page on another site must not read by rebinding its
//! name to 127.0.0.1.

pub mod metrics;

use std::collections::VecDeque;
use std::convert::Infallible;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use http::{header, HeaderValue, Method, Request, Response, StatusCode};
use http_body::{Body, Frame};
use hyper::body::Incoming;
use hyper::server::conn::http1;
use hyper_util::rt::{TokioIo, TokioTimer};
use serde_json::{json, Map, Value};
use tokio::net::TcpListener;
use tokio::sync::{mpsc, watch};

use crate::guard::HostPolicy;
use crate::http::{HostCheck, ProxyError};
use crate::log::RecordConsumer;
use crate::record::Record;
use metrics::{is_unsafe_retry, CallLabels, Metrics, MetricsOptions};

/// The page, built into the binary.
pub const PAGE: &str = include_str!("page.html");

/// Default of [`UiOptions::recent`].
pub const DEFAULT_RECENT: usize = 50;

/// Default of [`UiOptions::client_queue`].
pub const DEFAULT_CLIENT_QUEUE: usize = 1024;

/// Default of [`UiOptions::max_clients`].
pub const DEFAULT_MAX_CLIENTS: usize = 32;

/// Connections the UI listener holds open besides `/events` streams (page and `/metrics`
/// requests in flight); past `max_clients` plus this, new connections are closed at once.
const SPARE_CONNECTIONS: usize = 32;

/// How long a UI connection may take to send its request headers.
const HEADER_READ_TIMEOUT: Duration = Duration::from_secs(10);

/// How often an idle `/events` stream gets a comment line, so that intermediaries keep it and a
/// client that went away is noticed (the write fails).
const KEEPALIVE: Duration = Duration::from_secs(15);

/// Outcomes of records that are not failures: a tool result, a result to another method,
/// acknowledgements, and the interaction outcomes a client is expected to follow up.
const NOT_FAILURES: [&str; 8] = [
    "TOOL_SUCCESS",
    "RESULT",
    "ACCEPTED",
    "OBSERVED",
    "FORWARDED",
    "SENT",
    "INPUT_REQUIRED",
    "TASK_CREATED",
];

/// Limits of the live view.
#[derive(Debug, Clone)]
pub struct UiOptions {
    /// The `server` label and the page's title (the upstream, or the wrapped command).
    pub server: String,
    /// Distinct tool names with their own series and rows; later ones count as `other`.
    pub max_tools: usize,
    /// Recent failures (and recent retries) kept for the snapshot.
    pub recent: usize,
    /// Events queued per `/events` client; a client whose queue is full is dropped.
    pub client_queue: usize,
    /// `/events` clients at once; past it a new one gets a 503.
    pub max_clients: usize,
}

impl UiOptions {
    /// The defaults, for `server`.
    pub fn new(server: impl Into<String>) -> UiOptions {
        UiOptions {
            server: server.into(),
            max_tools: metrics::DEFAULT_MAX_TOOLS,
            recent: DEFAULT_RECENT,
            client_queue: DEFAULT_CLIENT_QUEUE,
            max_clients: DEFAULT_MAX_CLIENTS,
        }
    }
}

/// What the view knows, shared by the record writer and the UI listener.
struct Live {
    options: UiOptions,
    metrics: Metrics,
    records: u64,
    recent_failures: VecDeque<Value>,
    recent_retries: VecDeque<Value>,
    subscribers: Vec<mpsc::Sender<Bytes>>,
    /// The record writer closed: no more records, no new subscribers.
    closed: bool,
}

/// The live view's state; cheap to clone (one for the writer's consumer, one for the server).
#[derive(Clone)]
pub struct UiHub(Arc<Mutex<Live>>);

/// Why `/events` refused a client.
#[derive(Debug, PartialEq, Eq)]
pub enum SubscribeError {
    /// `max_clients` clients are connected.
    Full(usize),
    /// The proxy is stopping.
    Closed,
}

impl UiHub {
    /// An empty view.
    pub fn new(options: UiOptions) -> UiHub {
        let metrics = Metrics::new(MetricsOptions {
            server: options.server.clone(),
            max_tools: options.max_tools,
        });
        UiHub(Arc::new(Mutex::new(Live {
            options,
            metrics,
            records: 0,
            recent_failures: VecDeque::new(),
            recent_retries: VecDeque::new(),
            subscribers: Vec::new(),
            closed: false,
        })))
    }

    fn lock(&self) -> MutexGuard<'_, Live> {
        // A panic while holding the lock leaves counters that are still counters.
        self.0.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The consumer to hand to [`crate::LogWriter::start`].
    pub fn consumer(&self) -> UiConsumer {
        UiConsumer(self.clone())
    }

    /// Counts a finished record and sends it to every `/events` client.
    pub fn record(&self, record: &Record) {
        let mut live = self.lock();
        let live = &mut *live;
        live.records += 1;
        let labels = live.metrics.observe(record);
        // A poll that shows a task's failed end is not a failure of its own: the task's
        // `taskEnd` record (written next) is, once.
        let reported_by_end = record.links_to.is_some()
            && matches!(record.method.as_deref(), Some("tasks/get" | "tasks/result"));
        let failure = !NOT_FAILURES.contains(&record.outcome.as_str()) && !reported_by_end;
        let retry = labels.is_some() && record.retry_of.is_some();
        if !failure && !retry && live.subscribers.is_empty() {
            return;
        }
        let event = record_event(record, labels.as_ref(), failure);
        let limit = live.options.recent;
        for (keep, list) in [
            (failure, &mut live.recent_failures),
            (retry, &mut live.recent_retries),
        ] {
            if keep && limit > 0 {
                if list.len() == limit {
                    list.pop_front();
                }
                list.push_back(event.clone());
            }
        }
        if live.subscribers.is_empty() {
            return;
        }
        let frame = Bytes::from(format!("event: record\ndata: {event}\n\n"));
        let mut dropped = 0;
        live.subscribers
            .retain(|s| match s.try_send(frame.clone()) {
                Ok(()) => true,
                Err(mpsc::error::TrySendError::Full(_)) => {
                    dropped += 1;
                    false
                }
                Err(mpsc::error::TrySendError::Closed(_)) => false,
            });
        live.metrics.clients_dropped += dropped;
    }

    /// Ends every `/events` stream and refuses new ones (the writer drained its last record).
    pub fn close(&self) {
        let mut live = self.lock();
        live.closed = true;
        live.subscribers.clear();
    }

    /// The `snapshot` event as JSON: counts so far and the recent failures and retries.
    pub fn snapshot(&self) -> Value {
        snapshot(&self.lock())
    }

    /// A new `/events` client: its first frame (the snapshot) and the queue of its record
    /// frames. The snapshot is taken under the same lock that adds the client, so the client
    /// sees every record exactly once, either counted in the snapshot or as an event.
    pub fn subscribe(&self) -> Result<(Bytes, mpsc::Receiver<Bytes>), SubscribeError> {
        let mut live = self.lock();
        if live.closed {
            return Err(SubscribeError::Closed);
        }
        live.subscribers.retain(|s| !s.is_closed());
        if live.subscribers.len() >= live.options.max_clients {
            return Err(SubscribeError::Full(live.options.max_clients));
        }
        let (tx, rx) = mpsc::channel(live.options.client_queue.max(1));
        live.subscribers.push(tx);
        let first = format!(
            "retry: 2000\nevent: snapshot\ndata: {}\n\n",
            snapshot(&live)
        );
        Ok((Bytes::from(first), rx))
    }

    /// `/events` clients connected now.
    pub fn clients(&self) -> usize {
        let mut live = self.lock();
        live.subscribers.retain(|s| !s.is_closed());
        live.subscribers.len()
    }

    /// The Prometheus text exposition.
    pub fn metrics_text(&self) -> String {
        self.lock().metrics.render()
    }
}

fn snapshot(live: &Live) -> Value {
    let calls: Vec<Value> = live
        .metrics
        .calls()
        .map(|((tool, layer, outcome), n)| {
            json!({ "tool": tool, "layer": layer, "outcome": outcome, "count": n })
        })
        .collect();
    json!({
        "server": live.metrics.server(),
        "records": live.records,
        "calls": calls,
        "retries": live.metrics.retries(),
        "unsafeRetries": live.metrics.unsafe_retries(),
        "recentFailures": live.recent_failures,
        "recentRetries": live.recent_retries,
        "clientsDropped": live.metrics.clients_dropped,
        "limits": {
            "maxTools": live.options.max_tools,
            "recent": live.options.recent,
        },
    })
}

/// What the page needs of one record: for a `tools/call`, the labels it was counted under.
fn record_event(record: &Record, labels: Option<&CallLabels>, failure: bool) -> Value {
    let mut e = Map::new();
    e.insert("recordId".into(), json!(record.record_id));
    e.insert("time".into(), json!(record.time));
    e.insert("kind".into(), json!(record.kind));
    e.insert("method".into(), json!(record.method));
    e.insert("outcome".into(), json!(record.outcome));
    e.insert("layer".into(), json!(record.layer));
    e.insert("durationMs".into(), json!(record.duration_ms));
    e.insert("httpStatus".into(), json!(record.http_statuses.first()));
    e.insert("failure".into(), json!(failure));
    e.insert("call".into(), json!(labels.is_some()));
    if let Some(l) = labels {
        e.insert("tool".into(), json!(l.tool));
        e.insert("layer".into(), json!(l.layer));
    }
    if let Some(r) = &record.retry_of {
        e.insert("retryOf".into(), json!(r));
        e.insert("attempt".into(), json!(record.attempt));
    }
    let unsafe_retry = labels.is_some() && is_unsafe_retry(record);
    e.insert("unsafeRetry".into(), json!(unsafe_retry));
    if let Some(w) = record.warnings.iter().find(|w| w.code == "UNSAFE_RETRY") {
        e.insert("unsafeDetail".into(), json!(w.detail));
    }
    let detail = record.verdict.as_ref().and_then(|v| {
        v.detail.clone().or_else(|| {
            v.message
                .as_ref()
                .map(|m| format!("{}: {m}", v.code.map_or(String::new(), |c| c.to_string())))
        })
    });
    let detail = detail.or_else(|| record.warnings.first().map(|w| w.detail.clone()));
    e.insert("detail".into(), json!(detail));
    Value::Object(e)
}

/// Feeds the live view from the record writer.
pub struct UiConsumer(UiHub);

impl RecordConsumer for UiConsumer {
    fn consume(&mut self, record: &Record) {
        self.0.record(record);
    }

    fn close(&mut self) {
        self.0.close();
    }
}

/// Which requests the UI listener serves: the proxy's `Host`/`Origin` settings, and a token.
#[derive(Clone)]
pub struct UiGuard {
    /// When to check `Host` and `Origin`. Auto means always, wherever the view listens: on a
    /// non-loopback address it must be reached by a name given with `allowed_hosts` (or its
    /// own IP), since the page shows tool names and failure details.
    pub host_check: HostCheck,
    /// Host names accepted besides loopback ones.
    pub allowed_hosts: Vec<String>,
    /// Origins accepted besides loopback ones.
    pub allowed_origins: Vec<String>,
    /// When set, every request needs `Authorization: Bearer TOKEN` or `?token=TOKEN` (the
    /// page passes its own query on to `/events`, since EventSource sends no headers).
    pub token: Option<String>,
}

impl std::fmt::Debug for UiGuard {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("UiGuard")
            .field("host_check", &self.host_check)
            .field("allowed_hosts", &self.allowed_hosts)
            .field("allowed_origins", &self.allowed_origins)
            .field("token", &self.token.as_ref().map(|_| "…"))
            .finish()
    }
}

impl Default for UiGuard {
    fn default() -> UiGuard {
        UiGuard {
            host_check: HostCheck::Auto,
            allowed_hosts: Vec::new(),
            allowed_origins: Vec::new(),
            token: None,
        }
    }
}

/// The warning to print when the view listens on `addr`: `Some` for a non-loopback address
/// without a token, where anyone who reaches it reads tool names and failure details.
pub fn exposure_warning(addr: SocketAddr, guard: &UiGuard) -> Option<String> {
    if addr.ip().is_loopback() || guard.token.is_some() {
        return None;
    }
    Some(format!(
        "warning: the live view listens on {addr}, which is not a loopback address, without --ui-token: \
         anyone who can reach it and name an allowed host reads tool names and failure details \
         (set --ui-token, or MCP_TRIAGE_UI_TOKEN)"
    ))
}

/// Whether `req` carries the token, as a Bearer header or a `token` query parameter; compared
/// in constant time so the answer's timing says nothing about the token.
fn has_token<B>(req: &Request<B>, token: &str) -> bool {
    let header = req
        .headers()
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "));
    let query = req
        .uri()
        .query()
        .and_then(|q| q.split('&').find_map(|kv| kv.strip_prefix("token=")));
    [header, query]
        .into_iter()
        .flatten()
        .any(|given| constant_time_eq(given.as_bytes(), token.as_bytes()))
}

fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// The running UI listener.
pub struct UiHandle {
    addr: SocketAddr,
    stop: watch::Sender<bool>,
    task: tokio::task::JoinHandle<()>,
}

impl UiHandle {
    /// The address it listens on.
    pub fn local_addr(&self) -> SocketAddr {
        self.addr
    }

    /// `http://addr/`.
    pub fn url(&self) -> String {
        format!("http://{}/", self.addr)
    }

    /// Stops accepting connections (open `/events` streams end when the hub closes).
    pub async fn shutdown(self) {
        let _ = self.stop.send(true);
        let _ = self.task.await;
    }
}

struct Server {
    hub: UiHub,
    policy: Option<HostPolicy>,
    token: Option<String>,
}

/// Whether the view checks `Host` and `Origin`: unless told not to, always, not only on
/// loopback as the proxy's own listener does (a proxy beyond loopback serves remote clients by
/// design; the view, which shows what those clients did, serves its named operators only).
fn checks_host(host_check: HostCheck) -> bool {
    !matches!(host_check, HostCheck::Off)
}

/// Starts the UI listener on `listen`.
pub async fn start(listen: SocketAddr, hub: UiHub, guard: UiGuard) -> Result<UiHandle, ProxyError> {
    let listener = TcpListener::bind(listen)
        .await
        .map_err(|e| ProxyError::Listen(listen, e))?;
    let addr = listener
        .local_addr()
        .map_err(|e| ProxyError::Listen(listen, e))?;
    let check = checks_host(guard.host_check);
    let max_connections = hub.lock().options.max_clients + SPARE_CONNECTIONS;
    let server = Arc::new(Server {
        hub,
        policy: check.then(|| HostPolicy {
            allowed_hosts: guard.allowed_hosts,
            allowed_origins: guard.allowed_origins,
            listen_ip: Some(addr.ip()),
        }),
        token: guard.token,
    });
    let (stop, mut stop_rx) = watch::channel(false);
    let open = Arc::new(AtomicUsize::new(0));
    let task = tokio::spawn(async move {
        loop {
            tokio::select! {
                accepted = listener.accept() => {
                    let Ok((stream, _)) = accepted else {
                        tokio::time::sleep(Duration::from_millis(20)).await;
                        continue;
                    };
                    if open.load(Ordering::Relaxed) >= max_connections {
                        // Closed at once: the view is a convenience, never worth a descriptor
                        // the proxied traffic may need.
                        continue;
                    }
                    open.fetch_add(1, Ordering::Relaxed);
                    let server = server.clone();
                    let open = open.clone();
                    tokio::spawn(async move {
                        let service = hyper::service::service_fn(move |req| {
                            let server = server.clone();
                            async move { Ok::<_, Infallible>(serve(&server, req)) }
                        });
                        let _ = http1::Builder::new()
                            .timer(TokioTimer::new())
                            .header_read_timeout(HEADER_READ_TIMEOUT)
                            .serve_connection(TokioIo::new(stream), service)
                            .await;
                        open.fetch_sub(1, Ordering::Relaxed);
                    });
                }
                _ = stop_rx.changed() => break,
            }
        }
    });
    Ok(UiHandle { addr, stop, task })
}

fn serve(server: &Server, req: Request<Incoming>) -> Response<UiBody> {
    if let Some(policy) = &server.policy {
        let host = req.headers().get(header::HOST).map(|v| v.as_bytes());
        let origin = req.headers().get(header::ORIGIN).map(|v| v.as_bytes());
        if let Err(refusal) = policy.check(host, origin) {
            return text(StatusCode::FORBIDDEN, refusal.reason);
        }
    }
    if let Some(token) = &server.token {
        if !has_token(&req, token) {
            let mut r = text(
                StatusCode::UNAUTHORIZED,
                "this live view needs its token: Authorization: Bearer TOKEN, or ?token=TOKEN"
                    .to_string(),
            );
            r.headers_mut().insert(
                header::WWW_AUTHENTICATE,
                HeaderValue::from_static("Bearer realm=\"mcp-triage live view\""),
            );
            return r;
        }
    }
    if req.method() != Method::GET {
        let mut r = text(
            StatusCode::METHOD_NOT_ALLOWED,
            format!("{} is not served here: use GET", req.method()),
        );
        r.headers_mut()
            .insert(header::ALLOW, HeaderValue::from_static("GET"));
        return r;
    }
    match req.uri().path() {
        "/" | "/index.html" => {
            let mut r = Response::new(UiBody::full(PAGE));
            let h = r.headers_mut();
            h.insert(
                header::CONTENT_TYPE,
                HeaderValue::from_static("text/html; charset=utf-8"),
            );
            // Everything the page needs is inline; it may talk to this listener only.
            h.insert(
                header::CONTENT_SECURITY_POLICY,
                HeaderValue::from_static(
                    "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; img-src data:; connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
                ),
            );
            h.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
            no_store(r)
        }
        "/metrics" => {
            let mut r = Response::new(UiBody::full(server.hub.metrics_text()));
            r.headers_mut().insert(
                header::CONTENT_TYPE,
                HeaderValue::from_static("text/plain; version=0.0.4; charset=utf-8"),
            );
            no_store(r)
        }
        "/events" => match server.hub.subscribe() {
            Ok((first, rx)) => {
                let mut r = Response::new(UiBody::Events(Box::new(EventStream::new(first, rx))));
                let h = r.headers_mut();
                h.insert(
                    header::CONTENT_TYPE,
                    HeaderValue::from_static("text/event-stream"),
                );
                h.insert("x-accel-buffering", HeaderValue::from_static("no"));
                no_store(r)
            }
            Err(SubscribeError::Full(n)) => text(
                StatusCode::SERVICE_UNAVAILABLE,
                format!("{n} live-view clients are connected (--ui-max-clients); try again later"),
            ),
            Err(SubscribeError::Closed) => text(
                StatusCode::SERVICE_UNAVAILABLE,
                "the proxy is stopping".to_string(),
            ),
        },
        other => text(
            StatusCode::NOT_FOUND,
            format!("{other:?} is not served here: try /, /events or /metrics"),
        ),
    }
}

fn no_store(mut r: Response<UiBody>) -> Response<UiBody> {
    let h = r.headers_mut();
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    h.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    r
}

fn text(status: StatusCode, body: String) -> Response<UiBody> {
    let mut r = Response::new(UiBody::full(body + "\n"));
    *r.status_mut() = status;
    r.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    no_store(r)
}

/// A UI response body: a whole text, or an `/events` stream.
pub enum UiBody {
    /// The whole body (taken when sent).
    Full(Option<Bytes>),
    /// An SSE stream.
    Events(Box<EventStream>),
}

impl UiBody {
    fn full(b: impl Into<Bytes>) -> UiBody {
        UiBody::Full(Some(b.into()))
    }
}

/// An `/events` stream: the snapshot, then queued record frames, with a comment line when it
/// was quiet for [`KEEPALIVE`].
pub struct EventStream {
    first: Option<Bytes>,
    rx: mpsc::Receiver<Bytes>,
    keepalive: tokio::time::Interval,
}

impl EventStream {
    fn new(first: Bytes, rx: mpsc::Receiver<Bytes>) -> EventStream {
        let mut keepalive =
            tokio::time::interval_at(tokio::time::Instant::now() + KEEPALIVE, KEEPALIVE);
        keepalive.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        EventStream {
            first: Some(first),
            rx,
            keepalive,
        }
    }
}

impl Body for UiBody {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        match self.get_mut() {
            UiBody::Full(b) => Poll::Ready(b.take().map(|b| Ok(Frame::data(b)))),
            UiBody::Events(s) => {
                if let Some(first) = s.first.take() {
                    return Poll::Ready(Some(Ok(Frame::data(first))));
                }
                match s.rx.poll_recv(cx) {
                    Poll::Ready(Some(frame)) => {
                        s.keepalive.reset();
                        Poll::Ready(Some(Ok(Frame::data(frame))))
                    }
                    // Dropped as too slow, or the proxy stopped: the stream ends.
                    Poll::Ready(None) => Poll::Ready(None),
                    Poll::Pending => match s.keepalive.poll_tick(cx) {
                        Poll::Ready(_) => Poll::Ready(Some(Ok(Frame::data(Bytes::from_static(
                            b": keepalive\n\n",
                        ))))),
                        Poll::Pending => Poll::Pending,
                    },
                }
            }
        }
    }

    fn is_end_stream(&self) -> bool {
        matches!(self, UiBody::Full(None))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::{rfc3339, RecordKind};

    fn call(id: &str, tool: &str, outcome: &str) -> Record {
        let mut r = Record::new(id.into(), rfc3339(0), RecordKind::Request, "http");
        r.method = Some("tools/call".into());
        r.tool = Some(tool.into());
        r.outcome = outcome.parse().expect("a record outcome");
        r.layer = Some(mcp_triage_core::Layer::Application);
        r
    }

    #[test]
    fn a_slow_client_is_dropped_and_the_others_keep_their_events() {
        let mut o = UiOptions::new("s");
        o.client_queue = 2;
        let hub = UiHub::new(o);
        let (_, mut fast) = hub.subscribe().unwrap();
        let (_, _slow) = hub.subscribe().unwrap();
        for i in 0..2 {
            hub.record(&call(&i.to_string(), "t", "TOOL_SUCCESS"));
            assert!(fast.try_recv().is_ok());
        }
        assert_eq!(hub.clients(), 2);
        // The slow client's queue (2) is full: the third record drops it, not the fast one.
        hub.record(&call("2", "t", "TOOL_SUCCESS"));
        assert!(fast.try_recv().is_ok());
        assert_eq!(hub.clients(), 1);
        assert!(hub
            .metrics_text()
            .contains("mcp_triage_ui_clients_dropped_total{server=\"s\"} 1"));
    }

    #[test]
    fn the_snapshot_holds_what_came_before_and_events_what_came_after() {
        let mut o = UiOptions::new("s");
        o.recent = 2;
        let hub = UiHub::new(o);
        for i in 0..3 {
            hub.record(&call(&i.to_string(), "t", "TOOL_ERROR"));
        }
        let (first, mut rx) = hub.subscribe().unwrap();
        let first = std::str::from_utf8(&first).unwrap();
        let data = first
            .lines()
            .find_map(|l| l.strip_prefix("data: "))
            .unwrap();
        let snap: Value = serde_json::from_str(data).unwrap();
        assert!(first.contains("event: snapshot\n"));
        assert_eq!(snap["calls"][0]["count"], 3);
        // Only the last `recent` failures are kept.
        let ids: Vec<&str> = snap["recentFailures"]
            .as_array()
            .unwrap()
            .iter()
            .map(|f| f["recordId"].as_str().unwrap())
            .collect();
        assert_eq!(ids, ["1", "2"]);
        hub.record(&call("3", "t", "TOOL_SUCCESS"));
        let frame = rx.try_recv().unwrap();
        let frame = std::str::from_utf8(&frame).unwrap();
        assert!(frame.starts_with("event: record\ndata: {"), "{frame}");
        assert!(frame.contains("\"recordId\":\"3\""));
        hub.close();
        assert_eq!(hub.subscribe().err(), Some(SubscribeError::Closed));
    }

    async fn status(addr: SocketAddr, path: &str, extra: &str) -> u16 {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let mut s = tokio::net::TcpStream::connect(addr).await.unwrap();
        let req =
            format!("GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\n{extra}Connection: close\r\n\r\n");
        s.write_all(req.as_bytes()).await.unwrap();
        let mut out = Vec::new();
        s.read_to_end(&mut out).await.unwrap();
        String::from_utf8_lossy(&out)[9..12].parse().unwrap()
    }

    #[tokio::test]
    async fn a_token_guards_every_path_as_a_bearer_header_or_a_query() {
        let hub = UiHub::new(UiOptions::new("s"));
        let guard = UiGuard {
            token: Some("canary-ui-token".into()),
            ..UiGuard::default()
        };
        let ui = start("127.0.0.1:0".parse().unwrap(), hub, guard)
            .await
            .unwrap();
        let a = ui.local_addr();
        for path in ["/", "/metrics", "/events"] {
            assert_eq!(status(a, path, "").await, 401, "{path}");
            assert_eq!(status(a, &format!("{path}?token=wrong"), "").await, 401);
            assert_eq!(
                status(a, path, "Authorization: Bearer wrong\r\n").await,
                401
            );
        }
        assert_eq!(
            status(a, "/metrics", "Authorization: Bearer canary-ui-token\r\n").await,
            200
        );
        assert_eq!(status(a, "/?token=canary-ui-token", "").await, 200);
        ui.shutdown().await;
    }

    #[test]
    fn the_host_check_applies_by_default_wherever_the_view_listens() {
        // Auto used to mean "only on a loopback address", leaving a view on 0.0.0.0 unchecked.
        assert!(checks_host(HostCheck::Auto));
        assert!(!checks_host(HostCheck::Off));
        assert!(checks_host(HostCheck::On));
    }

    #[test]
    fn a_view_beyond_loopback_without_a_token_is_warned_about() {
        let g = UiGuard::default();
        assert!(exposure_warning("127.0.0.1:1".parse().unwrap(), &g).is_none());
        assert!(exposure_warning("[::1]:1".parse().unwrap(), &g).is_none());
        let w = exposure_warning("0.0.0.0:9".parse().unwrap(), &g).unwrap();
        assert!(
            w.contains("not a loopback address") && w.contains("--ui-token"),
            "{w}"
        );
        let t = UiGuard {
            token: Some("t".into()),
            ..UiGuard::default()
        };
        assert!(exposure_warning("0.0.0.0:9".parse().unwrap(), &t).is_none());
        assert!(!format!("{t:?}").contains("\"t\""));
    }

    #[test]
    fn clients_past_the_limit_are_refused() {
        let mut o = UiOptions::new("s");
        o.max_clients = 1;
        let hub = UiHub::new(o);
        let kept = hub.subscribe().unwrap();
        assert_eq!(hub.subscribe().err(), Some(SubscribeError::Full(1)));
        drop(kept);
        assert!(hub.subscribe().is_ok());
    }
}
