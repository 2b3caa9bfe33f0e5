//! The HTTP observer: a reverse proxy in front of one upstream origin.
//!
//! Forwarding comes first: every request goes upstream with its method, path and query, its
//! end-to-end headers, and its body streamed frame by frame; every response comes back the same
//! way. The observer only *taps* those frames: the request body is copied (bounded) to read the
//! JSON-RPC message, the response body is fed to the core's [`ResponseClassifier`] as it passes.
//! Neither tap can hold a frame back or change it, and a classification limit only stops the
//! classifier, never the stream.
//!
//! Upstreams: `http://` or `https://`. An https upstream is reached over TLS (rustls, TLS 1.2
//! and 1.3, ALPN `http/1.1`), its certificate checked against Mozilla's roots (webpki-roots,
//! so the machine's certificate store plays no part) plus any `--upstream-ca` certificates;
//! a certificate that does not verify is a connection error (`502`, `CONNECTION_ERROR` naming
//! the reason), never a silent fallback. The client side stays plain HTTP: run the proxy next to
//! the client, or put it behind a TLS terminator.
//!
//! Connections: the client's disconnect drops the response body, which drops the upstream body
//! and so closes the upstream connection (HTTP/1 cannot reuse it mid-response) — the 2026-07-28
//! way to cancel a request. An upstream that cannot be reached gets the client a `502`; one that
//! accepted the request and closed without a response gets the client's connection closed the
//! same way, so the client sees what it would have seen without the proxy.

use std::future::Future;
use std::io;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, Wake, Waker};
use std::time::{Duration, Instant};

use bytes::Bytes;
use http::header::{self, HeaderMap, HeaderName, HeaderValue};
use http::uri::Authority;
use http::{Method, Request, Response, StatusCode, Uri};
use http_body::{Body, Frame, SizeHint};
use http_body_util::BodyExt;
use hyper::body::Incoming;
use hyper::client::conn::http1 as client_http1;
use hyper::server::conn::http1;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::server::graceful::GracefulShutdown;
use mcp_triage_core::sse::{Flow, SseItem, SseParser};
use mcp_triage_core::{
    classify, CallContext, Interruption, ProtocolVersion, RequestId, RequestKind, RequestSession,
    ResponseClassifier, ResponseHead, StreamEvent, Verdict,
};
use serde_json::Value;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::tcp::{OwnedReadHalf, OwnedWriteHalf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{mpsc, oneshot, watch};
use tokio::task::JoinSet;
use tokio_rustls::rustls::pki_types::{CertificateDer, ServerName};
use tokio_rustls::TlsConnector;

use crate::capture::{Capture, CaptureEnd, ExchangeCapture};
use crate::guard::{redact_query, HostPolicy, Refusal};
use crate::observe::{parse_messages, Call, Message, ObserveOptions, Observer, Origin};
use crate::record::{Record, RecordKind};
use crate::RecordSink;

/// Hop-by-hop header names (RFC 9110 §7.6.1), removed in both directions besides those the
/// `Connection` header lists. `HeaderName`s rather than strings, as are [`MCP_SESSION_ID`] and
/// [`MCP_PROTOCOL_VERSION`]: a `HeaderMap` looked up by a string parses and checks the name on
/// every call, which was about 2% of the proxy's instructions per exchange.
static HOP_BY_HOP: [HeaderName; 7] = [
    header::CONNECTION,
    HeaderName::from_static("proxy-connection"),
    HeaderName::from_static("keep-alive"),
    header::TE,
    header::TRAILER,
    header::TRANSFER_ENCODING,
    header::UPGRADE,
];
static MCP_SESSION_ID: HeaderName = HeaderName::from_static("mcp-session-id");
static MCP_PROTOCOL_VERSION: HeaderName = HeaderName::from_static("mcp-protocol-version");

/// How long a request body that the upstream never read is still read for its record.
const REQUEST_DRAIN: Duration = Duration::from_secs(5);

/// Default of [`ProxyOptions::body_read_timeout`].
pub const DEFAULT_BODY_READ_TIMEOUT: Duration = Duration::from_secs(30);

/// Default of [`ProxyOptions::body_deadline`]: a request body has five minutes in all.
pub const DEFAULT_BODY_DEADLINE: Duration = Duration::from_secs(300);

/// Default of [`ProxyOptions::response_timeout`]: long, since a tool may work for minutes
/// before a JSON answer.
pub const DEFAULT_RESPONSE_TIMEOUT: Duration = Duration::from_secs(300);

/// Default of [`ProxyOptions::max_connections`]: each connection holds two descriptors (client
/// and upstream), so 512 stays within the usual soft limit of 1,024 open files.
pub const DEFAULT_MAX_CONNECTIONS: usize = 512;

/// The default ceiling of the adaptive spin (see [`Spin`]): `cpuidle-haltpoll`'s default.
pub const DEFAULT_SPIN: Duration = Duration::from_micros(200);

/// Proxy settings.
#[derive(Debug, Clone)]
pub struct ProxyOptions {
    /// The upstream origin, `http://host:port` or `https://host:port`.
    pub upstream: Uri,
    /// Certificates trusted for an https upstream besides Mozilla's roots (a private CA, or a
    /// self-signed server certificate); see [`ProxyOptions::add_upstream_ca_pem`].
    pub upstream_ca: Vec<CertificateDer<'static>>,
    /// Record options.
    pub observe: ObserveOptions,
    /// On shutdown, how long open exchanges may still finish before they are closed.
    pub drain_timeout: Duration,
    /// How long a client connection may take to send request headers (and may stay idle).
    pub header_read_timeout: Duration,
    /// How long reaching the upstream may take: TCP connect and, for https, the TLS handshake.
    /// Past it the client gets a `502` and the record a `CONNECTION_ERROR` naming this limit.
    pub connect_timeout: Duration,
    /// After traffic, how long at most the forwarding thread keeps polling its sockets before it
    /// sleeps (one forwarding thread only; zero: sleep at once). The window adapts below this
    /// ceiling to how soon traffic usually comes back; see [`Spin`].
    pub spin: Duration,
    /// DNS-rebinding protection (see [`crate::guard`]): whether `Host` and `Origin` are checked.
    pub host_check: HostCheck,
    /// Host names accepted besides loopback ones when `Host` is checked (also as an `Origin`'s
    /// host).
    pub allowed_hosts: Vec<String>,
    /// `Origin` values accepted besides loopback ones when `Origin` is checked.
    pub allowed_origins: Vec<String>,
    /// Query parameters whose values records never show (besides
    /// [`crate::guard::SECRET_QUERY_PARAMS`]); the upstream still gets them.
    pub redact_query_params: Vec<String>,
    /// Longest wait for the next bytes of a request body once it started (a client that stalls
    /// mid-body). Past it the upstream request is closed, the client gets a `408` and the record
    /// a `TIMEOUT` naming this limit.
    pub body_read_timeout: Duration,
    /// Longest time a request body may take in all, from its request head (zero: no limit).
    /// The read timeout bounds each gap only, so without this a client sending a byte every
    /// 29 s would hold its connection, and the upstream's, forever. Past it: as for the read
    /// timeout, a `408`, the upstream request closed, a `TIMEOUT` record naming this limit.
    pub body_deadline: Duration,
    /// Longest wait for the upstream's response head once the request body was sent whole
    /// (zero: no limit). Past it the upstream request is closed, the client gets a `504` and the
    /// record a `TIMEOUT` naming this limit. A response that has begun is never cut by it (an
    /// SSE stream may stay quiet for long).
    pub response_timeout: Duration,
    /// Most client connections open at once. Past it a new connection gets a `503` naming the
    /// limit and is closed, so a flood of idle connections cannot take every file descriptor.
    pub max_connections: usize,
    /// `--capture`: every exchange also goes to this capture file (None: off, nothing copied).
    pub capture: Option<Arc<Capture>>,
}

/// When the proxy checks `Host` and `Origin` (see [`crate::guard`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HostCheck {
    /// When the listen address is a loopback address (the default).
    Auto,
    /// Always.
    On,
    /// Never.
    Off,
}

impl ProxyOptions {
    /// Options for `upstream` (an origin: scheme, host and port; no path).
    pub fn new(upstream: &str) -> Result<ProxyOptions, ProxyError> {
        Ok(ProxyOptions {
            upstream: parse_origin(upstream)?,
            upstream_ca: Vec::new(),
            observe: ObserveOptions::default(),
            drain_timeout: Duration::from_secs(10),
            header_read_timeout: Duration::from_secs(30),
            connect_timeout: Duration::from_secs(10),
            spin: DEFAULT_SPIN,
            host_check: HostCheck::Auto,
            allowed_hosts: Vec::new(),
            allowed_origins: Vec::new(),
            redact_query_params: Vec::new(),
            body_read_timeout: DEFAULT_BODY_READ_TIMEOUT,
            body_deadline: DEFAULT_BODY_DEADLINE,
            response_timeout: DEFAULT_RESPONSE_TIMEOUT,
            max_connections: DEFAULT_MAX_CONNECTIONS,
            capture: None,
        })
    }

    /// The upstream's port: the origin's, else 443 for https and 80 for http.
    pub fn upstream_port(&self) -> u16 {
        self.upstream
            .port_u16()
            .unwrap_or(if self.upstream.scheme_str() == Some("https") {
                443
            } else {
                80
            })
    }

    /// Trusts the certificates of a PEM file (`source` names it in errors) for an https
    /// upstream; returns how many were read. A file without a certificate, or with one that
    /// does not parse, is an error naming the file.
    pub fn add_upstream_ca_pem(&mut self, pem: &[u8], source: &str) -> Result<usize, ProxyError> {
        let certs = crate::tls::certificates_from_pem(pem, source)
            .map_err(|e| ProxyError::Tls(format!("--upstream-ca {e}")))?;
        let n = certs.len();
        self.upstream_ca.extend(certs);
        Ok(n)
    }
}

/// Why the proxy cannot start.
#[derive(Debug, thiserror::Error)]
pub enum ProxyError {
    /// The upstream is not an `http://host:port` origin.
    #[error("--upstream {0:?}: {1}")]
    Upstream(String, String),
    /// Binding the listen address failed.
    #[error("cannot listen on {0}: {1}")]
    Listen(SocketAddr, io::Error),
    /// The TLS settings for an https upstream are unusable.
    #[error("{0}")]
    Tls(String),
}

fn parse_origin(s: &str) -> Result<Uri, ProxyError> {
    let bad = |why: &str| ProxyError::Upstream(s.to_string(), why.to_string());
    let uri: Uri = s.parse().map_err(|e| bad(&format!("not a URL ({e})")))?;
    match uri.scheme_str() {
        Some("http") | Some("https") => {}
        _ => return Err(bad("the scheme must be http or https")),
    }
    if uri.authority().is_none() {
        return Err(bad(
            "it needs a host (http://host:port or https://host:port)",
        ));
    }
    if uri.path_and_query().is_some_and(|p| p.as_str() != "/") {
        return Err(bad(
            "give only the origin (http://host:port); the client's path and query are forwarded as they are",
        ));
    }
    Ok(uri)
}

