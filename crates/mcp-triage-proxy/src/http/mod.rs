//! The HTTP observer: a reverse proxy in front of one upstream origin.
//!
//! Forwarding comes first: every request goes upstream with its method, path and query, its
//! end-to-end headers, and its body streamed frame by frame; every response comes back the same
//! way. The observer only *taps* those frames: the request body is copied (bounded) to read the
//! JSON-RPC message, the response body is fed to the core's
//! [`ResponseClassifier`](mcp_triage_core::ResponseClassifier) as it passes. Neither tap can hold a
//! frame back or change it, and a classification limit only stops the classifier, never the stream.
//!
//! Upstreams: `http://` or `https://`. An https upstream is reached over TLS (rustls, TLS 1.2
//! and 1.3, ALPN `http/1.1`), its certificate checked against Mozilla's roots (webpki-roots,
//! so the machine's certificate store plays no part) plus any `--upstream-ca` certificates;
//! a certificate that does not verify is a connection error (`502`, `CONNECTION_ERROR` naming
//! the reason), never a silent fallback. The client side stays plain HTTP: run the proxy next to
//! the client, or put it behind a TLS terminator.
//!
//! Connections: the client's disconnect drops the response body, which holds the upstream
//! connection and so closes it (HTTP/1 cannot reuse it mid-response) — the 2026-07-28
//! way to cancel a request. An upstream that cannot be reached gets the client a `502`; one that
//! accepted the request and closed without a response gets the client's connection closed the
//! same way, so the client sees what it would have seen without the proxy.
//!
//! The modules, in the order an exchange meets them:
//!
//! - `options`: [`ProxyOptions`] and its defaults; `shared`: what every exchange reads.
//! - `serve`: [`start`], the accept loop and the connection cap (`activity`: which
//!   connections are idle); each connection becomes one `paired` task, whose client side is
//!   corked (`cork`) and which may spin after traffic (`spin`).
//! - `client_conn`: the connection's loop, HTTP/1.1 spoken by the proxy's own code (`h1`:
//!   heads and bodies' ends, no I/O): request heads read, each exchange handled, the answer
//!   written; `client_body`: the client's socket as the loop and the request body read it.
//! - `forward`: one exchange: the request head rewritten (`headers`), its body tapped
//!   (`request_body`), sent through the connection's `upstream`, the response answered.
//! - `upstream`: the upstream connection, spoken to by the proxy's own HTTP/1.1 (`h1`: heads
//!   and chunked bodies, no I/O); `upstream_body`: the request written and the response read
//!   on it; `upstream_io`: its socket (plain or TLS) that keeps an early answer readable.
//! - `response_body`: the response body tapped on its way to the client; `deferred`: the
//!   observer's work run after the client's bytes are written.
//! - `response_observer`: the observer's side of one response, which builds and feeds the
//!   `plan` (the classifier, which keeps a `tools/list` response, the batch copy) and ends in
//!   records.
//! - `no_response`: records of exchanges that got no response head; `exchange`: what both
//!   paths know of an exchange; `errors`: `Cut` and `error_chain`.

mod activity;
mod client_body;
mod client_conn;
mod cork;
mod deferred;
mod errors;
mod exchange;
mod forward;
mod h1;
mod headers;
mod no_response;
mod options;
mod paired;
mod plan;
mod read_into;
mod request_body;
mod response_body;
mod response_observer;
mod serve;
mod shared;
mod spin;
mod upstream;
mod upstream_body;
mod upstream_io;

pub(crate) use errors::error_chain;
/// The HTTP/1.1 parsers' invariants for the fuzz targets and the corpus test (not an API).
#[doc(hidden)]
pub mod fuzzing {
    pub use super::h1::fuzzing::{chunked_body, request_head, response_head};
}
pub use options::{
    HostCheck, ProxyError, ProxyOptions, DEFAULT_BODY_DEADLINE, DEFAULT_BODY_READ_TIMEOUT,
    DEFAULT_MAX_CONNECTIONS, DEFAULT_RESPONSE_TIMEOUT, DEFAULT_SPIN,
};
pub use request_body::RequestTap;
pub use response_body::ResponseTap;
pub use serve::{start, ProxyHandle};
