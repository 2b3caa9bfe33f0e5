//! What is known of one exchange before its response ([`Exchange`]): made by
//! [`super::forward::handle`], consumed by the response observer or, without a response, by
//! [`super::no_response`].

use std::time::Instant;

use http::Method;

use super::request_body::PendingCopy;
use crate::capture::ExchangeCapture;
use crate::observe::Origin;

/// Everything known about an exchange before its response.
pub(super) struct Exchange {
    pub(super) started: Instant,
    pub(super) origin: Origin,
    pub(super) http_method: Method,
    pub(super) path: String,
    pub(super) request: PendingCopy,
    pub(super) request_headers: Option<Vec<(String, String)>>,
    /// The exchange's capture, with `--capture`.
    pub(super) capture: Option<Box<ExchangeCapture>>,
}
