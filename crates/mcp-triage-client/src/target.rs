//! Where the server is: a URL, a command to spawn, or an entry of an `mcp.json` file.
//!
//! `mcp.json` comes in two shapes in the wild: Claude Desktop and Cursor use
//! `{"mcpServers": {NAME: {command, args, env} | {url, headers}}}`, VS Code uses
//! `{"servers": {NAME: {type: "stdio"|"http"|"sse", command, args, env, url, headers}}}`. Both
//! are read here so that a user can point the tool at the configuration they already have.

use std::collections::BTreeMap;
use std::path::Path;

use serde_json::Value;

/// A server to talk to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Target {
    /// Streamable HTTP at this URL, with extra request headers (from `mcp.json`).
    Http {
        /// The MCP endpoint.
        url: String,
        /// Extra headers sent with every request.
        headers: Vec<(String, String)>,
    },
    /// A process speaking newline-delimited JSON-RPC on stdin/stdout.
    Stdio {
        /// The program.
        command: String,
        /// Its arguments.
        args: Vec<String>,
        /// Extra environment variables.
        env: BTreeMap<String, String>,
    },
}

/// A target that could not be understood.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum TargetError {
    /// The text is not an `http://` or `https://` URL.
    #[error("{0:?} is not an http:// or https:// URL (use --stdio 'CMD ARGS' for a command)")]
    NotAUrl(String),
    /// The command line is empty or has an unclosed quote.
    #[error("bad --stdio command line: {0}")]
    BadCommand(String),
    /// The config file could not be read or parsed.
    #[error("config {path}: {why}")]
    Config {
        /// The file.
        path: String,
        /// What was wrong.
        why: String,
    },
}

impl Target {
    /// A URL target (checked to be `http://` or `https://`).
    pub fn url(url: &str) -> Result<Target, TargetError> {
        let lower = url.to_ascii_lowercase();
        if !(lower.starts_with("http://") || lower.starts_with("https://")) || url.len() < 8 {
            return Err(TargetError::NotAUrl(url.to_string()));
        }
        Ok(Target::Http {
            url: url.to_string(),
            headers: Vec::new(),
        })
    }

    /// A command line split like a POSIX shell would (quotes and backslashes, no expansion).
    pub fn stdio(command_line: &str) -> Result<Target, TargetError> {
        let mut words = split_command_line(command_line).map_err(TargetError::BadCommand)?;
        if words.is_empty() {
            return Err(TargetError::BadCommand("the command is empty".into()));
        }
        let command = words.remove(0);
        Ok(Target::Stdio {
            command,
            args: words,
            env: BTreeMap::new(),
        })
    }

    /// The entry `name` of an `mcp.json` file (either shape).
    pub fn from_config_file(path: &Path, name: &str) -> Result<Target, TargetError> {
        let err = |why: String| TargetError::Config {
            path: path.display().to_string(),
            why,
        };
        let text = std::fs::read_to_string(path).map_err(|e| err(e.to_string()))?;
        let doc: Value = serde_json::from_str(&text).map_err(|e| err(format!("not JSON: {e}")))?;
        Target::from_config(&doc, name).map_err(err)
    }