struct Shared {
    observer: Observer,
    authority: Authority,
    /// `host:port` to connect to (port 80, or 443 for https, when the origin has none).
    connect_to: String,
    host: HeaderValue,
    /// For an https upstream: the connector and the name its certificate must carry.
    tls: Option<(TlsConnector, ServerName<'static>)>,
    /// See [`ProxyOptions::connect_timeout`].
    connect_timeout: Duration,
    /// `Host`/`Origin` checks, when on.
    host_policy: Option<HostPolicy>,
    /// See [`ProxyOptions::redact_query_params`].
    redact_query_params: Vec<String>,
    /// See [`ProxyOptions::body_read_timeout`].
    body_read_timeout: Duration,
    /// See [`ProxyOptions::body_deadline`].
    body_deadline: Duration,
    /// See [`ProxyOptions::response_timeout`].
    response_timeout: Duration,
    /// See [`ProxyOptions::capture`].
    capture: Option<Arc<Capture>>,
    /// Set when the proxy spins (see [`Spin`]).
    spin: Option<Arc<Spin>>,
    /// Observe a response after its bytes went to the client (see [`Deferred`]), not before.
    ///
    /// Only on a current-thread runtime: there the connection tasks run one at a time, so
    /// nothing a client does after seeing a response — a resend on another connection, above
    /// all — can be observed before that response's record has updated the retry state. With
    /// several forwarding threads another connection's task could, so there each response is
    /// observed before it is written, as an observer that must link retries needs.
    observe_after_write: bool,
}

/// The TLS client for an https upstream: rustls with ring, Mozilla's roots plus `extra`, ALPN
/// `http/1.1` (the proxy speaks HTTP/1.1 to the upstream).
fn tls_connector(
    authority: &Authority,
    extra: &[CertificateDer<'static>],
) -> Result<(TlsConnector, ServerName<'static>), ProxyError> {
    let config = crate::tls::client_config(extra, &[b"http/1.1"])
        .map_err(|e| ProxyError::Tls(format!("--upstream-ca: {e}")))?;
    let host = authority.host();
    // An IPv6 literal comes bracketed in the authority; a certificate names the bare address.
    let bare = host
        .strip_prefix('[')
        .and_then(|h| h.strip_suffix(']'))
        .unwrap_or(host);
    let name = ServerName::try_from(bare.to_string()).map_err(|e| {
        ProxyError::Upstream(
            authority.to_string(),
            format!("{bare:?} is not a name a certificate can carry ({e})"),
        )
    })?;
    Ok((TlsConnector::from(Arc::new(config)), name))
}

/// A running proxy.
pub struct ProxyHandle {
    addr: SocketAddr,
    stop: watch::Sender<bool>,
    task: tokio::task::JoinHandle<()>,
    refused: Arc<AtomicU64>,
}

impl ProxyHandle {
    /// Connections refused so far because [`ProxyOptions::max_connections`] were open.
    pub fn refused_connections(&self) -> u64 {
        self.refused.load(Ordering::Relaxed)
    }

    /// The address it listens on.
    pub fn local_addr(&self) -> SocketAddr {
        self.addr
    }

    /// `http://addr`.
    pub fn base_url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// Stops accepting, lets open exchanges finish within the drain timeout, closes the rest
    /// (their records say so), and returns once every record was handed to the sink.
    pub async fn shutdown(self) {
        let _ = self.stop.send(true);
        let _ = self.task.await;
    }
}

/// Starts the proxy on `listen`, writing records to `sink`.
pub async fn start(
    listen: SocketAddr,
    options: ProxyOptions,
    sink: RecordSink,
) -> Result<ProxyHandle, ProxyError> {
    let listener = TcpListener::bind(listen)
        .await
        .map_err(|e| ProxyError::Listen(listen, e))?;
    let addr = listener
        .local_addr()
        .map_err(|e| ProxyError::Listen(listen, e))?;
    let authority = options
        .upstream
        .authority()
        .cloned()
        .expect("parse_origin checked the authority");
    let https = options.upstream.scheme_str() == Some("https");
    let one_thread = tokio::runtime::Handle::current().runtime_flavor()
        == tokio::runtime::RuntimeFlavor::CurrentThread;
    let tls = if https {
        Some(tls_connector(&authority, &options.upstream_ca)?)
    } else {
        None
    };
    let shared = Arc::new(Shared {
        observer: Observer::new(options.observe.clone(), sink, "http"),
        connect_to: format!("{}:{}", authority.host(), options.upstream_port()),
        host: HeaderValue::from_str(authority.as_str()).expect("an authority is a header value"),
        authority,
        tls,
        connect_timeout: options.connect_timeout,
        observe_after_write: one_thread,
        spin: (one_thread && !options.spin.is_zero()).then(|| Arc::new(Spin::new())),
        host_policy: match options.host_check {
            HostCheck::On => true,
            HostCheck::Off => false,
            HostCheck::Auto => addr.ip().is_loopback(),
        }
        .then(|| HostPolicy {
            allowed_hosts: options.allowed_hosts.clone(),
            allowed_origins: options.allowed_origins.clone(),
            listen_ip: Some(addr.ip()),
        }),
        redact_query_params: options.redact_query_params.clone(),
        body_read_timeout: options.body_read_timeout,
        body_deadline: options.body_deadline,
        response_timeout: options.response_timeout,
        capture: options.capture.clone(),
    });
    let (stop, stop_rx) = watch::channel(false);
    if let Some(spin) = shared.spin.clone() {
        tokio::spawn(spin_loop(spin, options.spin, stop_rx.clone()));
    }
    let refused = Arc::new(AtomicU64::new(0));
    let task = tokio::spawn(accept_loop(
        listener,
        shared,
        stop_rx,
        options,
        refused.clone(),
    ));
    Ok(ProxyHandle {
        addr,
        stop,
        task,
        refused,
    })
}

/// What the accept loop knows of one client connection: whether an exchange is open on it,
/// and since when it has been idle. At `--max-connections` the connection idle longest is
/// closed to admit the new one: a flood of connections that send nothing must not lock real
/// clients out (they used to get 503 until the flood's header-read timeout, 30 s).
struct ConnActivity {
    base: Instant,
    in_flight: AtomicUsize,
    /// Milliseconds after `base` the connection last became idle (opened or an exchange ended).
    idle_since_ms: AtomicU64,
}

impl ConnActivity {
    fn new(base: Instant) -> Arc<ConnActivity> {
        Arc::new(ConnActivity {
            base,
            in_flight: AtomicUsize::new(0),
            idle_since_ms: AtomicU64::new(base.elapsed().as_millis() as u64),
        })
    }

    /// `Some(idle since)` when no exchange is open.
    fn idle_since(&self) -> Option<u64> {
        (self.in_flight.load(Ordering::SeqCst) == 0)
            .then(|| self.idle_since_ms.load(Ordering::SeqCst))
    }
}

/// An exchange open on a connection, from its request head until its response is dropped.
struct InFlight(Arc<ConnActivity>);

impl InFlight {
    fn new(a: &Arc<ConnActivity>) -> InFlight {
        a.in_flight.fetch_add(1, Ordering::SeqCst);
        InFlight(a.clone())
    }
}

impl Drop for InFlight {
    fn drop(&mut self) {
        let a = &self.0;
        a.idle_since_ms
            .store(a.base.elapsed().as_millis() as u64, Ordering::SeqCst);
        a.in_flight.fetch_sub(1, Ordering::SeqCst);
    }
}

/// At the connection cap: closes the connection idle longest, if one is idle; true if it did.
fn close_longest_idle(tracked: &mut Vec<(Arc<ConnActivity>, tokio::task::AbortHandle)>) -> bool {
    tracked.retain(|(_, h)| !h.is_finished());
    let oldest = tracked
        .iter()
        .enumerate()
        .filter_map(|(i, (a, _))| a.idle_since().map(|t| (t, i)))
        .min();
    match oldest {
        Some((_, i)) => {
            let (_, h) = tracked.swap_remove(i);
            // Dropping the connection's task closes its socket; no exchange is open on it.
            h.abort();
            true
        }
        None => false,
    }
}

async fn accept_loop(
    listener: TcpListener,
    shared: Arc<Shared>,
    mut stop: watch::Receiver<bool>,
    options: ProxyOptions,
    refused: Arc<AtomicU64>,
) {
    let graceful = GracefulShutdown::new();
    let mut conns = JoinSet::new();
    let mut tracked = Vec::new();
    let base = Instant::now();
    let mut evicted = 0u64;
    let refusing = Arc::new(AtomicUsize::new(0));
    loop {
        while conns.try_join_next().is_some() {}
        tokio::select! {
            accepted = listener.accept() => {
                let Ok((stream, peer)) = accepted else {
                    // Out of descriptors or similar: back off instead of spinning.
                    tokio::time::sleep(Duration::from_millis(20)).await;
                    continue;
                };
                // Connections that ended while this loop waited free their slots now.
                while conns.try_join_next().is_some() {}
                if conns.len() >= options.max_connections && close_longest_idle(&mut tracked) {
                    evicted += 1;
                    if evicted == 1 {
                        eprintln!(
                            "mcp-triage proxy: {} connections are open (--max-connections): closing the longest idle one for each new connection",
                            options.max_connections
                        );
                    }
                } else if conns.len() >= options.max_connections {
                    if refused.fetch_add(1, Ordering::Relaxed) == 0 {
                        eprintln!(
                            "mcp-triage proxy: {} connections are open (--max-connections): refusing new ones with 503 until some close",
                            options.max_connections
                        );
                    }
                    refuse_connection(stream, options.max_connections, &refusing);
                    continue;
                }
                let _ = stream.set_nodelay(true);
                let (read, write) = stream.into_split();
                let cork = Arc::new(Mutex::new(Cork::new(write)));
                let stream = CorkedStream {
                    read,
                    cork: cork.clone(),
                };
                let sh = shared.clone();
                let (upstream, upstream_conns) = Upstream::new();
                let deferred = upstream.deferred.clone();
                // Formatted once per connection, not per request.
                let peer: Arc<str> = peer.ip().to_string().into();
                let activity = ConnActivity::new(base);
                let conn_activity = activity.clone();
                let service = hyper::service::service_fn(move |req| {
                    let in_flight = InFlight::new(&conn_activity);
                    let exchange = handle(sh.clone(), upstream.clone(), peer.clone(), req);
                    async move {
                        let mut resp = exchange.await?;
                        resp.body_mut().in_flight = Some(in_flight);
                        Ok::<_, Cut>(resp)
                    }
                });
                let conn = http1::Builder::new()
                    .timer(TokioTimer::new())
                    .header_read_timeout(options.header_read_timeout)
                    .serve_connection(TokioIo::new(stream), service);
                let conn = graceful.watch(conn);
                let handle = conns.spawn(Paired::new(
                    Box::pin(async move {
                        let _ = conn.await;
                    }),
                    upstream_conns,
                    deferred,
                    cork,
                    shared.observe_after_write,
                    shared.spin.clone(),
                ));
                tracked.push((activity, handle));
            }
            _ = stop.changed() => break,
        }
    }
    drop(listener);
    let _ = tokio::time::timeout(options.drain_timeout, graceful.shutdown()).await;
    // Exchanges still open are closed now: dropping them emits their records (cancelled).
    conns.abort_all();
    while conns.join_next().await.is_some() {}
    // Tasks still open will end unseen: their calls get a TASK_UNFINISHED end now.
    shared.observer.close_open_tasks();
}

/// Answers a connection over [`ProxyOptions::max_connections`] with a `503` naming the limit,
/// then closes it. The answer is written without waiting for the request (there is no room to
/// serve it); the request's bytes are read and dropped for a moment so that closing does not
/// reset the connection before the client has read the answer. At most as many connections as
/// the limit are being refused at once; past that a connection is closed at once.
fn refuse_connection(mut stream: TcpStream, limit: usize, refusing: &Arc<AtomicUsize>) {
    if refusing.fetch_add(1, Ordering::Relaxed) >= limit {
        refusing.fetch_sub(1, Ordering::Relaxed);
        return;
    }
    let refusing = refusing.clone();
    tokio::spawn(async move {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let body = format!(
            "mcp-triage proxy: too many open connections ({limit}, --max-connections); try again later\n"
        );
        let answer = format!(
            "HTTP/1.1 503 Service Unavailable\r\ncontent-type: text/plain; charset=utf-8\r\nretry-after: 1\r\nconnection: close\r\ncontent-length: {}\r\n\r\n{body}",
            body.len()
        );
        let _ = tokio::time::timeout(Duration::from_secs(1), async {
            stream.write_all(answer.as_bytes()).await?;
            stream.shutdown().await?;
            let mut sink = [0u8; 4096];
            while stream.read(&mut sink).await? > 0 {}
            Ok::<_, io::Error>(())
        })
        .await;
        refusing.fetch_sub(1, Ordering::Relaxed);
    });
}

/// Polling instead of sleeping for a moment after traffic.
///
/// Why: on a virtual machine, putting an idle thread to sleep and waking it when a socket has
/// data costs tens of microseconds of latency and of CPU (at one exchange at a time the proxy
/// spent about 40% of its CPU switching in and out, `perf`). A proxy sleeps twice per exchange:
/// waiting for the upstream's answer and for the client's next request. While it spins, the
/// forwarding thread keeps asking the kernel for ready sockets (a zero-timeout `epoll_wait`,
/// through tokio's `yield_now`) after the last activity, so an answer that comes within the
/// window is picked up without a sleep. Busy traffic never spins (there is always work).
///
/// How long it spins adapts as Linux's guest halt-polling does (`cpuidle-haltpoll`, whose
/// default ceiling is also 200 µs; on this project's machines the guest kernel's own polling is
/// switched off): see [`SpinWindow`]. Quiet periods that a spin of the ceiling would have caught
/// grow the window, quiet periods longer than the ceiling shrink it, so a server whose answers
/// take milliseconds, or a client that sends now and then, costs no spinning at all.
struct Spin {
    /// Bumped by every connection poll: the spinner reads the clock, connections do not (a
    /// clock read per poll was about 2% of the proxy's CPU).
    activity: std::sync::atomic::AtomicU64,
    parked: AtomicBool,
    notify: tokio::sync::Notify,
}

impl Spin {
    fn new() -> Spin {
        Spin {
            activity: std::sync::atomic::AtomicU64::new(0),
            parked: AtomicBool::new(false),
            notify: tokio::sync::Notify::new(),
        }
    }

    /// A connection did something: spin for the window from now.
    fn touch(&self) {
        // One forwarding thread (spinning needs it): a plain load and store, no locked add.
        let n = self.activity.load(Ordering::Relaxed);
        self.activity.store(n.wrapping_add(1), Ordering::Relaxed);
        if self.parked.load(Ordering::Relaxed) {
            self.notify.notify_one();
        }
    }
}

/// The adaptive spin window, `cpuidle-haltpoll`'s rule (drivers/cpuidle/governors/haltpoll.c)
/// with the same factors: after each quiet period that ended in a sleep, a period no longer
/// than the ceiling doubles the window (from at least [`SpinWindow::GROW_START_NS`]), one longer
/// than the ceiling halves it. A quiet period the spin caught leaves it as it is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct SpinWindow {
    /// How long to spin now, in nanoseconds.
    limit_ns: u64,
    /// The ceiling (`--spin-us`).
    max_ns: u64,
}

impl SpinWindow {
    /// haltpoll's `guest_halt_poll_grow_start`: the first window after it had shrunk to nothing.
    const GROW_START_NS: u64 = 50_000;

