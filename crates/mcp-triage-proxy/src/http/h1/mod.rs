//! HTTP/1.1 as the proxy speaks it to the upstream: the request head written
//! ([`request_head`]), the response head read ([`response_head`]), and chunked bodies
//! ([`chunked`]). No I/O here: [`super::upstream_body`] reads and writes the socket.

pub(super) mod chunked;
pub(super) mod request_head;
pub(super) mod response_head;
