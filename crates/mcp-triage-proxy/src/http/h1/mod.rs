//! HTTP/1.1 as the proxy speaks it, both ways, without I/O: the client's request head read
//! ([`incoming_request`]) and its answer's head written ([`outgoing_response`]); the request
//! head the upstream gets ([`request_head`]) and the upstream's response head read
//! ([`response_head`]); bodies' ends found ([`body`], [`chunked`]). The heads are held as
//! [`parts`], their fields in the bytes they were read in ([`fields`]). [`super::client_conn`] and
//! [`super::upstream_body`] read and write the sockets.

pub(super) mod body;
pub(super) mod chunked;
pub(super) mod fields;
pub(super) mod framing;
pub(super) mod fuzzing;
pub(super) mod incoming_request;
pub(super) mod outgoing_response;
pub(super) mod parts;
pub(super) mod request_head;
pub(super) mod response_head;
