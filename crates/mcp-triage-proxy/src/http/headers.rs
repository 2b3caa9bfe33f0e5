//! Header handling shared by the request and response paths: the hop-by-hop headers that never
//! cross the proxy, and the MCP header names the observer reads.

use http::header::{self, HeaderMap, HeaderName};

/// Hop-by-hop header names (RFC 9110 §7.6.1), removed in both directions besides those the
/// `Connection` header lists. `HeaderName`s rather than strings, as are [`MCP_SESSION_ID`] and
/// [`MCP_PROTOCOL_VERSION`]: a `HeaderMap` looked up by a string parses and checks the name on
/// every call, which was about 2% of the proxy's instructions per exchange.
static HOP_BY_HOP: [HeaderName; 7] = [
    header::CONNECTION,
    HeaderName::from_static("proxy-connection"),
    HeaderName::from_static("keep-alive"),
    header::TE,
    header::TRAILER,
    header::TRANSFER_ENCODING,
    header::UPGRADE,
];
pub(super) static MCP_SESSION_ID: HeaderName = HeaderName::from_static("mcp-session-id");
pub(super) static MCP_PROTOCOL_VERSION: HeaderName =
    HeaderName::from_static("mcp-protocol-version");

pub(super) fn header_string(h: &HeaderMap, name: &HeaderName) -> Option<String> {
    h.get(name)
        .and_then(|v| v.to_str().ok())
        .map(str::to_string)
}

/// Removes hop-by-hop headers: the fixed list and every name `Connection` lists.
pub fn strip_hop_by_hop(h: &mut HeaderMap) {
    // Most heads carry none (a name `Connection` lists counts only with a `Connection`): one
    // look at each name costs a tenth of the removals, which hash every name of the list.
    if !h.keys().any(|n| HOP_BY_HOP.contains(n)) {
        return;
    }
    let listed: Vec<HeaderName> = h
        .get_all(header::CONNECTION)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .filter_map(|t| HeaderName::from_bytes(t.trim().as_bytes()).ok())
        .collect();
    for n in listed {
        h.remove(n);
    }
    for n in &HOP_BY_HOP {
        h.remove(n);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use http::header::HeaderValue;

    #[test]
    fn hop_by_hop_headers_go() {
        let mut h = HeaderMap::new();
        h.insert("connection", HeaderValue::from_static("close, x-private"));
        h.insert("x-private", HeaderValue::from_static("1"));
        h.insert("keep-alive", HeaderValue::from_static("timeout=5"));
        h.insert("transfer-encoding", HeaderValue::from_static("chunked"));
        h.insert("mcp-session-id", HeaderValue::from_static("s"));
        h.insert("content-type", HeaderValue::from_static("application/json"));
        strip_hop_by_hop(&mut h);
        let names: Vec<_> = h.keys().map(|k| k.as_str()).collect();
        assert_eq!(names.len(), 2, "{names:?}");
        assert!(h.contains_key("mcp-session-id") && h.contains_key("content-type"));
    }

    #[test]
    fn one_hop_by_hop_header_goes_and_the_rest_stay_in_order() {
        let mut h = HeaderMap::new();
        h.insert(
            "content-type",
            HeaderValue::from_static("text/event-stream"),
        );
        h.insert("x-private", HeaderValue::from_static("1"));
        h.insert("te", HeaderValue::from_static("trailers"));
        h.insert("mcp-session-id", HeaderValue::from_static("s"));
        strip_hop_by_hop(&mut h);
        let names: Vec<_> = h.keys().map(|k| k.as_str()).collect();
        assert_eq!(names, ["content-type", "x-private", "mcp-session-id"]);
        let before = h.clone();
        strip_hop_by_hop(&mut h);
        assert_eq!(
            h, before,
            "a head without hop-by-hop headers is left as it is"
        );
    }
}
