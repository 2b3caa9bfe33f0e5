//! The kitchen's own accept loop (hyper 1, HTTP/1.1).
//!
//! It exists instead of `axum::serve` for three reasons a fault-injection server needs:
//! a scenario can drop a connection without any response (the service returns an error,
//! so hyper closes the socket and writes nothing); a slow client cannot hold a connection
//! open forever (header read timeout); and shutdown is bounded even while SSE streams are
//! open (graceful for a moment, then every connection task is aborted).

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use axum::body::Body;
use axum::Router;
use hyper::body::Incoming;
use hyper::server::conn::http1;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::server::graceful::GracefulShutdown;
use tokio::net::TcpListener;
use tokio::sync::watch;
use tokio::task::JoinSet;
use tower::ServiceExt;

use crate::sse::AbortConnection;
use crate::state::{KitchenError, KitchenOptions, Shared};
use crate::Kitchen;

/// Error returned to hyper to make it drop the connection without a response.
#[derive(Debug)]
struct Dropped;

impl std::fmt::Display for Dropped {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("connection dropped by scenario")
    }
}
impl std::error::Error for Dropped {}

/// A running kitchen.
pub struct KitchenHandle {
    addr: SocketAddr,
    kitchen: Kitchen,
    stop: watch::Sender<bool>,
    task: tokio::task::JoinHandle<()>,
}

impl KitchenHandle {
    /// The bound address (useful after binding port 0).
    pub fn local_addr(&self) -> SocketAddr {
        self.addr
    }
    /// `http://{addr}`.
    pub fn base_url(&self) -> String {
        format!("http://{}", self.addr)
    }
    /// `http://{addr}/mcp`: the endpoint serving the stored selection.
    pub fn mcp_url(&self) -> String {
        format!("{}/mcp", self.base_url())
    }
    /// `http://{addr}/s/{scenario}/mcp`: a per-URL instance (append `?param=…` as needed).
    pub fn scenario_url(&self, scenario: &str) -> String {
        format!("{}/s/{scenario}/mcp", self.base_url())
    }
    /// State: counters, journal, selection.
    pub fn kitchen(&self) -> &Kitchen {
        &self.kitchen
    }
    /// Stop accepting, give open connections a moment, then abort the rest.
    pub async fn shutdown(self) {
        let _ = self.stop.send(true);
        let _ = self.task.await;
    }
}

/// Bind `addr` and serve the kitchen. A non-loopback address is refused unless
/// `options.admin_token` is set, because the admin API can reconfigure the server; an empty
/// admin token is refused.
pub async fn start(
    addr: SocketAddr,
    options: KitchenOptions,
) -> Result<KitchenHandle, KitchenError> {
    start_with(addr, options, crate::router).await
}

/// [`start`] with another router over the same state (`kitchen --replay` serves captured
/// exchanges instead of scenarios, with the same accept loop, admin API and journal).
pub(crate) async fn start_with(
    addr: SocketAddr,
    options: KitchenOptions,
    router: impl FnOnce(Kitchen) -> Router,
) -> Result<KitchenHandle, KitchenError> {
    crate::options::check_admin_token(&options)?;
    if !addr.ip().is_loopback() && options.admin_token.is_none() {
        return Err(KitchenError::NonLoopback(addr));
    }
    let header_timeout = options.header_read_timeout;
    let kitchen = Kitchen::new(options)?;
    let listener = TcpListener::bind(addr).await?;
    let local = listener.local_addr()?;
    *kitchen.shared().local_addr.lock().expect("addr lock") = Some(local);
    let app = router(kitchen.clone());
    let (stop, stop_rx) = watch::channel(false);
    let task = tokio::spawn(accept_loop(
        listener,
        app,
        stop_rx,
        header_timeout,
        kitchen.shared().clone(),
    ));
    Ok(KitchenHandle {
        addr: local,
        kitchen,
        stop,
        task,
    })
}

async fn accept_loop(
    listener: TcpListener,
    app: Router,
    mut stop: watch::Receiver<bool>,
    header_timeout: Duration,
    _shared: Arc<Shared>,
) {
    let graceful = GracefulShutdown::new();
    let mut conns = JoinSet::new();
    loop {
        while conns.try_join_next().is_some() {}
        tokio::select! {
            accepted = listener.accept() => {
                let Ok((stream, peer)) = accepted else {
                    // Out of descriptors or similar: back off instead of spinning.
                    tokio::time::sleep(Duration::from_millis(20)).await;
                    continue;
                };
                let _ = stream.set_nodelay(true);
                let app = app.clone();
                let trusts_forwarding = trusts_forwarding(peer);
                let service = hyper::service::service_fn(move |mut req: hyper::Request<Incoming>| {
                    let app = app.clone();
                    if !trusts_forwarding {
                        strip_forwarding(req.headers_mut());
                    }
                    async move {
                        let resp = match app.oneshot(req.map(Body::new)).await {
                            Ok(r) => r,
                            Err(e) => match e {},
                        };
                        if resp.extensions().get::<AbortConnection>().is_some() {
                            Err(Dropped)
                        } else {
                            Ok::<_, Dropped>(resp)
                        }
                    }
                });
                let conn = http1::Builder::new()
                    .timer(TokioTimer::new())
                    .header_read_timeout(header_timeout)
                    .serve_connection(TokioIo::new(stream), service);
                let conn = graceful.watch(conn);
                conns.spawn(async move {
                    let _ = conn.await;
                });
            }
            _ = stop.changed() => break,
        }
    }
    drop(listener);
    let _ = tokio::time::timeout(Duration::from_millis(500), graceful.shutdown()).await;
    conns.abort_all();
    while conns.join_next().await.is_some() {}
}

/// Whether `peer` may name the client's origin with forwarding headers: loopback only.
fn trusts_forwarding(peer: std::net::SocketAddr) -> bool {
    peer.ip().is_loopback()
}

/// Only a proxy on this machine may tell the kitchen which address its client used: from any
/// other peer the forwarding headers are dropped, so a remote client cannot make the kitchen
/// advertise (as resource metadata or issuer) an origin of its choosing.
fn strip_forwarding(h: &mut hyper::HeaderMap) {
    for name in ["forwarded", "x-forwarded-host", "x-forwarded-proto"] {
        h.remove(name);
    }
}

#[allow(dead_code)]
fn _assert_infallible(e: Infallible) -> ! {
    match e {}
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_loopback_peers_may_name_the_origin() {
        assert!(trusts_forwarding("127.0.0.1:5".parse().unwrap()));
        assert!(trusts_forwarding("[::1]:5".parse().unwrap()));
        assert!(!trusts_forwarding("10.0.0.2:5".parse().unwrap()));
        assert!(!trusts_forwarding("[2001:db8::1]:5".parse().unwrap()));
        let mut h = hyper::HeaderMap::new();
        for n in ["forwarded", "x-forwarded-host", "x-forwarded-proto", "host"] {
            h.insert(n, "x".parse().unwrap());
        }
        strip_forwarding(&mut h);
        assert_eq!(h.keys().map(|k| k.as_str()).collect::<Vec<_>>(), ["host"]);
    }
}
