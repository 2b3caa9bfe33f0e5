//! The HTTP side of a response: status, headers, media type, `Retry-After`, `WWW-Authenticate`.
//! Only parsing lives here; the rules that use it are in [`crate::classify`].

mod auth;
pub mod decode;
mod media;
mod retry_after;

pub use auth::parse_www_authenticate;
pub use media::{MediaType, MediaTypeKind};
pub use retry_after::parse_retry_after;

/// The status line and headers of one HTTP response, as received. Header names compare
/// case-insensitively; a header may repeat.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ResponseHead {
    /// HTTP status code.
    pub status: u16,
    /// Header name/value pairs in the order received.
    pub headers: Vec<(String, String)>,
}

impl ResponseHead {
    /// A head with this status and no headers.
    pub fn new(status: u16) -> ResponseHead {
        ResponseHead {
            status,
            headers: Vec::new(),
        }
    }

    /// Adds a header.
    pub fn header(mut self, name: impl Into<String>, value: impl Into<String>) -> ResponseHead {
        self.headers.push((name.into(), value.into()));
        self
    }

    /// Sets `Content-Type` (an empty value means "no header").
    pub fn content_type(self, value: &str) -> ResponseHead {
        if value.is_empty() {
            self
        } else {
            self.header("Content-Type", value)
        }
    }

    /// The first value of a header.
    pub fn get(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    /// Every value of a header, in order.
    pub fn get_all<'a>(&'a self, name: &'a str) -> impl Iterator<Item = &'a str> + 'a {
        self.headers
            .iter()
            .filter(move |(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    /// True for 200-299.
    pub fn is_success(&self) -> bool {
        (200..300).contains(&self.status)
    }
}

/// The reason phrase of common statuses, for detail sentences.
pub(crate) fn reason(status: u16) -> &'static str {
    match status {
        200 => "OK",
        202 => "Accepted",
        204 => "No Content",
        400 => "Bad Request",
        401 => "Unauthorized",
        403 => "Forbidden",
        404 => "Not Found",
        405 => "Method Not Allowed",
        406 => "Not Acceptable",
        408 => "Request Timeout",
        409 => "Conflict",
        413 => "Content Too Large",
        415 => "Unsupported Media Type",
        422 => "Unprocessable Content",
        429 => "Too Many Requests",
        500 => "Internal Server Error",
        501 => "Not Implemented",
        502 => "Bad Gateway",
        503 => "Service Unavailable",
        504 => "Gateway Timeout",
        _ => "",
    }
}
