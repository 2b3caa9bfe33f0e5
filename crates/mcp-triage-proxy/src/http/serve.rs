//! Serving: the listener, the accept loop that turns each client connection into a [`Paired`]
//! task, the connection cap, and the handle that shuts it all down. The start of the flow: each
//! request a connection reads goes to [`super::forward::handle`].

use std::io;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;
use tokio::task::JoinSet;

use super::activity::ConnActivity;
use super::client_body::ClientReader;
use super::client_conn::{serve, ClientConn};
use super::cork::{Cork, CorkedStream};
use super::options::{HostCheck, ProxyError, ProxyOptions};
use super::paired::Paired;
use super::shared::{tls_connector, Shared};
use super::spin::{spin_loop, Spin};
use super::upstream::Upstream;
use crate::guard::HostPolicy;
use crate::observe::Observer;
use crate::RecordSink;

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
        host: bytes::Bytes::copy_from_slice(authority.as_str().as_bytes()),
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
    // Open connections read no new request once this says true.
    let (draining, draining_rx) = watch::channel(false);
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
                let upstream = Upstream::new();
                let deferred = upstream.deferred.clone();
                let activity = ConnActivity::new(base);
                let client = ClientConn {
                    sh: shared.clone(),
                    upstream,
                    // Formatted once per connection, not per request.
                    peer: peer.ip().to_string().into(),
                    activity: activity.clone(),
                    header_read_timeout: options.header_read_timeout,
                    draining: draining_rx.clone(),
                };
                let reader = ClientReader::new(stream);
                let handle = conns.spawn(Paired::new(
                    Box::pin(serve(client, reader, cork.clone())),
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
    // Open exchanges may finish (idle connections close at once), within the drain timeout.
    let _ = draining.send(true);
    let _ = tokio::time::timeout(options.drain_timeout, async {
        while conns.join_next().await.is_some() {}
    })
    .await;
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