    /// Starts closed: the first short quiet periods open it.
    fn new(max: Duration) -> SpinWindow {
        SpinWindow {
            limit_ns: 0,
            max_ns: u64::try_from(max.as_nanos()).unwrap_or(u64::MAX),
        }
    }

    /// A quiet period of `idle_ns` ended (activity after the thread had gone to sleep).
    fn quiet_period_ended(&mut self, idle_ns: u64) {
        if idle_ns > self.limit_ns && idle_ns <= self.max_ns {
            self.limit_ns = (self.limit_ns * 2)
                .max(Self::GROW_START_NS)
                .min(self.max_ns);
        } else if idle_ns > self.max_ns {
            self.limit_ns /= 2;
        }
    }
}

async fn spin_loop(spin: Arc<Spin>, ceiling: Duration, mut stop: watch::Receiver<bool>) {
    let epoch = Instant::now();
    let now = || u64::try_from(epoch.elapsed().as_nanos()).unwrap_or(u64::MAX);
    let mut window = SpinWindow::new(ceiling);
    let mut seen = spin.activity.load(Ordering::Relaxed);
    // When the activity last changed, as this task saw it (within one runtime tick).
    let mut quiet_since = now();
    loop {
        let t = now();
        let activity = spin.activity.load(Ordering::Relaxed);
        if activity != seen {
            seen = activity;
            quiet_since = t;
        }
        if t.saturating_sub(quiet_since) < window.limit_ns {
            // Gives the core to any other runnable thread first (sched_yield): on cores shared
            // with the client or the server, spinning must never delay them, only fill time
            // the core would otherwise spend idle. Then lets the runtime poll its sockets
            // without blocking, and comes back.
            std::thread::yield_now();
            tokio::task::yield_now().await;
            continue;
        }
        spin.parked.store(true, Ordering::Relaxed);
        tokio::select! {
            _ = spin.notify.notified() => {}
            _ = stop.changed() => return,
        }
        spin.parked.store(false, Ordering::Relaxed);
        // Woken by the activity that ended the quiet period (this task runs in the same tick).
        let t = now();
        window.quiet_period_ended(t.saturating_sub(quiet_since));
        seen = spin.activity.load(Ordering::Relaxed);
        quiet_since = t;
    }
}

type UpstreamConn = Pin<Box<dyn Future<Output = ()> + Send>>;

/// The upstream side of one client connection: at most one HTTP/1.1 connection to the upstream,
/// opened on the first request and again whenever the upstream closed it.
///
/// Why not a pool: a pooled client runs each upstream connection in a task of its own, so every
/// exchange crossed tasks (and, on a multi-threaded runtime, usually threads) four times —
/// request out, response head back, each body chunk, the end. Those wakeups were most of the
/// proxy's added latency. HTTP/1.1 carries one exchange at a time, so a client connection never
/// needs more than one upstream connection, and [`Paired`] drives both in the same task.
#[derive(Clone)]
struct Upstream {
    sender: Arc<Mutex<Option<client_http1::SendRequest<RequestTap>>>>,
    /// New upstream connections for [`Paired`] to drive.
    conns: mpsc::UnboundedSender<UpstreamConn>,
    /// Observer work of this connection's responses, run after their bytes were written.
    deferred: Arc<Deferred>,
}

/// The upstream could not be reached (connect or handshake failed).
struct ConnectFailed(String);

/// What sending a request upstream came to.
enum Sent {
    Response(Response<Incoming>),
    ConnectFailed(String),
    /// The upstream took the request and failed before a response head.
    Failed(hyper::Error),
    /// No response head within the response timeout (its value).
    TimedOut(Duration),
}

impl Upstream {
    fn new() -> (Upstream, mpsc::UnboundedReceiver<UpstreamConn>) {
        let (tx, rx) = mpsc::unbounded_channel();
        (
            Upstream {
                sender: Arc::new(Mutex::new(None)),
                conns: tx,
                deferred: Arc::new(Deferred::default()),
            },
            rx,
        )
    }

    fn take(&self) -> Option<client_http1::SendRequest<RequestTap>> {
        self.sender.lock().unwrap_or_else(|e| e.into_inner()).take()
    }

    fn put(&self, s: client_http1::SendRequest<RequestTap>) {
        *self.sender.lock().unwrap_or_else(|e| e.into_inner()) = Some(s);
    }

    async fn connect(
        &self,
        sh: &Shared,
    ) -> Result<client_http1::SendRequest<RequestTap>, ConnectFailed> {
        let limit = sh.connect_timeout;
        tokio::time::timeout(limit, self.connect_unbounded(sh))
            .await
            .unwrap_or_else(|_| {
                Err(ConnectFailed(format!(
                    "no connection within {} ms (connect timeout)",
                    limit.as_millis()
                )))
            })
    }

    async fn connect_unbounded(
        &self,
        sh: &Shared,
    ) -> Result<client_http1::SendRequest<RequestTap>, ConnectFailed> {
        let stream = TcpStream::connect(sh.connect_to.as_str())
            .await
            .map_err(|e| ConnectFailed(e.to_string()))?;
        let _ = stream.set_nodelay(true);
        let stream = EarlyAnswerIo::new(stream);
        let handshake_failed = |e: hyper::Error| ConnectFailed(error_chain(&e));
        let (sender, conn): (_, UpstreamConn) = match &sh.tls {
            None => {
                let (sender, conn) = client_http1::handshake(TokioIo::new(stream))
                    .await
                    .map_err(handshake_failed)?;
                (sender, Box::pin(async move { drop(conn.await) }))
            }
            Some((connector, name)) => {
                let tls = connector
                    .connect(name.clone(), stream)
                    .await
                    .map_err(|e| ConnectFailed(format!("TLS handshake: {}", error_chain(&e))))?;
                let (sender, conn) = client_http1::handshake(TokioIo::new(tls))
                    .await
                    .map_err(handshake_failed)?;
                (sender, Box::pin(async move { drop(conn.await) }))
            }
        };
        // The client connection's task drives it; if that task is gone, so is the exchange.
        let _ = self.conns.send(conn);
        Ok(sender)
    }

    /// Sends `req` on the open connection if it is still usable, else on a new one. A request
    /// that a reused connection refused unsent (the upstream closed it while idle) is sent once
    /// more on a new connection, as a pooled client would.
    async fn send(&self, sh: &Shared, mut req: Request<RequestTap>) -> Sent {
        let mut reused = self.take();
        loop {
            let mut open = reused.take();
            if let Some(s) = open.as_mut() {
                if s.ready().await.is_err() {
                    open = None;
                }
            }
            let fresh = open.is_none();
            let mut sender = match open {
                Some(s) => s,
                None => match self.connect(sh).await {
                    Ok(mut s) => {
                        if let Err(e) = s.ready().await {
                            return Sent::ConnectFailed(error_chain(&e));
                        }
                        s
                    }
                    Err(ConnectFailed(why)) => return Sent::ConnectFailed(why),
                },
            };
            let result = sender.try_send_request(req).await;
            match result {
                Ok(resp) => {
                    self.put(sender);
                    return Sent::Response(resp);
                }
                Err(mut e) => match e.take_message() {
                    Some(unsent) if !fresh => req = unsent,
                    _ => return Sent::Failed(e.into_error()),
                },
            }
        }
    }
}

/// The upstream socket, keeping an early answer readable after the upstream stopped reading.
///
/// Why: an upstream that refuses a request body (a `413` for a 100 MB upload, a `401` before
/// the body) answers after reading the head and closes; the proxy, still sending the body,
/// then gets `EPIPE`/`ECONNRESET` on a write. hyper's client fails the whole exchange on that
/// write error, often before it has read the answer that is already in the socket's receive
/// buffer, and the client saw a dropped connection instead of the upstream's `413`. Here a
/// write that fails because the peer is gone does not fail: the write side is marked closed
/// and every later write waits (so no more body is sent, and no byte is discarded as if it had
/// been sent). hyper goes on reading: an answer that came is forwarded; an upstream that closed
/// without one ends the read side, and then the saved write error is returned, which fails the
/// exchange as before.
struct EarlyAnswerIo<T> {
    io: T,
    /// The write error that closed the write side, returned once the read side ended too.
    write_failed: Option<io::Error>,
    /// The read side ended (EOF or an error).
    read_ended: bool,
}

impl<T> EarlyAnswerIo<T> {
    fn new(io: T) -> EarlyAnswerIo<T> {
        EarlyAnswerIo {
            io,
            write_failed: None,
            read_ended: false,
        }
    }

    /// After a failed write: Pending while the read side may still bring an answer, the saved
    /// error once it ended.
    fn write_closed<R>(&mut self) -> Poll<io::Result<R>> {
        match (&self.write_failed, self.read_ended) {
            (Some(e), true) => Poll::Ready(Err(io::Error::new(e.kind(), e.to_string()))),
            // The reader's waker is registered: its end wakes this task.
            _ => Poll::Pending,
        }
    }

    /// A write's result: an error saying the peer stopped reading (perhaps after answering)
    /// closes the write side instead of failing.
    fn after_write<R>(&mut self, r: Poll<io::Result<R>>) -> Poll<io::Result<R>> {
        match r {
            Poll::Ready(Err(e))
                if matches!(
                    e.kind(),
                    io::ErrorKind::BrokenPipe
                        | io::ErrorKind::ConnectionReset
                        | io::ErrorKind::ConnectionAborted
                ) =>
            {
                self.write_failed = Some(e);
                self.write_closed()
            }
            r => r,
        }
    }
}

impl<T: AsyncRead + Unpin> AsyncRead for EarlyAnswerIo<T> {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        let before = buf.filled().len();
        let r = Pin::new(&mut this.io).poll_read(cx, buf);
        match &r {
            Poll::Ready(Ok(())) if buf.filled().len() == before => this.read_ended = true,
            Poll::Ready(Err(_)) => this.read_ended = true,
            _ => {}
        }
        if this.read_ended && this.write_failed.is_some() {
            // A write is waiting for this: let it return its error.
            cx.waker().wake_by_ref();
        }
        r
    }
}

impl<T: AsyncWrite + Unpin> AsyncWrite for EarlyAnswerIo<T> {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        data: &[u8],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        if this.write_failed.is_some() {
            return this.write_closed();
        }
        let r = Pin::new(&mut this.io).poll_write(cx, data);
        this.after_write(r)
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        parts: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        if this.write_failed.is_some() {
            return this.write_closed();
        }
        let r = Pin::new(&mut this.io).poll_write_vectored(cx, parts);
        this.after_write(r)
    }

    fn is_write_vectored(&self) -> bool {
        self.io.is_write_vectored()
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        if this.write_failed.is_some() {
            return this.write_closed();
        }
        let r = Pin::new(&mut this.io).poll_flush(cx);
        this.after_write(r)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        if this.write_failed.is_some() {
            // Nothing more can be sent; the connection is being closed anyway.
            return Poll::Ready(Ok(()));
        }
        Pin::new(&mut this.io).poll_shutdown(cx)
    }
}

