//! Secrets kept out of every record, capture, journal and log line: the one list of header
//! names ([`SECRET_HEADERS`]), the one list of query parameter names ([`SECRET_QUERY_PARAMS`])
//! and the one query redaction ([`redact_query`]) the proxy's records and captures, the
//! kitchen's journal and the C ABI's record line (what the nginx modules log) all apply. One
//! home, so that a gateway's log and the proxy's record never disagree about what is a secret.

use std::borrow::Cow;

/// Header names whose values never reach a record, a span, a capture or the kitchen's journal,
/// whatever the options say (`--redact-header` adds to them; compared case-insensitively):
/// credentials (`Authorization` and the API-key and token headers in common use) and cookies.
/// One list for the proxy's guard and the kitchen's journal, which once hid 4 of these 14.
pub const SECRET_HEADERS: [&str; 14] = [
    "authorization",
    "proxy-authorization",
    "cookie",
    "set-cookie",
    "x-api-key",
    "api-key",
    "x-auth-token",
    "x-access-token",
    "x-amz-security-token",
    "x-goog-api-key",
    "x-csrf-token",
    "private-token",
    "ocp-apim-subscription-key",
    "x-functions-key",
];

/// True when `name` is a secret header: in [`SECRET_HEADERS`] or in `extra`.
pub fn is_secret_header(name: &str, extra: &[String]) -> bool {
    SECRET_HEADERS.iter().any(|h| h.eq_ignore_ascii_case(name))
        || extra.iter().any(|h| h.eq_ignore_ascii_case(name))
}

/// Query parameters whose values never reach a record or a capture, whatever the options say
/// (`--redact-query-param` adds to them). One list for both, so a capture never keeps what the
/// records hide: OAuth tokens, codes and client secrets, API keys in their common spellings,
/// passwords, and URL signatures (pre-signed S3/GCS links carry theirs in the query).
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

/// What replaces a redacted query value in a record's `path`.
pub const REDACTED: &str = "REDACTED";

/// `path` (path and query) with the value of every query parameter named in `names` (or in
/// [`SECRET_QUERY_PARAMS`]; names compared case-insensitively after percent-decoding) replaced
/// by [`REDACTED`]. The parameter names and everything else stay as they were.
pub fn redact_query<'a>(path: &'a str, names: &[String]) -> Cow<'a, str> {
    // `memchr`, not `split_once('?')`: a `char` pattern's searcher set itself up at about 180
    // instructions a call, and every exchange's path passes here.
    let Some(at) = memchr::memchr(b'?', path.as_bytes()) else {
        return Cow::Borrowed(path);
    };
    // `at` is an ASCII byte's index: a char boundary
    let (before, query) = (&path[..at], &path[at + 1..]);
    let secret = |name: &str| {
        // A name without `%` or `+` decodes to itself: no copy needed.
        let decoded = if name.bytes().any(|b| b == b'%' || b == b'+') {
            Cow::Owned(crate::percent::decode_form(name))
        } else {
            Cow::Borrowed(name)
        };
        SECRET_QUERY_PARAMS
            .iter()
            .any(|n| n.eq_ignore_ascii_case(&decoded))
            || names.iter().any(|n| n.eq_ignore_ascii_case(&decoded))
    };
    // Split on one-`char` arrays (a step per character), for the same reason: a query is a
    // few dozen bytes. The name of a `name=value` pair; one without `=` has no value to redact.
    let name_of = |pair: &'a str| pair.split_once(['=']).map(|(name, _)| name);
    // Every exchange's path passes here and most queries hold no secret: look before building.
    if !query
        .split(['&'])
        .any(|pair| name_of(pair).is_some_and(secret))
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
    fn query_secrets_are_redacted_and_the_rest_is_left_as_it_was() {
        let extra = vec!["Sig".to_string()];
        for (path, want) in [
            ("/mcp", "/mcp"),
            ("/mcp?", "/mcp?"),
            ("/mcp?responseMode=json", "/mcp?responseMode=json"),
            ("/mcp?token=abc&x=1", "/mcp?token=REDACTED&x=1"),
            ("/mcp?x=1&API_KEY=k&flag", "/mcp?x=1&API_KEY=REDACTED&flag"),
            ("/mcp?acc%65ss_token=t", "/mcp?acc%65ss_token=REDACTED"),
            ("/mcp?sig=s&é=ü", "/mcp?sig=REDACTED&é=ü"),
            ("/mcp?token", "/mcp?token"),
            // one pair: `b` is `c?token=d`
            ("/a?b=c?token=d", "/a?b=c?token=d"),
        ] {
            let got = redact_query(path, &extra);
            assert_eq!(got, want, "{path}");
            assert_eq!(matches!(got, Cow::Borrowed(_)), path == want, "{path}");
        }
    }
}
