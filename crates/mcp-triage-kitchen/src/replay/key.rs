//! What a request is matched by: the [`ReplayKey`] of a captured line and of a live request,
//! and the fallback keys a request may have been captured under.
//!
//! Both sides of a match compute the key here, so a line and the request it answers agree by
//! construction: `line` keys each captured line while the file loads, `answer` keys each
//! request as it comes, and `lookup` joins the two. The `argumentsHash` is the one the proxy
//! writes (mcp-triage-wire's canonical JSON), so a capture taken by `proxy --capture` matches.

use serde_json::{Map, Value};

/// What a request is matched by.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum ReplayKey {
    /// One JSON-RPC request or notification.
    Rpc {
        /// Its method.
        method: String,
        /// `params.name` of a `tools/call`.
        tool: Option<String>,
        /// `sha256:<hex>` of the canonical JSON of a `tools/call`'s arguments.
        arguments_hash: Option<String>,
        /// The endpoint's path without the query, so a gateway's capture of several servers
        /// replays each on its own path; `None` for a line captured without `request.path`
        /// (it answers on any path).
        path: Option<String>,
    },
    /// Anything else: a GET stream, a batch, a non-MCP path.
    Http {
        /// HTTP method.
        method: String,
        /// Path without the query.
        path: String,
    },
}

impl ReplayKey {
    /// The key without its arguments hash, for a `tools/call` that has one (None otherwise):
    /// what a line captured with `--capture-hash-arguments` is keyed by.
    fn by_tool_only(&self) -> Option<ReplayKey> {
        match self {
            ReplayKey::Rpc {
                method,
                tool,
                arguments_hash: Some(_),
                path,
            } => Some(ReplayKey::Rpc {
                method: method.clone(),
                tool: tool.clone(),
                arguments_hash: None,
                path: path.clone(),
            }),
            _ => None,
        }
    }

    /// The key without its path, for an Rpc key that has one: what a line captured without
    /// `request.path` is keyed by.
    pub(super) fn on_any_path(&self) -> Option<ReplayKey> {
        match self {
            ReplayKey::Rpc {
                method,
                tool,
                arguments_hash,
                path: Some(_),
            } => Some(ReplayKey::Rpc {
                method: method.clone(),
                tool: tool.clone(),
                arguments_hash: arguments_hash.clone(),
                path: None,
            }),
            _ => None,
        }
    }

    /// This key for a request on `path` (an Rpc key's path; other keys have theirs).
    pub fn at_path(self, at: &str) -> ReplayKey {
        match self {
            ReplayKey::Rpc {
                method,
                tool,
                arguments_hash,
                ..
            } => ReplayKey::Rpc {
                method,
                tool,
                arguments_hash,
                path: Some(path_only(at)),
            },
            other => other,
        }
    }

    /// The keys a request's key may have been captured under besides itself, most specific
    /// first: without its path, by tool only, by tool only without its path.
    pub(super) fn fallbacks(&self) -> impl Iterator<Item = ReplayKey> + '_ {
        let by_tool = self.by_tool_only();
        let by_tool_any = by_tool.as_ref().and_then(ReplayKey::on_any_path);
        self.on_any_path()
            .into_iter()
            .chain(by_tool)
            .chain(by_tool_any)
    }
}

impl std::fmt::Display for ReplayKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ReplayKey::Rpc {
                method,
                tool,
                arguments_hash,
                path,
            } => {
                f.write_str(method)?;
                if let Some(t) = tool {
                    write!(f, " {t}")?;
                }
                if let Some(h) = arguments_hash {
                    write!(f, " {h}")?;
                }
                if let Some(p) = path {
                    write!(f, " on {p}")?;
                }
                Ok(())
            }
            ReplayKey::Http { method, path } => write!(f, "{method} {path}"),
        }
    }
}

/// `sha256:<hex>` of the canonical JSON of tool arguments (absent arguments hash as `{}`):
/// the capture's `argumentsHash`.
pub fn capture_arguments_hash(arguments: Option<&Value>) -> String {
    let empty = Value::Object(Map::new());
    mcp_triage_wire::canonical::ArgumentsDigest::of(arguments.unwrap_or(&empty)).prefixed()
}

/// The key of a JSON-RPC message (`None` when `msg` is not one request or notification).
pub fn rpc_key(msg: &Value) -> Option<ReplayKey> {
    let method = msg.get("method")?.as_str()?.to_string();
    let (tool, arguments_hash) = if method == "tools/call" {
        let params = msg.get("params");
        (
            params
                .and_then(|p| p.get("name"))
                .and_then(Value::as_str)
                .map(str::to_owned),
            Some(capture_arguments_hash(
                params.and_then(|p| p.get("arguments")),
            )),
        )
    } else {
        (None, None)
    };
    Some(ReplayKey::Rpc {
        method,
        tool,
        arguments_hash,
        path: None,
    })
}

/// `path` without its query: the part of a URL a key holds.
pub(super) fn path_only(path: &str) -> String {
    path.split('?').next().unwrap_or("").to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn arguments_hash_is_canonical_and_prefixed() {
        let a = capture_arguments_hash(Some(&json!({"b": 1, "a": [true, null]})));
        let b = capture_arguments_hash(Some(&json!({"a": [true, null], "b": 1})));
        assert_eq!(a, b);
        assert!(a.starts_with("sha256:") && a.len() == 7 + 64, "{a}");
        assert_eq!(
            capture_arguments_hash(None),
            capture_arguments_hash(Some(&json!({})))
        );
    }
}