/// One client connection and its upstream connections, polled by one task: a wakeup from
/// either side is a wakeup of this task, never a hand-off to another thread.
///
/// One poll runs until neither side has anything more to do right now (at most
/// [`ROUNDS_PER_POLL`] rounds): the upstream connection hands the response head, each body chunk
/// and the body's end to the server side one at a time (hyper's body channel holds one chunk),
/// and each hand-off wakes this same task. Going round again at once, with the client's writes
/// held in the [`Cork`] until the end of the poll, sends what arrived together in one write: an
/// SSE response that came from the upstream in one segment (head, event, end of body) goes to
/// the client in one segment too, instead of three writes that each wake the client.
struct Paired {
    server: UpstreamConn,
    upstream_conns: mpsc::UnboundedReceiver<UpstreamConn>,
    driving: Vec<UpstreamConn>,
    deferred: Arc<Deferred>,
    cork: Arc<Mutex<Cork>>,
    wake: Arc<TaskWake>,
    /// See [`Shared::observe_after_write`].
    observe_after_write: bool,
    spin: Option<Arc<Spin>>,
}

/// Rounds of one [`Paired`] poll before it yields to other tasks.
const ROUNDS_PER_POLL: usize = 8;

/// The waker a [`Paired`] polls its parts with: it notes wakeups that happen during the poll
/// (the parts waking each other) instead of rescheduling the task, and passes the others on.
#[derive(Default)]
struct TaskWake {
    woken: AtomicBool,
    polling: AtomicBool,
    outer: Mutex<Option<Waker>>,
}

impl Wake for TaskWake {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        self.woken.store(true, Ordering::SeqCst);
        if !self.polling.load(Ordering::SeqCst) {
            if let Some(w) = self
                .outer
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .as_ref()
            {
                w.wake_by_ref();
            }
        }
    }
}

impl Paired {
    fn new(
        server: UpstreamConn,
        upstream_conns: mpsc::UnboundedReceiver<UpstreamConn>,
        deferred: Arc<Deferred>,
        cork: Arc<Mutex<Cork>>,
        observe_after_write: bool,
        spin: Option<Arc<Spin>>,
    ) -> Paired {
        Paired {
            server,
            upstream_conns,
            driving: Vec::new(),
            deferred,
            cork,
            wake: Arc::new(TaskWake::default()),
            observe_after_write,
            spin,
        }
    }

    /// One round: the upstream connections, then the server side (it may open a connection or
    /// queue work for one), then the upstream connections again. True when the client is gone.
    fn round(&mut self, cx: &mut Context<'_>) -> bool {
        while let Poll::Ready(Some(c)) = self.upstream_conns.poll_recv(cx) {
            self.driving.push(c);
        }
        self.driving
            .retain_mut(|c| c.as_mut().poll(cx).is_pending());
        let done = self.server.as_mut().poll(cx).is_ready();
        while let Poll::Ready(Some(c)) = self.upstream_conns.poll_recv(cx) {
            let mut c = c;
            if c.as_mut().poll(cx).is_pending() {
                self.driving.push(c);
            }
        }
        if !done {
            self.driving
                .retain_mut(|c| c.as_mut().poll(cx).is_pending());
        }
        done
    }
}

impl Future for Paired {
    type Output = ();

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        let this = self.get_mut();
        if let Some(spin) = &this.spin {
            spin.touch();
        }
        {
            let mut outer = this.wake.outer.lock().unwrap_or_else(|e| e.into_inner());
            if !outer.as_ref().is_some_and(|w| w.will_wake(cx.waker())) {
                *outer = Some(cx.waker().clone());
            }
        }
        this.wake.polling.store(true, Ordering::SeqCst);
        let waker = Waker::from(this.wake.clone());
        let mut inner = Context::from_waker(&waker);
        let mut done = false;
        for _ in 0..ROUNDS_PER_POLL {
            this.wake.woken.store(false, Ordering::SeqCst);
            done = this.round(&mut inner);
            if done || !this.wake.woken.load(Ordering::SeqCst) {
                break;
            }
        }
        if !this.observe_after_write {
            // Several forwarding threads: observe before the client can see the response.
            this.deferred.run();
        }
        // What the rounds wrote to the client goes out now, in one write where it fits.
        let (flushed, was_full) = {
            let mut cork = this.cork.lock().unwrap_or_else(|e| e.into_inner());
            let was_full = cork.buf.len() >= CORK_LIMIT;
            (cork.drain(&mut inner), was_full)
        };
        if was_full && matches!(flushed, Poll::Ready(Ok(()))) {
            // A write that waited for room may go on now, and the socket, writable, will not
            // wake anyone: come back for it.
            this.wake.woken.store(true, Ordering::SeqCst);
        }
        if !done && matches!(flushed, Poll::Ready(Err(_))) {
            // The client is gone: let the server side see it (its next read fails) and close.
            done = this.round(&mut inner);
        }
        this.wake.polling.store(false, Ordering::SeqCst);
        if done {
            // The client is gone: dropping the upstream connections closes them.
            this.driving.clear();
            this.deferred.run();
            return Poll::Ready(());
        }
        if this.wake.woken.load(Ordering::SeqCst) {
            // Still work after the last round: come back after other tasks had their turn.
            cx.waker().wake_by_ref();
        }
        // Every byte this poll moved has been handed to the sockets: now observe it.
        this.deferred.run();
        Poll::Pending
    }
}

/// Bytes for the client held until the end of the connection task's poll (see [`Paired`]):
/// hyper flushes after each step, the cork turns the steps of one poll into one write. At most
/// [`CORK_LIMIT`] bytes wait; past that a write waits for the socket, as it would without the
/// cork, so a stream the client reads slowly still holds the proxy back (no unbounded buffer).
struct Cork {
    half: OwnedWriteHalf,
    buf: Vec<u8>,
    /// A write to the client failed: every later read and write fails the same way.
    failed: Option<(io::ErrorKind, String)>,
}

/// How many bytes the [`Cork`] holds before a write waits for the socket.
const CORK_LIMIT: usize = 64 << 10;

impl Cork {
    fn new(half: OwnedWriteHalf) -> Cork {
        Cork {
            half,
            buf: Vec::new(),
            failed: None,
        }
    }

    fn check(&self) -> io::Result<()> {
        match &self.failed {
            Some((kind, why)) => Err(io::Error::new(*kind, why.clone())),
            None => Ok(()),
        }
    }

    /// Writes what is held; Pending (the waker registered) when the socket is full.
    fn drain(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        self.check()?;
        let mut at = 0;
        let result = loop {
            if at == self.buf.len() {
                break Poll::Ready(Ok(()));
            }
            match Pin::new(&mut self.half).poll_write(cx, &self.buf[at..]) {
                Poll::Ready(Ok(0)) => {
                    break Poll::Ready(Err(io::Error::new(
                        io::ErrorKind::WriteZero,
                        "the client connection took no bytes",
                    )))
                }
                Poll::Ready(Ok(n)) => at += n,
                Poll::Ready(Err(e)) => break Poll::Ready(Err(e)),
                Poll::Pending => break Poll::Pending,
            }
        };
        self.buf.drain(..at);
        if let Poll::Ready(Err(e)) = &result {
            self.failed = Some((e.kind(), e.to_string()));
            self.buf = Vec::new();
        }
        result
    }

    fn hold(&mut self, cx: &mut Context<'_>, parts: &[io::IoSlice<'_>]) -> Poll<io::Result<usize>> {
        self.check()?;
        if self.buf.len() >= CORK_LIMIT {
            // Full: try the socket; still full, wait for it (the waker is registered).
            if let Poll::Ready(Err(e)) = self.drain(cx) {
                return Poll::Ready(Err(e));
            }
            if self.buf.len() >= CORK_LIMIT {
                return Poll::Pending;
            }
        }
        // Take what fits (a partial write, which hyper continues), so the cork never holds more
        // than its limit.
        let mut room = CORK_LIMIT - self.buf.len();
        let mut n = 0;
        for p in parts {
            let take = p.len().min(room);
            self.buf.extend_from_slice(&p[..take]);
            n += take;
            room -= take;
            if room == 0 {
                break;
            }
        }
        Poll::Ready(Ok(n))
    }
}

/// The client connection as hyper's server sees it: reads straight from the socket, writes into
/// the connection's [`Cork`].
struct CorkedStream {
    read: OwnedReadHalf,
    cork: Arc<Mutex<Cork>>,
}

impl CorkedStream {
    fn cork(&self) -> std::sync::MutexGuard<'_, Cork> {
        self.cork.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl AsyncRead for CorkedStream {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        this.cork().check()?;
        Pin::new(&mut this.read).poll_read(cx, buf)
    }
}

impl AsyncWrite for CorkedStream {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        data: &[u8],
    ) -> Poll<io::Result<usize>> {
        self.cork().hold(cx, &[io::IoSlice::new(data)])
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        parts: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        self.cork().hold(cx, parts)
    }

    fn is_write_vectored(&self) -> bool {
        true
    }

    fn poll_flush(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        // The connection's task writes at the end of its poll (see `Paired`).
        Poll::Ready(self.cork().check())
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let mut cork = self.cork();
        std::task::ready!(cork.drain(cx))?;
        Pin::new(&mut cork.half).poll_shutdown(cx)
    }
}

/// The observer's share of one response: chunks that passed and how the body ended, waiting
/// for [`Deferred::run`].
#[derive(Default)]
struct TapState {
    obs: Option<Box<ResponseObserver>>,
    passed: Vec<Bytes>,
    end: Option<End>,
    /// Already in the connection's [`Deferred`] list.
    queued: bool,
}

impl TapState {
    fn observe(&mut self) {
        let Some(o) = self.obs.as_mut() else {
            self.passed.clear();
            return;
        };
        for c in self.passed.drain(..) {
            o.feed(&c);
        }
        if let Some(end) = self.end.take() {
            if let Some(o) = self.obs.take() {
                o.end(end);
            }
        }
    }
}

/// Observer work of one client connection, run by [`Paired`] in each poll.
///
/// Why: a response tap sees a chunk *before* hyper writes it to the client (and the end of a
/// body before the last write is flushed). Classifying the chunk, reading the request, building
/// records and handing them to the writer there would put all of it between the upstream's bytes
/// and the client's. So the tap only notes what passed (a reference-counted `Bytes`, no copy) and
/// queues itself here; [`Paired`] runs the queue once the client's bytes are written (with one
/// forwarding thread; with several, just before they are written: see
/// [`Shared::observe_after_write`]), and dropping the queue (the connection's task ends or is
/// aborted) runs what is left, so no record is lost.
#[derive(Default)]
struct Deferred {
    queue: Mutex<Vec<Arc<Mutex<TapState>>>>,
}

impl Deferred {
    fn push(&self, tap: &Arc<Mutex<TapState>>) {
        self.queue
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(tap.clone());
    }

    fn run(&self) {
        loop {
            let batch = std::mem::take(&mut *self.queue.lock().unwrap_or_else(|e| e.into_inner()));
            if batch.is_empty() {
                return;
            }
            for tap in batch {
                let mut st = tap.lock().unwrap_or_else(|e| e.into_inner());
                st.queued = false;
                st.observe();
            }
        }
    }
}

impl Drop for Deferred {
    fn drop(&mut self) {
        self.run();
    }
}

/// The upstream accepted the request and closed without answering: close the client's
/// connection too (hyper closes a connection whose service fails).
#[derive(Debug)]
struct Cut;

impl std::fmt::Display for Cut {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("the upstream closed the connection without a response")
    }
}

impl std::error::Error for Cut {}

fn header_string(h: &HeaderMap, name: &HeaderName) -> Option<String> {
    h.get(name)
        .and_then(|v| v.to_str().ok())
        .map(str::to_string)
}

/// Removes hop-by-hop headers: the fixed list and every name `Connection` lists.
pub fn strip_hop_by_hop(h: &mut HeaderMap) {
    let listed: Vec<HeaderName> = h
        .get_all(header::CONNECTION)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .filter_map(|t| HeaderName::from_bytes(t.trim().as_bytes()).ok())
        .collect();
    for n in listed {
        h.remove(n);
    }
    for n in &HOP_BY_HOP {
        h.remove(n);
    }
}

/// Everything known about an exchange before its response.
struct Exchange {
    started: Instant,
    origin: Origin,
    http_method: Method,
    path: String,
    request: oneshot::Receiver<RequestCopy>,
    request_headers: Option<Vec<(String, String)>>,
    /// The exchange's capture, with `--capture`.
    capture: Option<Box<ExchangeCapture>>,
}

