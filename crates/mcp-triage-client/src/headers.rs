//! What every HTTP request of the client carries (the user's headers and bearer token), how a
//! header value is encoded, and what a GET stream's response head must be.

use base64::Engine;

use crate::oauth::BearerCell;

/// A 2xx `text/event-stream` response: what a GET stream must be before the client reads it.
pub(crate) fn is_event_stream(resp: &reqwest::Response) -> bool {
    let sse = resp
        .headers()
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .is_some_and(|c| c.to_ascii_lowercase().starts_with("text/event-stream"));
    resp.status().is_success() && sse
}

/// The user's extra headers (`--header`) and bearer token on a request: every HTTP request
/// the client sends carries both (POST, resumption GET, standalone GET, DELETE, and the legacy
/// HTTP+SSE transport's GET and POSTs), so a server behind auth sees them on each.
pub(crate) fn with_auth(
    mut req: reqwest::RequestBuilder,
    headers: &[(String, String)],
    bearer: Option<&str>,
) -> reqwest::RequestBuilder {
    for (k, v) in headers {
        req = req.header(k.as_str(), v.as_str());
    }
    match bearer {
        Some(t) => req.bearer_auth(t),
        None => req,
    }
}

/// The user's extra headers and the token the client holds (`--bearer`, or what OAuth
/// obtained): Bearer, or DPoP with a proof for this very request ([`BearerCell::authorize`]).
pub(crate) fn with_token(
    req: reqwest::RequestBuilder,
    headers: &[(String, String)],
    token: &BearerCell,
) -> reqwest::RequestBuilder {
    token.authorize(with_auth(req, headers, None))
}

/// A header value as sent: plain when it is visible ASCII (inner spaces allowed), else the
/// `=?base64?…?=` form.
pub fn header_value(s: &str) -> String {
    let plain = !s.is_empty()
        && s.bytes().all(|b| (0x20..0x7f).contains(&b))
        && !s.starts_with(' ')
        && !s.ends_with(' ')
        && !s.starts_with("=?base64?");
    if plain {
        s.to_string()
    } else {
        format!(
            "=?base64?{}?=",
            base64::engine::general_purpose::STANDARD.encode(s.as_bytes())
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn header_values_encode_non_ascii() {
        assert_eq!(header_value("get_weather"), "get_weather");
        assert_eq!(header_value("a b"), "a b");
        assert_eq!(header_value("café"), "=?base64?Y2Fmw6k=?=");
        assert_eq!(header_value(" x"), "=?base64?IHg=?=");
        assert_eq!(header_value("line\nbreak"), "=?base64?bGluZQpicmVhaw==?=");
    }
}
