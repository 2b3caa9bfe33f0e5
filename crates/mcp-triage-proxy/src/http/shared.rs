//! What every exchange of a running proxy reads ([`Shared`]): the observer, the upstream's
//! address and TLS client, and the limits, built once from [`super::ProxyOptions`] at start.

use std::sync::Arc;
use std::time::Duration;

use http::uri::Authority;
use tokio_rustls::rustls::pki_types::{CertificateDer, ServerName};
use tokio_rustls::TlsConnector;

use super::options::ProxyError;
use super::spin::Spin;
use crate::capture::Capture;
use crate::guard::HostPolicy;
use crate::observe::Observer;

pub(super) struct Shared {
    pub(super) observer: Observer,
    pub(super) authority: Authority,
    /// `host:port` to connect to (port 80, or 443 for https, when the origin has none).
    pub(super) connect_to: String,
    /// The upstream's `Host` value, shared by every request head.
    pub(super) host: bytes::Bytes,
    /// For an https upstream: the connector and the name its certificate must carry.
    pub(super) tls: Option<(TlsConnector, ServerName<'static>)>,
    /// See [`ProxyOptions::connect_timeout`](super::options::ProxyOptions::connect_timeout).
    pub(super) connect_timeout: Duration,
    /// `Host`/`Origin` checks, when on.
    pub(super) host_policy: Option<HostPolicy>,
    /// See
    /// [`ProxyOptions::redact_query_params`](super::options::ProxyOptions::redact_query_params).
    pub(super) redact_query_params: Vec<String>,
    /// See [`ProxyOptions::body_read_timeout`](super::options::ProxyOptions::body_read_timeout).
    pub(super) body_read_timeout: Duration,
    /// See [`ProxyOptions::body_deadline`](super::options::ProxyOptions::body_deadline).
    pub(super) body_deadline: Duration,
    /// See [`ProxyOptions::response_timeout`](super::options::ProxyOptions::response_timeout).
    pub(super) response_timeout: Duration,
    /// See [`ProxyOptions::capture`](super::options::ProxyOptions::capture).
    pub(super) capture: Option<Arc<Capture>>,
    /// Set when the proxy spins (see [`Spin`]).
    pub(super) spin: Option<Arc<Spin>>,
    /// Observe a response after its bytes went to the client (see
    /// [`Deferred`](super::deferred::Deferred)), not before.
    ///
    /// Only on a current-thread runtime: there the connection tasks run one at a time, so
    /// nothing a client does after seeing a response — a resend on another connection, above
    /// all — can be observed before that response's record has updated the retry state. With
    /// several forwarding threads another connection's task could, so there each response is
    /// observed before it is written, as an observer that must link retries needs.
    pub(super) observe_after_write: bool,
}

/// The TLS client for an https upstream: rustls with ring, Mozilla's roots plus `extra`, ALPN
/// `http/1.1` (the proxy speaks HTTP/1.1 to the upstream).
pub(super) fn tls_connector(
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