async fn handle(
    sh: Arc<Shared>,
    upstream: Upstream,
    peer: Arc<str>,
    req: Request<Incoming>,
) -> Result<Response<ResponseTap>, Cut> {
    let started = Instant::now();
    let (mut parts, body) = req.into_parts();
    if let Some(policy) = &sh.host_policy {
        let host = parts.headers.get(header::HOST).map(HeaderValue::as_bytes);
        let origin = parts.headers.get(header::ORIGIN).map(HeaderValue::as_bytes);
        if let Err(refusal) = policy.check(host, origin) {
            return Ok(refuse(&sh, &parts, &peer, started, refusal));
        }
    }
    let origin = Origin {
        session_id: header_string(&parts.headers, &MCP_SESSION_ID),
        protocol_version: header_string(&parts.headers, &MCP_PROTOCOL_VERSION),
        user_agent: header_string(&parts.headers, &header::USER_AGENT),
        peer: String::from(&*peer),
    };
    let observer = &sh.observer;
    let request_headers = observer.options().log_headers.then(|| {
        observer.loggable_headers(
            parts
                .headers
                .iter()
                .map(|(n, v)| (n.as_str(), v.as_bytes())),
        )
    });
    let path = parts
        .uri
        .path_and_query()
        .map(|p| p.as_str().to_string())
        .unwrap_or_else(|| "/".to_string());
    let (tap, request) = RequestTap::new(
        body,
        observer.options().max_request_bytes,
        sh.body_read_timeout,
        sh.body_deadline,
    );
    let body_stalled = tap.timed_out.clone();
    let body_malformed = tap.malformed.clone();
    // Origin form (RFC 9112 §3.2.1): the upstream is reached directly, `Host` names it.
    let uri = Uri::builder()
        .path_and_query(path.as_str())
        .build()
        .expect("a request's path-and-query is a URI");
    strip_hop_by_hop(&mut parts.headers);
    let capture = sh.capture.as_ref().map(|c| {
        c.begin(
            "http",
            parts.method.as_str(),
            &path,
            parts
                .headers
                .iter()
                .map(|(n, v)| (n.as_str(), v.as_bytes())),
            origin.session_id.as_deref(),
        )
    });
    // Credentials for this proxy, not for the upstream.
    parts.headers.remove(header::PROXY_AUTHORIZATION);
    // The upstream routes on its own name; the client's (checked above when the proxy checks
    // hosts) goes along, with the scheme the client used (the proxy listens on plain HTTP), so
    // an upstream that advertises its own URLs (OAuth resource metadata, an issuer) can name
    // the proxy's address the client reached instead of one the client cannot use.
    if let Some(client_host) = parts.headers.get(header::HOST).cloned() {
        parts
            .headers
            .insert(HeaderName::from_static("x-forwarded-host"), client_host);
        parts.headers.insert(
            HeaderName::from_static("x-forwarded-proto"),
            HeaderValue::from_static("http"),
        );
    }
    parts.headers.insert(header::HOST, sh.host.clone());
    // RFC 9110 §7.6.3: a gateway sends Via in each request it forwards.
    parts
        .headers
        .append(header::VIA, HeaderValue::from_static("1.1 mcp-triage"));
    parts.uri = uri;
    parts.version = http::Version::HTTP_11;
    let ex = Exchange {
        started,
        origin,
        http_method: parts.method.clone(),
        path: redact_query(&path, &sh.redact_query_params).into_owned(),
        request,
        request_headers,
        capture,
    };
    // If this future is dropped before the response head arrives (the client went away, or the
    // proxy is shutting down), the guard still writes the exchange's record.
    let mut guard = PendingGuard {
        sh: sh.clone(),
        ex: Some(ex),
    };
    let send = upstream.send(&sh, Request::from_parts(parts, tap));
    let limit = sh.response_timeout;
    let result = if limit.is_zero() {
        send.await
    } else {
        let ex = guard.ex.as_mut().expect("armed until the response");
        tokio::select! {
            sent = send => sent,
            _ = response_deadline(&mut ex.request, limit) => Sent::TimedOut(limit),
        }
    };
    let mut ex = guard.ex.take().expect("the guard is disarmed only here");
    match result {
        Sent::Response(resp) => {
            let (mut parts, body) = resp.into_parts();
            let head = ResponseHead {
                status: parts.status.as_u16(),
                headers: parts
                    .headers
                    .iter()
                    .map(|(n, v)| {
                        (
                            n.as_str().to_string(),
                            String::from_utf8_lossy(v.as_bytes()).into_owned(),
                        )
                    })
                    .collect(),
            };
            let response_headers = observer.options().log_headers.then(|| {
                observer.loggable_headers(
                    parts
                        .headers
                        .iter()
                        .map(|(n, v)| (n.as_str(), v.as_bytes())),
                )
            });
            strip_hop_by_hop(&mut parts.headers);
            if let (Some(c), Some(capture)) = (ex.capture.as_mut(), sh.capture.as_ref()) {
                let headers = parts
                    .headers
                    .iter()
                    .map(|(n, v)| (n.as_str(), v.as_bytes()));
                c.response_head(parts.status.as_u16(), capture.headers(headers));
            }
            let obs = ResponseObserver {
                sh: sh.clone(),
                session_assigned: header_string(&parts.headers, &MCP_SESSION_ID),
                head,
                response_headers,
                bytes: 0,
                stage: Stage::Waiting {
                    pending: Vec::new(),
                    pending_bytes: 0,
                    overflow: false,
                },
                ex: Some(ex),
            };
            Ok(Response::from_parts(
                parts,
                ResponseTap {
                    in_flight: None,
                    inner: TapInner::Upstream(body),
                    observed: Some((
                        Arc::new(Mutex::new(TapState {
                            obs: Some(Box::new(obs)),
                            ..TapState::default()
                        })),
                        upstream.deferred.clone(),
                    )),
                },
            ))
        }
        failed => {
            // What the client gets: a status and a sentence, or its connection closed as the
            // upstream closed the proxy's; what the record says; whether the upstream may have
            // acted on the request.
            let (status, verdict, reached) = match failed {
                Sent::ConnectFailed(why) => {
                    let detail = format!(
                        "the proxy could not connect to the upstream {}: {why}",
                        sh.authority
                    );
                    (
                        Some(StatusCode::BAD_GATEWAY),
                        Verdict::connection_error(detail),
                        false,
                    )
                }
                Sent::Failed(_) if body_stalled.get().is_some() => {
                    let stalled = body_stalled.get().expect("checked");
                    let mut v = Verdict::timeout(
                        stalled.to_string()
                            + "; the upstream request was closed before its body ended",
                    );
                    v.limit = Some(stalled.limit());
                    // An incomplete body is not a request the upstream can act on.
                    (Some(StatusCode::REQUEST_TIMEOUT), v, false)
                }
                Sent::Failed(_) if body_malformed.get().is_some() => {
                    let why = body_malformed.get().expect("checked");
                    let v = Verdict::connection_error(format!(
                        "the client's request body could not be read ({why}); the upstream request was closed before its body ended"
                    ));
                    // An incomplete body is not a request the upstream can act on.
                    (Some(StatusCode::BAD_REQUEST), v, false)
                }
                Sent::Failed(e) => {
                    let detail = format!(
                        "the upstream closed the connection before a response: {}",
                        error_chain(&e)
                    );
                    (None, Verdict::connection_error(detail), true)
                }
                Sent::TimedOut(limit) => {
                    let mut v = Verdict::timeout(format!(
                        "the upstream sent no response head within {} ms of the request (response timeout); the upstream request was closed",
                        limit.as_millis()
                    ));
                    v.limit = Some(mcp_triage_core::LimitHit {
                        name: "responseTimeoutMs".into(),
                        max: limit.as_millis() as u64,
                    });
                    (Some(StatusCode::GATEWAY_TIMEOUT), v, true)
                }
                Sent::Response(_) => unreachable!("matched above"),
            };
            let detail = verdict.detail.clone().unwrap_or_default();
            // The record waits for the rest of the request body (at most REQUEST_DRAIN), the
            // client does not: it gets its answer now, and a shutdown that drops this handler
            // cannot drop the record with it.
            let code = status.map(|s| s.as_u16());
            // Nothing answered (the client's connection is closed): 502 in a capture.
            let answered = code.unwrap_or(502);
            record_without_response(&sh, ex, answered, move |plan, sh, ex| {
                plan.fail(sh, ex, verdict, reached, code, false)
            });
            match status {
                Some(status) => {
                    let body = format!("mcp-triage proxy: {detail}\n");
                    let mut resp = Response::builder()
                        .status(status)
                        .header(header::CONTENT_TYPE, "text/plain; charset=utf-8");
                    if status == StatusCode::REQUEST_TIMEOUT || status == StatusCode::BAD_REQUEST {
                        // The rest of the body is unread: the connection cannot carry another
                        // request.
                        resp = resp.header(header::CONNECTION, "close");
                    }
                    Ok(resp
                        .body(ResponseTap::fixed(Bytes::from(body)))
                        .expect("a static response is valid"))
                }
                None => Err(Cut),
            }
        }
    }
}

/// The proxy's own answer to a request it will not forward (DNS-rebinding protection): a `403`
/// whose body is a JSON-RPC error without id (as the MCP transport describes for an invalid
/// `Origin`) naming the reason, and a record saying `REFUSED` with the reason as a warning.
fn refuse(
    sh: &Shared,
    parts: &http::request::Parts,
    peer: &str,
    started: Instant,
    refusal: Refusal,
) -> Response<ResponseTap> {
    let observer = &sh.observer;
    let mut r = observer.new_record(RecordKind::Http);
    r.http_method = Some(parts.method.to_string());
    r.path = Some(
        redact_query(
            parts.uri.path_and_query().map_or("/", |p| p.as_str()),
            &sh.redact_query_params,
        )
        .into_owned(),
    );
    r.http_statuses = vec![403];
    r.outcome = "REFUSED".into();
    r.layer = Some("transport".into());
    r.classified = false;
    r.client =
        header_string(&parts.headers, &header::USER_AGENT).map(|ua| crate::record::ClientId {
            user_agent: Some(ua),
            ..Default::default()
        });
    r.warnings.push(crate::record::ProxyWarning {
        code: refusal.code.into(),
        detail: format!("{} (from {peer})", refusal.reason),
    });
    r.request_headers = observer.options().log_headers.then(|| {
        observer.loggable_headers(
            parts
                .headers
                .iter()
                .map(|(n, v)| (n.as_str(), v.as_bytes())),
        )
    });
    r.duration_ms = started.elapsed().as_secs_f64() * 1000.0;
    observer.emit(r);
    let body = serde_json::json!({
        "jsonrpc": "2.0",
        "error": {
            "code": -32000,
            "message": format!("Forbidden by the mcp-triage proxy: {}", refusal.reason),
        },
    });
    Response::builder()
        .status(StatusCode::FORBIDDEN)
        .header(header::CONTENT_TYPE, "application/json")
        .body(ResponseTap::fixed(Bytes::from(body.to_string())))
        .expect("a static response is valid")
}

/// Completes `limit` after the request body was read whole (the copy for the record arrived;
/// it is put back for the record); never when the body never ends, which the body read
/// timeout covers.
async fn response_deadline(request: &mut oneshot::Receiver<RequestCopy>, limit: Duration) {
    let copy = (&mut *request).await;
    let (tx, rx) = oneshot::channel();
    if let Ok(c) = copy {
        let _ = tx.send(c);
    }
    *request = rx;
    tokio::time::sleep(limit).await;
}

/// Writes the record of an exchange whose handler was dropped before the response head.
struct PendingGuard {
    sh: Arc<Shared>,
    ex: Option<Exchange>,
}

impl Drop for PendingGuard {
    fn drop(&mut self) {
        let Some(ex) = self.ex.take() else { return };
        record_without_response(&self.sh, ex, 502, |plan, sh, ex| {
            let v = Verdict::connection_error(
                "the client closed the connection (or the proxy stopped) before the response; the upstream request was closed",
            );
            plan.fail(sh, ex, v, true, None, true)
        });
    }
}

