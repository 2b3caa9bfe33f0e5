//! The proxy's settings ([`ProxyOptions`]), their defaults, and the errors that keep it from
//! starting: what `mcp-triage proxy` parses its flags into before [`super::start`].

use std::io;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use http::Uri;
use tokio_rustls::rustls::pki_types::CertificateDer;

use crate::capture::Capture;
use crate::observe::ObserveOptions;

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

/// The default ceiling of the adaptive spin (see [`Spin`](super::spin::Spin)): `cpuidle-haltpoll`'s
/// default.
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
    /// ceiling to how soon traffic usually comes back; see [`Spin`](super::spin::Spin).
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

pub(super) fn parse_origin(s: &str) -> Result<Uri, ProxyError> {
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

#[cfg(test)]
mod tests {
    use super::*;

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
}
