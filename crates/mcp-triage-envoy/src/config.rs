//! The filter's configuration (the `filter_config` string of the dynamic-modules filter, JSON)
//! and the state every stream of it shares: the metric ids Envoy gave us and the tool labels
//! admitted so far.

use std::collections::HashSet;
use std::sync::Mutex;

use serde::Deserialize;

/// Tool labels longer than this are cut (as in the nginx module and `proxy --ui`).
pub const TOOL_LABEL_MAX: usize = 128;

/// The options, camelCase JSON; every member optional, an unknown one an error (a typo must not
/// silently fall back to a default).
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
pub struct Options {
    /// The `server` label of the metrics (the upstream's host:port).
    pub server: String,
    /// Larger request bodies pass unclassified (the body is copied up to this many bytes).
    pub max_body_bytes: usize,
    /// A response body silent this long before it broke off is `TIMEOUT` rather than a lost
    /// connection: keep it equal to the route's `idle_timeout`.
    pub read_timeout_ms: u64,
    /// Tool names that get their own metric series; later ones count as `other`.
    pub max_tools: usize,
    /// The core's limits (`maxBodyBytes`, ...), as the bindings take them; `null` = defaults.
    pub limits: Option<serde_json::Map<String, serde_json::Value>>,
    /// The upstream closed the connection after the request, before a response head: reset the
    /// client's stream as `mcp-triage proxy` and the nginx module do, instead of Envoy's 503.
    pub close_on_upstream_loss: bool,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            server: "upstream".into(),
            max_body_bytes: 1 << 20,
            read_timeout_ms: 60_000,
            max_tools: 100,
            limits: None,
            close_on_upstream_loss: true,
        }
    }
}

/// Upper bounds that keep a configuration from asking for absurd memory.
pub const MAX_BODY_BYTES_LIMIT: usize = 64 << 20;
pub const MAX_TOOLS_LIMIT: usize = 10_000;

impl Options {
    /// Reads the filter configuration: empty = the defaults. The error names what was wrong.
    pub fn parse(text: &[u8]) -> Result<Options, String> {
        let text =
            std::str::from_utf8(text).map_err(|e| format!("filter_config is not UTF-8: {e}"))?;
        let o: Options = if text.trim().is_empty() {
            Options::default()
        } else {
            serde_json::from_str(text).map_err(|e| format!("filter_config: {e}"))?
        };
        if o.max_body_bytes == 0 || o.max_body_bytes > MAX_BODY_BYTES_LIMIT {
            return Err(format!(
                "filter_config: maxBodyBytes {} is outside 1..={MAX_BODY_BYTES_LIMIT}",
                o.max_body_bytes
            ));
        }
        if o.max_tools > MAX_TOOLS_LIMIT {
            return Err(format!(
                "filter_config: maxTools {} is over {MAX_TOOLS_LIMIT}",
                o.max_tools
            ));
        }
        if o.read_timeout_ms == 0 {
            return Err("filter_config: readTimeoutMs must be positive".into());
        }
        Ok(o)
    }

    /// The limits as the NUL-terminated JSON the C ABI takes, or `None` for the defaults.
    pub fn limits_json(&self) -> Option<std::ffi::CString> {
        let limits = self.limits.as_ref()?;
        let text = serde_json::to_string(limits).ok()?;
        std::ffi::CString::new(text).ok()
    }
}

/// The metric ids of one filter configuration (Envoy's, from `define_counter` and friends).
#[derive(Debug, Clone, Copy)]
pub struct MetricIds {
    pub calls: usize,
    pub duration: usize,
}

/// What every stream of one filter configuration shares; `Sync`: Envoy's workers use it at once.
pub struct Shared {
    pub options: Options,
    pub limits_json: Option<std::ffi::CString>,
    pub metrics: Option<MetricIds>,
    tools: Mutex<HashSet<Vec<u8>>>,
}

impl Shared {
    pub fn new(options: Options, metrics: Option<MetricIds>) -> Shared {
        Shared {
            limits_json: options.limits_json(),
            options,
            metrics,
            tools: Mutex::new(HashSet::new()),
        }
    }