/// Writes the record(s) of an exchange that got no response from the upstream: at once when
/// the request body was read (so the retry state is updated before the client sees the
/// failure and can resend), else once it has been (at most [`REQUEST_DRAIN`] later), off the
/// forwarding path.
///
/// `answered` is the status the client got (for the capture; 502 when its connection was
/// closed instead).
fn record_without_response(
    sh: &Arc<Shared>,
    mut ex: Exchange,
    answered: u16,
    write: impl FnOnce(Plan, &Shared, &Exchange) -> String + Send + 'static,
) {
    if let Ok(copy) = ex.request.try_recv() {
        let capture = ex.capture.take();
        let plan = plan_without_response(sh, &ex, &copy);
        let verdict = write(plan, sh, &ex);
        capture_without_response(sh, capture, copy, answered, &verdict);
        return;
    }
    let Ok(rt) = tokio::runtime::Handle::try_current() else {
        return;
    };
    let sh = sh.clone();
    rt.spawn(async move {
        let rx = std::mem::replace(&mut ex.request, oneshot::channel().1);
        let copy = tokio::time::timeout(REQUEST_DRAIN, rx)
            .await
            .ok()
            .and_then(Result::ok)
            .unwrap_or_default();
        let capture = ex.capture.take();
        let plan = plan_without_response(&sh, &ex, &copy);
        let verdict = write(plan, &sh, &ex);
        capture_without_response(&sh, capture, copy, answered, &verdict);
    });
}

/// The capture line of an exchange without a response head (`end: "no_response"`).
fn capture_without_response(
    sh: &Shared,
    capture: Option<Box<ExchangeCapture>>,
    copy: RequestCopy,
    answered: u16,
    verdict: &str,
) {
    if let (Some(mut c), Some(to)) = (capture, sh.capture.as_ref()) {
        c.request_body(&copy.bytes, copy.overflow);
        c.finish(to, CaptureEnd::NoResponse, answered, verdict);
    }
}

fn plan_without_response(sh: &Arc<Shared>, ex: &Exchange, copy: &RequestCopy) -> Plan {
    let obs = ResponseObserver {
        sh: sh.clone(),
        session_assigned: None,
        head: ResponseHead::new(502),
        response_headers: None,
        bytes: 0,
        stage: Stage::Waiting {
            pending: Vec::new(),
            pending_bytes: 0,
            overflow: false,
        },
        ex: None,
    };
    obs.plan(ex, copy)
}

/// An error with its causes, `: `-separated (hyper's and reqwest's own messages leave out why a
/// connection or a TLS handshake failed).
pub(crate) fn error_chain(e: &dyn std::error::Error) -> String {
    let mut s = e.to_string();
    let mut cur = e.source();
    while let Some(c) = cur {
        s.push_str(": ");
        s.push_str(&c.to_string());
        cur = c.source();
    }
    s
}

/// The request body as far as it was read, for the record.
#[derive(Debug, Default)]
struct RequestCopy {
    bytes: Vec<u8>,
    total: u64,
    /// More bytes than `max_request_bytes` were sent; `bytes` is a prefix.
    overflow: bool,
}

/// The client's request body on its way upstream, copied (bounded) as it passes, and ended
/// with an error when the client stalls longer than the body read timeout.
pub struct RequestTap {
    inner: Option<Incoming>,
    copy: RequestCopy,
    max: u64,
    done: Option<oneshot::Sender<RequestCopy>>,
    /// See [`ProxyOptions::body_read_timeout`].
    idle_limit: Duration,
    /// Armed at the first wait for the client after a frame (not while the upstream is the one
    /// holding the body back: then the tap is not polled).
    idle: Option<Pin<Box<tokio::time::Sleep>>>,
    /// The whole-body deadline ([`ProxyOptions::body_deadline`]), armed at the request head.
    deadline: Option<(Duration, Pin<Box<tokio::time::Sleep>>)>,
    /// Set when a timeout ended the body, with which.
    timed_out: Arc<std::sync::OnceLock<BodyStalled>>,
    /// Set when the client's body could not be read (a broken chunked encoding), with why.
    malformed: Arc<std::sync::OnceLock<String>>,
}

/// Why the proxy ended a request body the client was still sending.
#[derive(Debug, Clone, Copy)]
enum BodyStalled {
    /// No bytes for [`ProxyOptions::body_read_timeout`].
    Gap(Duration),
    /// The whole body took longer than [`ProxyOptions::body_deadline`].
    Deadline(Duration),
}

impl BodyStalled {
    /// The limit, as the record names it.
    fn limit(self) -> mcp_triage_core::LimitHit {
        let (name, d) = match self {
            BodyStalled::Gap(d) => ("bodyReadTimeoutMs", d),
            BodyStalled::Deadline(d) => ("bodyDeadlineMs", d),
        };
        mcp_triage_core::LimitHit {
            name: name.into(),
            max: d.as_millis() as u64,
        }
    }
}

impl std::fmt::Display for BodyStalled {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            BodyStalled::Gap(d) => write!(
                f,
                "the client sent no request body bytes for {} ms (body read timeout)",
                d.as_millis()
            ),
            BodyStalled::Deadline(d) => write!(
                f,
                "the client's request body was not complete {} ms after its head (body deadline)",
                d.as_millis()
            ),
        }
    }
}

impl std::error::Error for BodyStalled {}

impl RequestTap {
    fn new(
        body: Incoming,
        max: u64,
        idle_limit: Duration,
        deadline: Duration,
    ) -> (RequestTap, oneshot::Receiver<RequestCopy>) {
        let (tx, rx) = oneshot::channel();
        let mut tap = RequestTap {
            inner: Some(body),
            copy: RequestCopy::default(),
            max,
            done: Some(tx),
            idle_limit,
            idle: None,
            deadline: (!deadline.is_zero())
                .then(|| (deadline, Box::pin(tokio::time::sleep(deadline)))),
            timed_out: Arc::new(std::sync::OnceLock::new()),
            malformed: Arc::new(std::sync::OnceLock::new()),
        };
        if tap.inner.as_ref().is_some_and(Body::is_end_stream) {
            tap.complete();
        }
        (tap, rx)
    }

    fn keep(copy: &mut RequestCopy, max: u64, data: &[u8]) {
        copy.total += data.len() as u64;
        if copy.overflow {
            return;
        }
        if copy.bytes.len() as u64 + data.len() as u64 > max {
            copy.overflow = true;
            copy.bytes = Vec::new();
        } else {
            copy.bytes.extend_from_slice(data);
        }
    }

    fn complete(&mut self) {
        if let Some(tx) = self.done.take() {
            let _ = tx.send(std::mem::take(&mut self.copy));
        }
    }

    /// Ends the body for `why`: the error the upstream request fails with.
    fn stall(&mut self, why: BodyStalled) -> Box<dyn std::error::Error + Send + Sync> {
        let _ = self.timed_out.set(why);
        self.complete();
        // The rest of the body is not wanted any more (not even for the record).
        self.inner = None;
        Box::new(why)
    }
}

impl Body for RequestTap {
    type Data = Bytes;
    type Error = Box<dyn std::error::Error + Send + Sync>;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Self::Error>>> {
        let this = self.get_mut();
        let Some(inner) = this.inner.as_mut() else {
            return Poll::Ready(None);
        };
        let ended = Body::is_end_stream(inner);
        let mut expired = None;
        if let Some((limit, sleep)) = this.deadline.as_mut() {
            if !ended && sleep.as_mut().poll(cx).is_ready() {
                expired = Some(*limit);
            }
        }
        if let Some(limit) = expired {
            return Poll::Ready(Some(Err(this.stall(BodyStalled::Deadline(limit)))));
        }
        let inner = this.inner.as_mut().expect("checked above");
        let r = Pin::new(inner).poll_frame(cx);
        match &r {
            Poll::Ready(Some(Ok(frame))) => {
                this.idle = None;
                if let Some(d) = frame.data_ref() {
                    Self::keep(&mut this.copy, this.max, d);
                }
                if this.inner.as_ref().is_some_and(Body::is_end_stream) {
                    this.complete();
                }
            }
            Poll::Ready(Some(Err(e))) => {
                let _ = this.malformed.set(error_chain(e));
                this.complete();
            }
            Poll::Ready(None) => this.complete(),
            Poll::Pending => {
                let limit = this.idle_limit;
                let idle = this
                    .idle
                    .get_or_insert_with(|| Box::pin(tokio::time::sleep(limit)));
                if idle.as_mut().poll(cx).is_ready() {
                    return Poll::Ready(Some(Err(this.stall(BodyStalled::Gap(limit)))));
                }
            }
        }
        r.map_err(Into::into)
    }

    fn is_end_stream(&self) -> bool {
        self.inner.as_ref().is_none_or(Body::is_end_stream)
    }

    fn size_hint(&self) -> SizeHint {
        self.inner
            .as_ref()
            .map(Body::size_hint)
            .unwrap_or_else(|| SizeHint::with_exact(0))
    }
}

impl Drop for RequestTap {
    fn drop(&mut self) {
        let Some(tx) = self.done.take() else { return };
        let mut copy = std::mem::take(&mut self.copy);
        let max = self.max;
        match (self.inner.take(), tokio::runtime::Handle::try_current()) {
            // The upstream stopped reading (refused, closed): read the rest for the record.
            (Some(mut body), Ok(rt)) => {
                rt.spawn(async move {
                    let _ = tokio::time::timeout(REQUEST_DRAIN, async {
                        while let Some(Ok(frame)) = body.frame().await {
                            if let Some(d) = frame.data_ref() {
                                RequestTap::keep(&mut copy, max, d);
                            }
                        }
                    })
                    .await;
                    let _ = tx.send(copy);
                });
            }
            _ => {
                let _ = tx.send(copy);
            }
        }
    }
}

/// How the response was observed, once the request's message(s) are known.
struct Plan {
    calls: Vec<Call>,
    /// Notifications and answers: 202 expected, no JSON-RPC response.
    messages: Vec<Record>,
    /// GET streams, DELETEs, other HTTP: one record without a JSON-RPC request.
    standalone: Option<Record>,
    /// Fed the body: for a single call, a message-only POST, or a GET stream.
    classifier: Option<ResponseClassifier>,
    /// `tools` of a `tools/list` result, read as the body passes.
    tools: Option<ToolsTap>,
    /// A bounded copy of a batch response, classified per request at the end.
    batch_copy: Option<(Vec<u8>, bool)>,
    /// Why the response is not classified, when it is not (see [`Plan::unclassifiable`]).
    unclassified: Option<String>,
    /// The record id that server requests seen on this stream point to.
    via: String,
    origin: Origin,
    request_bytes: u64,
}

enum Stage {
    /// The request body has not been read to its end yet: keep response chunks (bounded) until
    /// it has, then replay them into the plan. Forwarding never waits for this.
    Waiting {
        pending: Vec<Bytes>,
        pending_bytes: u64,
        overflow: bool,
    },
    Active(Box<Plan>),
}

struct ResponseObserver {
    sh: Arc<Shared>,
    ex: Option<Exchange>,
    head: ResponseHead,
    session_assigned: Option<String>,
    response_headers: Option<Vec<(String, String)>>,
    bytes: u64,
    stage: Stage,
}

enum End {
    Finished,
    Broken(String),
    Cancelled,
}

impl ResponseObserver {
    fn ctx(&self, id: RequestId, version: Option<&str>) -> CallContext {
        let mut ctx = CallContext::new(id)
            .with_limits(self.sh.observer.options().limits)
            .with_now(std::time::SystemTime::now());
        if let Some(v) = version.and_then(ProtocolVersion::parse) {
            ctx = ctx.with_protocol_version(v);
        }
        ctx.observe_messages = true;
        ctx
    }

