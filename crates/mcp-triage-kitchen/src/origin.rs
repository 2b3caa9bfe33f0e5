//! The origin a client used, for the absolute URLs the kitchen advertises: an instance's
//! endpoint URL, protected-resource metadata, the authorization server's issuer.
//!
//! A leaf (it takes the bound address, not the shared state), so the authorization server
//! and the endpoint can both build URLs the same way.

use std::net::SocketAddr;

use axum::http::HeaderMap;

/// A header's value as text (`None` when absent or not visible ASCII).
pub(crate) fn header_str<'a>(h: &'a HeaderMap, name: &str) -> Option<&'a str> {
    h.get(name).and_then(|v| v.to_str().ok())
}

/// The origin the client used, for the URLs the kitchen advertises (resource metadata, the
/// authorization server's issuer and endpoints). Behind a proxy that is the proxy's address, not
/// the kitchen's: a forwarded host (RFC 7239 `Forwarded`, else `X-Forwarded-Host` with
/// `X-Forwarded-Proto`) wins over `Host`. The accept loop removes these headers from requests of
/// peers that are not on loopback ([`crate::server`]), so only a local proxy can name the origin.
pub(crate) fn base_url(local_addr: Option<SocketAddr>, headers: &HeaderMap) -> String {
    if let Some((proto, host)) = forwarded_origin(headers) {
        return format!("{proto}://{host}");
    }
    if let Some(h) = header_str(headers, "host").filter(|h| is_host_port(h)) {
        return format!("http://{h}");
    }
    match local_addr {
        Some(a) => format!("http://{a}"),
        None => "http://127.0.0.1".into(),
    }
}

/// The forwarded scheme and host, when a proxy named a well-formed one. The first element of
/// `Forwarded` (the proxy nearest the client) counts; a host that is not `host[:port]` is
/// ignored rather than advertised.
fn forwarded_origin(headers: &HeaderMap) -> Option<(&'static str, String)> {
    let proto_of = |p: Option<&str>| match p.map(str::trim) {
        Some(p) if p.eq_ignore_ascii_case("https") => Some("https"),
        Some(p) if p.eq_ignore_ascii_case("http") => Some("http"),
        None => Some("http"),
        Some(_) => None,
    };
    if let Some(f) = header_str(headers, "forwarded") {
        let first = f.split(',').next().unwrap_or("");
        let mut host = None;
        let mut proto = None;
        for pair in first.split(';') {
            let Some((k, v)) = pair.split_once('=') else {
                continue;
            };
            let v = v.trim().trim_matches('"');
            match k.trim().to_ascii_lowercase().as_str() {
                "host" => host = Some(v),
                "proto" => proto = Some(v),
                _ => {}
            }
        }
        if let Some(h) = host.filter(|h| is_host_port(h)) {
            return proto_of(proto).map(|p| (p, h.to_string()));
        }
    }
    let host = header_str(headers, "x-forwarded-host")?;
    let host = host.split(',').next().unwrap_or("").trim();
    if !is_host_port(host) {
        return None;
    }
    let proto = header_str(headers, "x-forwarded-proto").map(|p| p.split(',').next().unwrap_or(""));
    proto_of(proto).map(|p| (p, host.to_string()))
}

/// `host`, `host:port` or `[v6]:port`: nothing that could turn an advertised URL into another
/// (no `/`, `@`, `?`, `#`, spaces or quotes).
fn is_host_port(h: &str) -> bool {
    !h.is_empty()
        && h.len() <= 255
        && h.bytes().all(|b| {
            b.is_ascii_alphanumeric() || matches!(b, b'.' | b'-' | b':' | b'[' | b']' | b'_')
        })
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::HeaderValue;

    fn headers(pairs: &[(&'static str, &str)]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (n, v) in pairs {
            h.insert(*n, HeaderValue::from_str(v).unwrap());
        }
        h
    }

    #[test]
    fn the_forwarded_origin_wins_over_host_when_well_formed() {
        let f = |p: &[(&'static str, &str)]| forwarded_origin(&headers(p));
        assert_eq!(
            f(&[("x-forwarded-host", "127.0.0.1:9000")]),
            Some(("http", "127.0.0.1:9000".into()))
        );
        assert_eq!(
            f(&[
                ("x-forwarded-host", "gw.example:443, inner:80"),
                ("x-forwarded-proto", "https")
            ]),
            Some(("https", "gw.example:443".into()))
        );
        assert_eq!(
            f(&[(
                "forwarded",
                "for=1.2.3.4;host=\"[::1]:8080\";proto=http, host=other"
            )]),
            Some(("http", "[::1]:8080".into()))
        );
        // Nothing that could redirect an advertised URL, and no unknown schemes.
        assert_eq!(f(&[("x-forwarded-host", "evil.example/path")]), None);
        assert_eq!(f(&[("x-forwarded-host", "a@b")]), None);
        assert_eq!(
            f(&[("x-forwarded-host", "h"), ("x-forwarded-proto", "gopher")]),
            None
        );
        assert_eq!(f(&[("host", "127.0.0.1:1")]), None);
    }
}