    /// The `tool` label of a call: its name cut to [`TOOL_LABEL_MAX`] bytes (at a character
    /// boundary) while fewer than `max_tools` names were seen, `other` after, `unknown` for a
    /// call without a name: the series stay bounded whatever clients send.
    pub fn tool_label<'a>(&self, tool: Option<&'a [u8]>) -> &'a [u8] {
        let Some(tool) = tool.filter(|t| !t.is_empty()) else {
            return b"unknown";
        };
        let cut = cut_label(tool);
        let mut seen = match self.tools.lock() {
            Ok(g) => g,
            Err(poisoned) => poisoned.into_inner(),
        };
        if seen.contains(cut) {
            return cut;
        }
        if seen.len() < self.options.max_tools {
            seen.insert(cut.to_vec());
            return cut;
        }
        b"other"
    }
}

/// `tool` cut to at most [`TOOL_LABEL_MAX`] bytes without splitting a UTF-8 character.
pub fn cut_label(tool: &[u8]) -> &[u8] {
    if tool.len() <= TOOL_LABEL_MAX {
        return tool;
    }
    let mut end = TOOL_LABEL_MAX;
    while end > 0 && (tool[end] & 0xC0) == 0x80 {
        end -= 1;
    }
    &tool[..end]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn empty_config_is_the_defaults() {
        assert_eq!(Options::parse(b"").unwrap(), Options::default());
        assert_eq!(Options::parse(b"  ").unwrap(), Options::default());
    }

    #[test]
    fn options_are_read_and_unknown_ones_refused() {
        let o = Options::parse(br#"{"server":"127.0.0.1:9","maxBodyBytes":65536,"maxTools":2,"readTimeoutMs":500,"limits":{"maxBodyBytes":1000},"closeOnUpstreamLoss":false}"#).unwrap();
        assert_eq!(o.server, "127.0.0.1:9");
        assert_eq!(o.max_body_bytes, 65536);
        assert_eq!(o.max_tools, 2);
        assert_eq!(o.read_timeout_ms, 500);
        assert!(!o.close_on_upstream_loss);
        assert_eq!(
            o.limits_json().unwrap().to_str().unwrap(),
            r#"{"maxBodyBytes":1000}"#
        );
        let e = Options::parse(br#"{"maxBodyByte":1}"#).unwrap_err();
        assert!(e.contains("maxBodyByte"), "{e}");
        let e = Options::parse(b"{not json").unwrap_err();
        assert!(e.starts_with("filter_config:"), "{e}");
        assert!(Options::parse(&[0xff]).unwrap_err().contains("UTF-8"));
    }

    #[test]
    fn limits_are_explicit() {
        assert!(Options::parse(br#"{"maxBodyBytes":0}"#)
            .unwrap_err()
            .contains("maxBodyBytes 0"));
        let over = format!(r#"{{"maxBodyBytes":{}}}"#, MAX_BODY_BYTES_LIMIT + 1);
        assert!(Options::parse(over.as_bytes()).is_err());
        let ok = format!(r#"{{"maxBodyBytes":{MAX_BODY_BYTES_LIMIT}}}"#);
        assert!(Options::parse(ok.as_bytes()).is_ok());
        assert!(Options::parse(br#"{"maxTools":10001}"#).is_err());
        assert!(Options::parse(br#"{"readTimeoutMs":0}"#).is_err());
    }

    #[test]
    fn tool_labels_are_bounded() {
        let s = Shared::new(Options::parse(br#"{"maxTools":2}"#).unwrap(), None);
        assert_eq!(s.tool_label(None), b"unknown");
        assert_eq!(s.tool_label(Some(b"")), b"unknown");
        assert_eq!(s.tool_label(Some(b"a")), b"a");
        assert_eq!(s.tool_label(Some(b"b")), b"b");
        assert_eq!(s.tool_label(Some(b"a")), b"a");
        assert_eq!(s.tool_label(Some(b"c")), b"other");
        let long = "é".repeat(100); // 200 bytes, two per character
        assert_eq!(cut_label(long.as_bytes()).len(), 128);
        let odd = format!("x{long}"); // byte 128 falls inside a character
        assert_eq!(cut_label(odd.as_bytes()).len(), 127);
        assert!(std::str::from_utf8(cut_label(odd.as_bytes())).is_ok());
    }
}