    /// The entry `name` of a parsed `mcp.json` document.
    pub fn from_config(doc: &Value, name: &str) -> Result<Target, String> {
        let servers = doc
            .get("mcpServers")
            .or_else(|| doc.get("servers"))
            .and_then(Value::as_object)
            .ok_or("no \"mcpServers\" (Claude Desktop, Cursor) or \"servers\" (VS Code) object")?;
        let Some(entry) = servers.get(name) else {
            let known: Vec<&str> = servers.keys().map(String::as_str).collect();
            return Err(format!("no server {name:?}; known: {}", known.join(", ")));
        };
        let kind = entry.get("type").and_then(Value::as_str);
        let strings = |key: &str| -> Result<Vec<String>, String> {
            match entry.get(key) {
                None | Some(Value::Null) => Ok(Vec::new()),
                Some(Value::Array(a)) => a
                    .iter()
                    .map(|v| {
                        v.as_str()
                            .map(str::to_string)
                            .ok_or(format!("{name}.{key} must hold strings"))
                    })
                    .collect(),
                Some(_) => Err(format!("{name}.{key} must be an array of strings")),
            }
        };
        let map = |key: &str| -> Result<Vec<(String, String)>, String> {
            match entry.get(key) {
                None | Some(Value::Null) => Ok(Vec::new()),
                Some(Value::Object(o)) => o
                    .iter()
                    .map(|(k, v)| {
                        v.as_str()
                            .map(|s| (k.clone(), s.to_string()))
                            .ok_or(format!("{name}.{key}.{k} must be a string"))
                    })
                    .collect(),
                Some(_) => Err(format!("{name}.{key} must be an object of strings")),
            }
        };
        if let Some(url) = entry.get("url").and_then(Value::as_str) {
            // `type: "sse"` (2024-11-05 HTTP+SSE) needs no flag: `auto` finds it by the spec's
            // fallback probe.
            let _ = kind;
            let Target::Http { url, .. } = Target::url(url).map_err(|e| e.to_string())? else {
                unreachable!("Target::url returns Http")
            };
            return Ok(Target::Http {
                url,
                headers: map("headers")?,
            });
        }
        let command = entry
            .get("command")
            .and_then(Value::as_str)
            .ok_or(format!("{name} has neither \"url\" nor \"command\""))?;
        Ok(Target::Stdio {
            command: command.to_string(),
            args: strings("args")?,
            env: map("env")?.into_iter().collect(),
        })
    }

    /// A short description for records: the URL without query and credentials, or the command.
    pub fn describe(&self) -> String {
        match self {
            Target::Http { url, .. } => redact_url(url),
            Target::Stdio { command, args, .. } => {
                let mut s = command.clone();
                for a in args {
                    s.push(' ');
                    s.push_str(a);
                }
                mcp_triage_core::sanitize_line(&s, 200)
            }
        }
    }

    /// True for stdio and for HTTP on a loopback host: servers the user runs, whose tool
    /// annotations are trusted by default.
    pub fn is_local(&self) -> bool {
        match self {
            Target::Stdio { .. } => true,
            Target::Http { url, .. } => {
                let host = host_of(url);
                host == "localhost"
                    || host == "[::1]"
                    || host.ends_with(".localhost")
                    || host
                        .parse::<std::net::Ipv4Addr>()
                        .is_ok_and(|a| a.is_loopback())
            }
        }
    }
}

fn host_of(url: &str) -> String {
    let rest = url.split_once("://").map_or(url, |(_, r)| r);
    let authority = rest.split(['/', '?', '#']).next().unwrap_or("");
    let host_port = authority.rsplit_once('@').map_or(authority, |(_, h)| h);
    let host = if host_port.starts_with('[') {
        host_port
            .split_once(']')
            .map_or(host_port.to_string(), |(h, _)| format!("{h}]"))
    } else {
        host_port.split(':').next().unwrap_or("").to_string()
    };
    host.to_ascii_lowercase()
}

/// Removes user info and the query from a URL (tokens travel there too often).
pub fn redact_url(url: &str) -> String {
    let (scheme, rest) = url.split_once("://").unwrap_or(("", url));
    let rest = rest.split(['?', '#']).next().unwrap_or("");
    let (authority, path) = match rest.find('/') {
        Some(i) => rest.split_at(i),
        None => (rest, ""),
    };
    let authority = authority.rsplit_once('@').map_or(authority, |(_, h)| h);
    mcp_triage_core::sanitize_line(&format!("{scheme}://{authority}{path}"), 300)
}