    /// Decides what to record from the request's message(s).
    fn plan(&self, ex: &Exchange, copy: &RequestCopy) -> Plan {
        let observer = &self.sh.observer;
        let mut plan = Plan {
            calls: Vec::new(),
            messages: Vec::new(),
            standalone: None,
            classifier: None,
            tools: None,
            batch_copy: None,
            unclassified: None,
            via: String::new(),
            origin: ex.origin.clone(),
            request_bytes: copy.total,
        };
        let is_post = ex.http_method == Method::POST;
        let parsed = if is_post && !copy.overflow {
            parse_messages(&copy.bytes)
        } else {
            None
        };
        let post_count = if is_post {
            observer.count_post(&ex.origin)
        } else {
            None
        };
        let Some((messages, batch)) = parsed else {
            let kind = match ex.http_method {
                Method::GET if self.is_sse() => RecordKind::Stream,
                Method::DELETE => RecordKind::SessionEnd,
                _ => RecordKind::Http,
            };
            let mut r = observer.new_record(kind);
            r.session_id = ex
                .origin
                .session_id
                .clone()
                .filter(|_| observer.may_log_header("mcp-session-id"));
            r.protocol_version = ex.origin.protocol_version.clone();
            r.session_post_count = post_count;
            if copy.overflow {
                r.classified = false;
                r.warnings.push(crate::record::ProxyWarning {
                    code: "REQUEST_NOT_CLASSIFIED".into(),
                    detail: format!(
                        "the request body ({} bytes) is larger than maxRequestBytes = {}; it was forwarded whole but not read",
                        copy.total,
                        observer.options().max_request_bytes
                    ),
                });
            } else if is_post {
                r.warnings.push(crate::record::ProxyWarning {
                    code: "REQUEST_NOT_JSONRPC".into(),
                    detail: "the POSTed body is not a JSON-RPC message or batch".into(),
                });
            }
            if kind == RecordKind::Stream {
                plan.classifier = Some(ResponseClassifier::new(
                    &self.head,
                    // No request on a GET stream has this id: every message is observed.
                    self.ctx(RequestId::String("\u{0}get-stream".into()), None),
                ));
            }
            plan.via = r.record_id.clone();
            plan.standalone = Some(r);
            return plan;
        };
        for m in &messages {
            match m {
                Message::Request { id, method, params } => {
                    let mut call = observer.start_call(id, method, params, &ex.origin);
                    call.started = ex.started;
                    call.record.session_post_count = post_count;
                    call.record.http_method = Some(ex.http_method.to_string());
                    call.record.path = Some(ex.path.clone());
                    if method == "tools/list" && !batch {
                        plan.tools = Some(ToolsTap::new(self.is_sse(), observer.options().limits));
                    }
                    plan.calls.push(call);
                }
                other => {
                    let mut r = observer.message_record(other, &ex.origin);
                    r.session_post_count = post_count;
                    r.http_method = Some(ex.http_method.to_string());
                    r.path = Some(ex.path.clone());
                    plan.messages.push(r);
                }
            }
        }
        if batch && !plan.calls.is_empty() {
            plan.batch_copy = Some((Vec::new(), false));
        } else if let Some(call) = plan.calls.first() {
            let id =
                serde_json::from_value::<RequestId>(call.record.id.clone().unwrap_or_default())
                    .unwrap_or(RequestId::String(String::new()));
            plan.classifier = Some(ResponseClassifier::new(
                &self.head,
                self.ctx(id, call.record.protocol_version.as_deref())
                    .with_request_session(RequestSession::from_header(
                        ex.origin.session_id.as_deref(),
                    ))
                    // a tasks/get answer is a task's state, judged by the task rules
                    .with_request_kind(RequestKind::from_method(
                        call.record.method.as_deref().unwrap_or(""),
                    )),
            ));
        } else {
            plan.classifier = Some(ResponseClassifier::new(
                &self.head,
                self.ctx(RequestId::String("\u{0}messages".into()), None),
            ));
        }
        plan.via = plan
            .calls
            .first()
            .map(|c| c.record.record_id.clone())
            .or_else(|| plan.messages.first().map(|r| r.record_id.clone()))
            .unwrap_or_default();
        plan
    }

    /// The length a 2xx non-SSE response declares, when it is over `maxBodyBytes`: such a body
    /// is not copied for the classifier at all (a 2 GB JSON answer costs no memory), and its
    /// calls get a `LIMIT_EXCEEDED` verdict naming the limit, as the classifier would give once
    /// it had copied that much.
    fn declared_over_limit(&self) -> Option<u64> {
        if self.head.status / 100 != 2 || self.is_sse() {
            return None;
        }
        self.head
            .get("content-length")
            .and_then(|l| l.trim().parse::<u64>().ok())
            .filter(|&l| l > self.sh.observer.options().limits.max_body_bytes)
    }

    fn is_sse(&self) -> bool {
        self.head.get("content-type").is_some_and(|c| {
            c.trim_start()
                .to_ascii_lowercase()
                .starts_with("text/event-stream")
        })
    }

    fn feed(&mut self, chunk: &Bytes) {
        self.bytes += chunk.len() as u64;
        if let Some(c) = self.ex.as_mut().and_then(|ex| ex.capture.as_mut()) {
            c.chunk(chunk);
        }
        if let Stage::Waiting { .. } = self.stage {
            self.try_activate();
        }
        // Nothing of a body declared over the limit is kept while the request is still read.
        let too_big =
            matches!(self.stage, Stage::Waiting { .. }) && self.declared_over_limit().is_some();
        match &mut self.stage {
            Stage::Waiting {
                pending,
                pending_bytes,
                overflow,
            } => {
                if *overflow {
                    return;
                }
                if too_big
                    || *pending_bytes + chunk.len() as u64
                        > self.sh.observer.options().limits.max_body_bytes
                {
                    *overflow = true;
                    pending.clear();
                } else {
                    *pending_bytes += chunk.len() as u64;
                    pending.push(chunk.clone());
                }
            }
            Stage::Active(plan) => plan.feed(
                &self.sh,
                chunk,
                self.sh.observer.options().limits.max_body_bytes,
            ),
        }
    }

    fn try_activate(&mut self) {
        let Some(ex) = self.ex.as_mut() else { return };
        if let Ok(copy) = ex.request.try_recv() {
            self.activate(copy);
        }
    }

    fn activate(&mut self, copy: RequestCopy) {
        let Some(ex) = self.ex.as_ref() else { return };
        let mut plan = Box::new(self.plan(ex, &copy));
        if let Some(c) = self.ex.as_mut().and_then(|ex| ex.capture.as_mut()) {
            c.request_body(&copy.bytes, copy.overflow);
            c.protocol_version(
                plan.calls
                    .first()
                    .and_then(|call| call.record.protocol_version.clone()),
            );
        }
        if let Stage::Waiting {
            pending, overflow, ..
        } = std::mem::replace(
            &mut self.stage,
            Stage::Waiting {
                pending: Vec::new(),
                pending_bytes: 0,
                overflow: false,
            },
        ) {
            let max = self.sh.observer.options().limits.max_body_bytes;
            if let Some(declared) = self.declared_over_limit() {
                plan.unclassifiable(format!(
                    "the response declares Content-Length {declared}, more than maxBodyBytes = {max}; it was forwarded whole but not classified (and not copied)"
                ));
            } else if overflow {
                plan.unclassifiable(
                    "the response started before the request was read and outgrew the wait buffer; it was forwarded but not classified".to_string(),
                );
            }
            for c in &pending {
                plan.feed(&self.sh, c, max);
            }
        }
        self.stage = Stage::Active(plan);
    }

    /// The body ended, broke off, or the client went away.
    fn end(mut self, end: End) {
        if let Stage::Waiting { .. } = self.stage {
            self.try_activate();
        }
        if let Stage::Waiting { .. } = self.stage {
            // The request body is still being read (the server answered early): finish once it
            // has been, off the forwarding path.
            let Some(ex) = self.ex.as_mut() else { return };
            let rx = std::mem::replace(&mut ex.request, oneshot::channel().1);
            if let Ok(rt) = tokio::runtime::Handle::try_current() {
                rt.spawn(async move {
                    let copy = tokio::time::timeout(REQUEST_DRAIN, rx)
                        .await
                        .ok()
                        .and_then(Result::ok)
                        .unwrap_or_default();
                    self.activate(copy);
                    self.close(end);
                });
            }
            return;
        }
        self.close(end);
    }

    fn close(self, end: End) {
        let Stage::Active(plan) = self.stage else {
            return;
        };
        let Some(mut ex) = self.ex else { return };
        let capture = ex.capture.take();
        let ended = match &end {
            End::Finished => CaptureEnd::Complete,
            End::Broken(_) => CaptureEnd::UpstreamClosed,
            End::Cancelled => CaptureEnd::ClientCancelled,
        };
        let verdict = plan.finish(
            &self.sh,
            &ex,
            &self.head,
            end,
            self.bytes,
            self.session_assigned.as_deref(),
            self.response_headers,
        );
        if let (Some(c), Some(to)) = (capture, self.sh.capture.as_ref()) {
            c.finish(to, ended, self.head.status, &verdict);
        }
    }
}

impl Plan {
    /// The response is forwarded but not judged, for `why`: chunks that arrived before the
    /// request was read overflowed the wait buffer (the classifier cannot see the start of the
    /// body), or the body declares a length over the limit (no copy of it is kept at all).
    fn unclassifiable(&mut self, why: String) {
        self.unclassified = Some(why);
        self.classifier = None;
        self.tools = None;
        self.batch_copy = None;
        for c in &mut self.calls {
            c.record.classified = false;
        }
    }

    fn feed(&mut self, sh: &Shared, chunk: &Bytes, max_copy: u64) {
        if let Some(c) = self.classifier.as_mut() {
            if !c.is_decided() {
                c.feed(chunk);
                while let Some(ev) = c.poll_event() {
                    if let StreamEvent::ServerRequest { id, method, .. } = ev {
                        sh.observer
                            .server_request(id, method, &self.origin, &self.via);
                    }
                }
            }
        }
        if let Some(t) = self.tools.as_mut() {
            t.feed(chunk);
        }
        if let Some((buf, overflow)) = self.batch_copy.as_mut() {
            if !*overflow {
                if buf.len() as u64 + chunk.len() as u64 > max_copy {
                    *overflow = true;
                    buf.clear();
                } else {
                    buf.extend_from_slice(chunk);
                }
            }
        }
    }

    /// No response at all: every request gets `verdict`. Returns the first record's outcome
    /// (the exchange's verdict in a capture).
    fn fail(
        self,
        sh: &Shared,
        ex: &Exchange,
        verdict: Verdict,
        reached: bool,
        status: Option<u16>,
        cancelled: bool,
    ) -> String {
        let obs = &sh.observer;
        let mut first: Option<String> = None;
        for mut call in self.calls {
            first.get_or_insert_with(|| {
                crate::record::outcome_and_layer(Some(call.method()), verdict.outcome).0
            });
            call.record.request_bytes = self.request_bytes;
            call.record.cancelled = cancelled;
            if let Some(s) = status {
                call.record.http_statuses.push(s);
            }
            obs.finish_call(call, verdict.clone(), reached, None, None);
        }
        for mut r in self.messages.into_iter().chain(self.standalone) {
            r.duration_ms = ex.started.elapsed().as_secs_f64() * 1000.0;
            r.request_bytes = self.request_bytes;
            r.cancelled = cancelled;
            r.http_method
                .get_or_insert_with(|| ex.http_method.to_string());
            r.path.get_or_insert_with(|| ex.path.clone());
            r.http_statuses.extend(status);
            r.set_verdict(None, verdict.clone());
            first.get_or_insert_with(|| r.outcome.clone());
            obs.emit(r);
        }
        first.unwrap_or_default()
    }

