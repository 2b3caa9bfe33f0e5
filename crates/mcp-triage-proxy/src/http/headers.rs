//! Header handling shared by the request and response paths: the hop-by-hop headers that never
//! cross the proxy, and the MCP header names the observer reads.

use super::h1::fields::{Fields, Known};

pub(super) const MCP_SESSION_ID: Known = Known::McpSessionId;
pub(super) const MCP_PROTOCOL_VERSION: Known = Known::McpProtocolVersion;

/// The first value of `name` as an owned string (see [`Fields::get_str`]).
pub(super) fn header_string(fields: &Fields, name: Known) -> Option<String> {
    fields.get_str(name).map(str::to_string)
}

/// Removes hop-by-hop headers (RFC 9110 §7.6.1): the fixed list ([`Known::HOP_BY_HOP`]) and
/// every name `Connection` lists.
pub(super) fn strip_hop_by_hop(fields: &mut Fields) {
    // Most heads carry none (a name `Connection` lists counts only with a `Connection`).
    if !fields.has_hop_by_hop() {
        return;
    }
    let listed: Vec<Vec<u8>> = fields
        .get_all(Known::Connection)
        .flat_map(|v| v.split(|&b| b == b','))
        .map(|t| t.trim_ascii().to_ascii_lowercase())
        .filter(|t| !t.is_empty())
        .collect();
    for n in listed {
        fields.remove_named(&n);
    }
    for k in Known::HOP_BY_HOP {
        fields.remove(k);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::http::h1::fields::tests::fields;

    fn names(f: &Fields) -> Vec<&str> {
        f.iter().map(|(n, _)| n).collect()
    }

    #[test]
    fn hop_by_hop_headers_go() {
        let mut h = fields(&[
            ("Connection", "close, X-Private"),
            ("x-private", "1"),
            ("keep-alive", "timeout=5"),
            ("transfer-encoding", "chunked"),
            ("mcp-session-id", "s"),
            ("content-type", "application/json"),
        ]);
        strip_hop_by_hop(&mut h);
        assert_eq!(names(&h), ["mcp-session-id", "content-type"]);
    }

    #[test]
    fn one_hop_by_hop_header_goes_and_the_rest_stay_in_order() {
        let mut h = fields(&[
            ("content-type", "text/event-stream"),
            ("x-private", "1"),
            ("te", "trailers"),
            ("mcp-session-id", "s"),
        ]);
        strip_hop_by_hop(&mut h);
        assert_eq!(names(&h), ["content-type", "x-private", "mcp-session-id"]);
        strip_hop_by_hop(&mut h);
        assert_eq!(
            names(&h),
            ["content-type", "x-private", "mcp-session-id"],
            "a head without hop-by-hop headers is left as it is"
        );
    }

    #[test]
    fn a_known_name_connection_lists_goes_too() {
        let mut h = fields(&[("connection", "Via"), ("via", "1.0 x"), ("host", "h")]);
        strip_hop_by_hop(&mut h);
        assert_eq!(names(&h), ["host"]);
    }

    #[test]
    fn session_ids_are_read_as_visible_text_only() {
        let h = fields(&[("Mcp-Session-Id", "abc"), ("user-agent", "caf\u{e9}")]);
        assert_eq!(header_string(&h, MCP_SESSION_ID).as_deref(), Some("abc"));
        assert_eq!(header_string(&h, Known::UserAgent), None);
        assert_eq!(header_string(&h, MCP_PROTOCOL_VERSION), None);
    }
}
