//! The heads the proxy holds: a request's ([`RequestParts`]), read from the client and then
//! made ready for the upstream, and a response's ([`ResponseParts`]), read from the upstream or
//! made by the proxy, then written to the client. Both keep their fields in the bytes they were
//! read in ([`Fields`]).

use bytes::Bytes;
use http::{Method, StatusCode, Uri};

use super::fields::{FieldValue, Fields, Known};

/// A request head.
#[derive(Debug)]
pub(crate) struct RequestParts {
    pub(crate) method: Method,
    /// The request target as the client sent it; the upstream gets its path and query.
    pub(crate) uri: Uri,
    /// The client spoke HTTP/1.1 (else 1.0); the upstream is always spoken to in 1.1.
    pub(crate) http_11: bool,
    pub(crate) fields: Fields,
}

impl RequestParts {
    /// The target's path and query: `/` for a target without one (authority form).
    pub(crate) fn path(&self) -> &str {
        self.uri.path_and_query().map_or("/", |p| p.as_str())
    }
}

/// A response head.
#[derive(Debug)]
pub(crate) struct ResponseParts {
    pub(crate) status: StatusCode,
    /// The upstream's reason phrase when it is not the status's canonical one, so the client
    /// gets the upstream's words (`404 Gone Fishing`).
    pub(crate) reason: Option<Bytes>,
    pub(crate) fields: Fields,
    /// The transfer codings other than `chunked` the body came with (`gzip` of `gzip,
    /// chunked`): the proxy passes the body on as it came, so the client's head names them
    /// (see [`super::framing`]).
    pub(crate) codings: Option<Bytes>,
}

impl ResponseParts {
    /// The proxy's own response head: `status` and `fields`.
    pub(crate) fn own(status: StatusCode, fields: &[(Known, &'static str)]) -> ResponseParts {
        let mut head = ResponseParts {
            status,
            reason: None,
            fields: Fields::default(),
            codings: None,
        };
        for &(name, value) in fields {
            head.fields.append(name, FieldValue::from_static(value));
        }
        head
    }
}