    #[allow(clippy::too_many_arguments)]
    fn finish(
        self,
        sh: &Shared,
        ex: &Exchange,
        head: &ResponseHead,
        end: End,
        bytes: u64,
        session: Option<&str>,
        response_headers: Option<Vec<(String, String)>>,
    ) -> String {
        let obs = &sh.observer;
        // The first record's outcome: the exchange's verdict in a capture.
        let mut first: Option<String> = None;
        let cancelled = matches!(end, End::Cancelled);
        let verdict = self.classifier.map(|c| match &end {
            End::Finished => c.finish(),
            End::Broken(why) => c.interrupted(Interruption::ConnectionLost(why.clone())),
            End::Cancelled => c.interrupted(Interruption::ConnectionLost(
                "the client closed the connection".into(),
            )),
        });
        let tools = self.tools.and_then(ToolsTap::finish);
        let mut batch_verdicts = self.batch_copy.map(|(buf, overflow)| {
            batch_verdicts(head, &buf, overflow, &self.calls, obs.options().limits)
        });
        let stamp = |r: &mut Record| {
            r.request_bytes = self.request_bytes;
            r.response_bytes = bytes;
            r.cancelled = cancelled;
            r.http_statuses = vec![head.status];
            r.request_headers = ex.request_headers.clone();
            r.response_headers = response_headers.clone();
        };
        for (i, mut call) in self.calls.into_iter().enumerate() {
            stamp(&mut call.record);
            let v = match (&verdict, batch_verdicts.as_mut()) {
                (_, Some(vs)) => vs[i].take(),
                (Some(v), None) => Some(v.clone()),
                (None, None) => None,
            };
            if let Some(v) = &v {
                first.get_or_insert_with(|| {
                    crate::record::outcome_and_layer(Some(call.method()), v.outcome).0
                });
            }
            match v {
                Some(v) => obs.finish_call(call, v, true, session, tools.as_deref()),
                None => {
                    // Not classifiable (see `unclassifiable`): forwarded, not judged.
                    let why = self.unclassified.clone().unwrap_or_else(|| {
                        "the response was forwarded but not classified".to_string()
                    });
                    let mut v =
                        Verdict::new(mcp_triage_core::Outcome::LimitExceeded).with_detail(why);
                    v.limit = Some(mcp_triage_core::LimitHit {
                        name: "maxBodyBytes".into(),
                        max: obs.options().limits.max_body_bytes,
                    });
                    first.get_or_insert_with(|| v.outcome.as_str().to_string());
                    obs.finish_call(call, v, true, session, None)
                }
            }
        }
        let accepted = head.is_success() && !cancelled && matches!(end, End::Finished);
        for mut r in self.messages {
            stamp(&mut r);
            r.duration_ms = ex.started.elapsed().as_secs_f64() * 1000.0;
            match (&verdict, accepted) {
                (_, true) => {
                    r.outcome = "ACCEPTED".into();
                    r.layer = None;
                }
                (Some(v), false) => r.set_verdict(None, v.clone()),
                (None, false) => r.outcome = "HTTP_ERROR".into(),
            }
            first.get_or_insert_with(|| r.outcome.clone());
            obs.emit(r);
        }
        if let Some(mut r) = self.standalone {
            stamp(&mut r);
            r.duration_ms = ex.started.elapsed().as_secs_f64() * 1000.0;
            r.http_method = Some(ex.http_method.to_string());
            r.path = Some(ex.path.clone());
            match r.kind {
                RecordKind::Stream => {
                    if let Some(v) = verdict {
                        r.layer = Some("transport".into());
                        r.outcome = match &end {
                            End::Finished => "STREAM_CLOSED".into(),
                            End::Broken(_) => "CONNECTION_ERROR".into(),
                            End::Cancelled => "STREAM_CLOSED".into(),
                        };
                        r.verdict = Some(v);
                    }
                }
                RecordKind::SessionEnd => {
                    if head.is_success() {
                        if let Some(sid) = &ex.origin.session_id {
                            obs.session_ended(sid);
                        }
                    }
                    r.outcome = if head.is_success() {
                        "ACCEPTED".into()
                    } else {
                        "HTTP_ERROR".into()
                    };
                }
                _ => {
                    r.outcome = if head.is_success() {
                        "FORWARDED".into()
                    } else {
                        "HTTP_ERROR".into()
                    };
                }
            }
            if let End::Broken(why) = &end {
                if r.kind != RecordKind::Stream {
                    r.set_verdict(None, Verdict::connection_error(why.clone()));
                }
            }
            first.get_or_insert_with(|| r.outcome.clone());
            obs.emit(r);
        }
        first.unwrap_or_default()
    }
}

/// One verdict per call of a batch, from the batch response's elements.
fn batch_verdicts(
    head: &ResponseHead,
    buf: &[u8],
    overflow: bool,
    calls: &[Call],
    limits: mcp_triage_core::Limits,
) -> Vec<Option<Verdict>> {
    let elements: Option<Vec<Value>> = (!overflow && head.is_success())
        .then(|| serde_json::from_slice::<Value>(buf).ok())
        .flatten()
        .and_then(|v| match v {
            Value::Array(a) => Some(a),
            _ => None,
        });
    calls
        .iter()
        .map(|call| {
            let id_value = call.record.id.clone().unwrap_or_default();
            let id = serde_json::from_value::<RequestId>(id_value.clone()).ok()?;
            let ctx = CallContext::new(id).with_limits(limits);
            if overflow {
                return None;
            }
            let own = elements.as_ref().and_then(|els| {
                els.iter()
                    .find(|e| e.get("id") == Some(&id_value))
                    .map(|e| serde_json::to_vec(e).expect("a value serialises"))
            });
            let json_head = ResponseHead::new(head.status).content_type("application/json");
            Some(match own {
                Some(bytes) => classify(&json_head, &bytes, &ctx),
                None => classify(head, buf, &ctx),
            })
        })
        .collect()
}

/// Reads the `tools` array of a `tools/list` result as the body passes (JSON or SSE), bounded by
/// the classification limits.
struct ToolsTap {
    sse: Option<SseParser>,
    json: Vec<u8>,
    max: u64,
    overflow: bool,
    tools: Option<Vec<Value>>,
}

impl ToolsTap {
    fn new(sse: bool, limits: mcp_triage_core::Limits) -> ToolsTap {
        ToolsTap {
            sse: sse.then(|| SseParser::new(limits.max_event_bytes)),
            json: Vec::new(),
            max: limits.max_body_bytes,
            overflow: false,
            tools: None,
        }
    }

    fn feed(&mut self, chunk: &[u8]) {
        if self.overflow || self.tools.is_some() {
            return;
        }
        if let Some(p) = self.sse.as_mut() {
            let mut found = None;
            let r = p.feed(chunk, &mut |item| {
                if let SseItem::Event { data, .. } = item {
                    if let Some(t) = tools_of(data) {
                        found = Some(t);
                        return Flow::Stop;
                    }
                }
                Flow::Continue
            });
            if r.is_err() {
                self.overflow = true;
            }
            self.tools = found;
        } else if self.json.len() as u64 + chunk.len() as u64 > self.max {
            self.overflow = true;
            self.json = Vec::new();
        } else {
            self.json.extend_from_slice(chunk);
        }
    }

    fn finish(self) -> Option<Vec<Value>> {
        if self.overflow {
            return None;
        }
        self.tools.or_else(|| tools_of(&self.json))
    }
}

fn tools_of(data: &[u8]) -> Option<Vec<Value>> {
    let v: Value = serde_json::from_slice(data).ok()?;
    match v.get("result")?.get("tools")? {
        Value::Array(a) => Some(a.clone()),
        _ => None,
    }
}

/// The upstream's response body on its way to the client, fed to the observer as it passes.
pub struct ResponseTap {
    inner: TapInner,
    /// What the observer has yet to see and the connection's queue it waits in; `None` for
    /// the proxy's own responses and once the body ended.
    observed: Option<(Arc<Mutex<TapState>>, Arc<Deferred>)>,
    /// Marks the connection busy until this response is dropped (see [`ConnActivity`]).
    in_flight: Option<InFlight>,
}

enum TapInner {
    Upstream(Incoming),
    Fixed(Option<Bytes>),
}

impl ResponseTap {
    fn fixed(b: Bytes) -> ResponseTap {
        ResponseTap {
            inner: TapInner::Fixed(Some(b)),
            observed: None,
            in_flight: None,
        }
    }

    /// Notes a chunk and/or the end for the observer, and queues the work (see [`Deferred`]).
    fn note(&mut self, chunk: Option<&Bytes>, end: Option<End>) {
        let Some((state, deferred)) = self.observed.as_ref() else {
            return;
        };
        let mut st = state.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(c) = chunk {
            st.passed.push(c.clone());
        }
        if end.is_some() {
            st.end = end;
        }
        if !st.queued {
            st.queued = true;
            deferred.push(state);
        }
    }

    fn ended(&mut self, end: End) {
        self.note(None, Some(end));
        // Nothing more will pass: later calls (Drop) must not record a second end.
        self.observed = None;
    }
}

impl Body for ResponseTap {
    type Data = Bytes;
    type Error = hyper::Error;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, hyper::Error>>> {
        let this = self.get_mut();
        let inner = match &mut this.inner {
            TapInner::Fixed(b) => return Poll::Ready(b.take().map(|b| Ok(Frame::data(b)))),
            TapInner::Upstream(i) => i,
        };
        let r = Pin::new(inner).poll_frame(cx);
        match &r {
            Poll::Ready(Some(Ok(frame))) => {
                if let Some(d) = frame.data_ref() {
                    this.note(Some(d), None);
                }
            }
            Poll::Ready(Some(Err(e))) => this.ended(End::Broken(format!(
                "the upstream connection broke: {}",
                error_chain(e)
            ))),
            Poll::Ready(None) => this.ended(End::Finished),
            Poll::Pending => {}
        }
        r
    }

    fn is_end_stream(&self) -> bool {
        match &self.inner {
            TapInner::Upstream(i) => i.is_end_stream(),
            TapInner::Fixed(b) => b.is_none(),
        }
    }

    fn size_hint(&self) -> SizeHint {
        match &self.inner {
            TapInner::Upstream(i) => i.size_hint(),
            TapInner::Fixed(Some(b)) => SizeHint::with_exact(b.len() as u64),
            TapInner::Fixed(None) => SizeHint::with_exact(0),
        }
    }
}

impl Drop for ResponseTap {
    fn drop(&mut self) {
        if self.observed.is_some() {
            // hyper may drop a body that is already at its end without polling it again.
            let done = matches!(&self.inner, TapInner::Upstream(i) if i.is_end_stream());
            self.ended(if done { End::Finished } else { End::Cancelled });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The haltpoll rule: short quiet periods open the window up to the ceiling, long ones
    /// close it again; a period the spin already caught changes nothing.
    #[test]
    fn the_spin_window_follows_how_soon_traffic_comes_back() {
        let us = |n: u64| n * 1_000;
        let mut w = SpinWindow::new(Duration::from_micros(200));
        assert_eq!(w.limit_ns, 0, "starts closed");
        // Answers after 100 µs: 0 -> 50 (grow start) -> 100 -> 200, never past the ceiling.
        w.quiet_period_ended(us(100));
        assert_eq!(w.limit_ns, us(50));
        w.quiet_period_ended(us(100));
        assert_eq!(w.limit_ns, us(100));
        w.quiet_period_ended(us(150));
        assert_eq!(w.limit_ns, us(200));
        w.quiet_period_ended(us(190));
        assert_eq!(w.limit_ns, us(200), "the ceiling holds");
        // A period inside the window (the spin caught it) leaves it alone.
        w.quiet_period_ended(us(20));
        assert_eq!(w.limit_ns, us(200));
        // Milliseconds between exchanges: halved each time, down to nothing.
        for expected_ns in [100_000, 50_000, 25_000, 12_500] {
            w.quiet_period_ended(us(5_000));
            assert_eq!(w.limit_ns, expected_ns);
        }
        for _ in 0..20 {
            w.quiet_period_ended(us(5_000));
        }
        assert_eq!(w.limit_ns, 0, "a slow server costs no spinning");
        // A ceiling below the grow start is still a ceiling; zero never opens.
        let mut small = SpinWindow::new(Duration::from_micros(30));
        small.quiet_period_ended(us(10));
        assert_eq!(small.limit_ns, us(30));
        let mut off = SpinWindow::new(Duration::ZERO);
        off.quiet_period_ended(0);
        off.quiet_period_ended(us(10));
        assert_eq!(off.limit_ns, 0);
    }

    #[test]
    fn hop_by_hop_headers_go() {
        let mut h = HeaderMap::new();
        h.insert("connection", HeaderValue::from_static("close, x-private"));
        h.insert("x-private", HeaderValue::from_static("1"));
        h.insert("keep-alive", HeaderValue::from_static("timeout=5"));
        h.insert("transfer-encoding", HeaderValue::from_static("chunked"));
        h.insert("mcp-session-id", HeaderValue::from_static("s"));
        h.insert("content-type", HeaderValue::from_static("application/json"));
        strip_hop_by_hop(&mut h);
        let names: Vec<_> = h.keys().map(|k| k.as_str()).collect();
        assert_eq!(names.len(), 2, "{names:?}");
        assert!(h.contains_key("mcp-session-id") && h.contains_key("content-type"));
    }

    #[test]
    fn upstreams_must_be_http_or_https_origins() {
        assert!(parse_origin("http://127.0.0.1:8080").is_ok());
        assert!(parse_origin("http://127.0.0.1:8080/").is_ok());
        assert!(parse_origin("https://mcp.example.com").is_ok());
        for bad in [
            "127.0.0.1:80",
            "ftp://x",
            "http://h/mcp",
            "https://h/mcp",
            "::",
        ] {
            assert!(parse_origin(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn tools_are_read_from_json_and_sse() {
        let body = br#"{"jsonrpc":"2.0","id":1,"result":{"tools":[{"name":"a"}]}}"#;
        let mut t = ToolsTap::new(false, mcp_triage_core::Limits::DEFAULT);
        t.feed(&body[..10]);
        t.feed(&body[10..]);
        assert_eq!(t.finish().unwrap().len(), 1);
        let mut t = ToolsTap::new(true, mcp_triage_core::Limits::DEFAULT);
        t.feed(b"event: message\ndata: ");
        t.feed(body);
        t.feed(b"\n\n");
        assert_eq!(t.finish().unwrap()[0]["name"], "a");
    }
}