/// Splits a command line into words: whitespace separates, `'…'` is literal, `"…"` allows
/// `\"` and `\\`, a backslash outside quotes escapes the next character.
pub fn split_command_line(s: &str) -> Result<Vec<String>, String> {
    let mut words = Vec::new();
    let mut cur = String::new();
    let mut in_word = false;
    let mut chars = s.chars();
    while let Some(c) = chars.next() {
        match c {
            c if c.is_whitespace() => {
                if in_word {
                    words.push(std::mem::take(&mut cur));
                    in_word = false;
                }
            }
            '\'' => {
                in_word = true;
                loop {
                    match chars.next() {
                        Some('\'') => break,
                        Some(c) => cur.push(c),
                        None => return Err("unclosed single quote".into()),
                    }
                }
            }
            '"' => {
                in_word = true;
                loop {
                    match chars.next() {
                        Some('"') => break,
                        Some('\\') => match chars.next() {
                            Some(c @ ('"' | '\\' | '$' | '`')) => cur.push(c),
                            Some(c) => {
                                cur.push('\\');
                                cur.push(c);
                            }
                            None => return Err("unclosed double quote".into()),
                        },
                        Some(c) => cur.push(c),
                        None => return Err("unclosed double quote".into()),
                    }
                }
            }
            '\\' => {
                in_word = true;
                match chars.next() {
                    Some(c) => cur.push(c),
                    None => return Err("trailing backslash".into()),
                }
            }
            c => {
                in_word = true;
                cur.push(c);
            }
        }
    }
    if in_word {
        words.push(cur);
    }
    Ok(words)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn splits_like_a_shell() {
        assert_eq!(
            split_command_line(r#"npx -y "@scope/pkg" 'a b' c\ d "q\"x""#).unwrap(),
            vec!["npx", "-y", "@scope/pkg", "a b", "c d", "q\"x"]
        );
        assert!(split_command_line("echo 'open").is_err());
        assert_eq!(split_command_line("  ").unwrap(), Vec::<String>::new());
        assert!(Target::stdio("   ").is_err());
    }

    #[test]
    fn reads_both_config_shapes() {
        let claude = json!({"mcpServers": {
            "fs": {"command": "npx", "args": ["-y", "server"], "env": {"K": "V"}},
            "web": {"url": "http://127.0.0.1:9/mcp", "headers": {"X-A": "b"}}
        }});
        assert_eq!(
            Target::from_config(&claude, "fs").unwrap(),
            Target::Stdio {
                command: "npx".into(),
                args: vec!["-y".into(), "server".into()],
                env: [("K".to_string(), "V".to_string())].into_iter().collect()
            }
        );
        assert_eq!(
            Target::from_config(&claude, "web").unwrap(),
            Target::Http {
                url: "http://127.0.0.1:9/mcp".into(),
                headers: vec![("X-A".into(), "b".into())]
            }
        );
        let vscode = json!({"servers": {"s": {"type": "http", "url": "http://localhost:1/mcp"},
                                         "old": {"type": "sse", "url": "http://localhost:1/sse"}}});
        assert!(matches!(
            Target::from_config(&vscode, "s"),
            Ok(Target::Http { .. })
        ));
        assert!(matches!(
            Target::from_config(&vscode, "old"),
            Ok(Target::Http { .. })
        ));
        assert!(Target::from_config(&vscode, "nope")
            .unwrap_err()
            .contains("known: old, s"));
        assert!(Target::from_config(&json!({}), "x").is_err());
        assert!(Target::from_config(&json!({"servers": {"a": {"args": 1}}}), "a").is_err());
    }

    #[test]
    fn locality_and_redaction() {
        assert!(Target::url("http://127.0.0.1:8/mcp").unwrap().is_local());
        assert!(Target::url("http://localhost/mcp").unwrap().is_local());
        assert!(Target::url("http://[::1]:3/mcp").unwrap().is_local());
        assert!(!Target::url("https://example.com/mcp").unwrap().is_local());
        assert!(!Target::url("http://127.0.0.1.evil.com/x")
            .unwrap()
            .is_local());
        assert!(Target::url("ftp://x").is_err());
        assert_eq!(
            redact_url("https://user:pw@host:1/mcp?token=x"),
            "https://host:1/mcp"
        );
    }
}
