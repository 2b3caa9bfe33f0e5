//! The record line's `path` with query secrets redacted, as `mcp-triage proxy` writes its
//! records' paths (`mcp_triage_proxy::guard::redact_query` with no `--redact-query-param`).
//!
//! Why a copy of the proxy's list and not a dependency: this library is linked into nginx, and
//! the proxy crate brings an HTTP stack with it. `tests/query.rs` holds the two equal (the
//! list, and the redacted path of every case) so they cannot drift apart.

use std::borrow::Cow;

/// Query parameters whose values never reach a record: the proxy's `SECRET_QUERY_PARAMS`.
pub const SECRET_QUERY_PARAMS: [&str; 20] = [
    "access_token",
    "refresh_token",
    "id_token",
    "token",
    "code",
    "code_verifier",
    "client_secret",
    "key",
    "api_key",
    "apikey",
    "api-key",
    "password",
    "passwd",
    "secret",
    "signature",
    "sig",
    "auth",
    "x-amz-signature",
    "x-amz-security-token",
    "x-goog-signature",
];

/// What a secret's value is replaced by (the proxy's `REDACTED`).
pub const REDACTED: &str = "REDACTED";

/// Whether a query parameter name (as written, percent-encoded or not) is a secret's: compared
/// case-insensitively after form decoding, as the proxy compares.
fn secret(name: &str) -> bool {
    let decoded = if name.bytes().any(|b| b == b'%' || b == b'+') {
        Cow::Owned(mcp_triage_wire::percent::decode_form(name))
    } else {
        Cow::Borrowed(name)
    };
    SECRET_QUERY_PARAMS
        .iter()
        .any(|n| n.eq_ignore_ascii_case(&decoded))
}

/// `path` (path and query) with the value of every secret query parameter replaced by
/// [`REDACTED`]; names and everything else stay as they were. Borrowed when nothing is secret
/// (most paths: a gateway writes one per exchange).
pub fn redact_query(path: &str) -> Cow<'_, str> {
    let Some(at) = path.find('?') else {
        return Cow::Borrowed(path);
    };
    let (before, query) = (&path[..at], &path[at + 1..]);
    // most queries hold no secret: look before building
    if !query
        .split('&')
        .any(|pair| pair.split_once('=').is_some_and(|(name, _)| secret(name)))
    {
        return Cow::Borrowed(path);
    }
    let pairs: Vec<String> = query
        .split('&')
        .map(|pair| match pair.split_once('=') {
            Some((name, _)) if secret(name) => format!("{name}={REDACTED}"),
            _ => pair.to_string(),
        })
        .collect();
    Cow::Owned(format!("{before}?{}", pairs.join("&")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secrets_are_redacted_and_the_rest_stays() {
        let cases = [
            ("/mcp", "/mcp"),
            ("/mcp?x=1", "/mcp?x=1"),
            ("/mcp?access_token=AT&x=1", "/mcp?access_token=REDACTED&x=1"),
            (
                "/mcp?x=1&Client_Secret=S&code=C&flag",
                "/mcp?x=1&Client_Secret=REDACTED&code=REDACTED&flag",
            ),
            ("/mcp?access%5Ftoken=AT", "/mcp?access%5Ftoken=REDACTED"),
            (
                "/mcp?api+key=K&api-key=K2",
                "/mcp?api+key=K&api-key=REDACTED",
            ),
            ("/mcp?token", "/mcp?token"),
        ];
        for (path, want) in cases {
            assert_eq!(redact_query(path), want, "{path}");
        }
        assert!(matches!(redact_query("/mcp?x=1"), Cow::Borrowed(_)));
    }
}
