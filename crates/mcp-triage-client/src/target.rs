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
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum TargetError {
    /// The text is not an `http://` or `https://` URL.
    #[error("{0:?} is not an http:// or https:// URL (use --stdio 'CMD ARGS' for a command)")]
    NotAUrl(String),
    /// The command line is empty or has an unclosed quote.
    #[error("bad --stdio command line: {0}")]
    BadCommand(#[source] CommandLineError),
    /// The config file could not be read.
    #[error("config {path}: {source}")]
    ConfigRead {
        /// The file.
        path: String,
        /// Why it could not be read.
        #[source]
        source: std::io::Error,
    },
    /// The config file is not JSON.
    #[error("config {path}: not JSON: {source}")]
    ConfigNotJson {
        /// The file.
        path: String,
        /// The parse error.
        #[source]
        source: serde_json::Error,
    },
    /// The config file was read but the entry is missing or malformed.
    #[error("config {path}: {source}")]
    Config {
        /// The file.
        path: String,
        /// What was wrong.
        #[source]
        source: ConfigError,
    },
}

/// A command line that cannot be split into words.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum CommandLineError {
    /// A `'` is never closed.
    #[error("unclosed single quote")]
    UnclosedSingleQuote,
    /// A `"` is never closed.
    #[error("unclosed double quote")]
    UnclosedDoubleQuote,
    /// The line ends in a lone `\`.
    #[error("trailing backslash")]
    TrailingBackslash,
    /// There is no word at all.
    #[error("the command is empty")]
    Empty,
}

/// An `mcp.json` document without a usable entry.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ConfigError {
    /// Neither shape's top-level object is there.
    #[error("no \"mcpServers\" (Claude Desktop, Cursor) or \"servers\" (VS Code) object")]
    NoServers,
    /// No entry has this name.
    #[error("no server {name:?}; known: {}", known.join(", "))]
    UnknownServer {
        /// The name asked for.
        name: String,
        /// The names the file has.
        known: Vec<String>,
    },
    /// An array entry holds something other than a string.
    #[error("{name}.{key} must hold strings")]
    NotStrings {
        /// The server entry.
        name: String,
        /// The field (`args`).
        key: String,
    },
    /// The field is not an array.
    #[error("{name}.{key} must be an array of strings")]
    NotAnArray {
        /// The server entry.
        name: String,
        /// The field (`args`).
        key: String,
    },
    /// A map entry's value is not a string.
    #[error("{name}.{key}.{entry} must be a string")]
    NotAString {
        /// The server entry.
        name: String,
        /// The field (`env`, `headers`).
        key: String,
        /// The entry of that field.
        entry: String,
    },
    /// The field is not an object.
    #[error("{name}.{key} must be an object of strings")]
    NotAnObject {
        /// The server entry.
        name: String,
        /// The field (`env`, `headers`).
        key: String,
    },
    /// The entry's `url` is not an `http://` or `https://` URL.
    #[error("{url:?} is not an http:// or https:// URL (use --stdio 'CMD ARGS' for a command)")]
    NotAUrl {
        /// The entry's `url`.
        url: String,
    },
    /// The entry has neither field.
    #[error("{name} has neither \"url\" nor \"command\"")]
    NoUrlOrCommand {
        /// The server entry.
        name: String,
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
            return Err(TargetError::BadCommand(CommandLineError::Empty));
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
        let path_s = || path.display().to_string();
        let text = std::fs::read_to_string(path).map_err(|source| TargetError::ConfigRead {
            path: path_s(),
            source,
        })?;
        let doc: Value =
            serde_json::from_str(&text).map_err(|source| TargetError::ConfigNotJson {
                path: path_s(),
                source,
            })?;
        Target::from_config(&doc, name).map_err(|source| TargetError::Config {
            path: path_s(),
            source,
        })
    }

    /// The entry `name` of a parsed `mcp.json` document.
    pub fn from_config(doc: &Value, name: &str) -> Result<Target, ConfigError> {
        let servers = doc
            .get("mcpServers")
            .or_else(|| doc.get("servers"))
            .and_then(Value::as_object)
            .ok_or(ConfigError::NoServers)?;
        let Some(entry) = servers.get(name) else {
            return Err(ConfigError::UnknownServer {
                name: name.to_string(),
                known: servers.keys().cloned().collect(),
            });
        };
        let kind = entry.get("type").and_then(Value::as_str);
        let at = |key: &str| (name.to_string(), key.to_string());
        let strings = |key: &str| -> Result<Vec<String>, ConfigError> {
            match entry.get(key) {
                None | Some(Value::Null) => Ok(Vec::new()),
                Some(Value::Array(a)) => a
                    .iter()
                    .map(|v| {
                        v.as_str().map(str::to_string).ok_or_else(|| {
                            let (name, key) = at(key);
                            ConfigError::NotStrings { name, key }
                        })
                    })
                    .collect(),
                Some(_) => {
                    let (name, key) = at(key);
                    Err(ConfigError::NotAnArray { name, key })
                }
            }
        };
        let map = |key: &str| -> Result<Vec<(String, String)>, ConfigError> {
            match entry.get(key) {
                None | Some(Value::Null) => Ok(Vec::new()),
                Some(Value::Object(o)) => o
                    .iter()
                    .map(|(k, v)| {
                        v.as_str()
                            .map(|s| (k.clone(), s.to_string()))
                            .ok_or_else(|| {
                                let (name, key) = at(key);
                                ConfigError::NotAString {
                                    name,
                                    key,
                                    entry: k.clone(),
                                }
                            })
                    })
                    .collect(),
                Some(_) => {
                    let (name, key) = at(key);
                    Err(ConfigError::NotAnObject { name, key })
                }
            }
        };
        if let Some(url) = entry.get("url").and_then(Value::as_str) {
            // `type: "sse"` (2024-11-05 HTTP+SSE) needs no flag: `auto` finds it by the spec's
            // fallback probe.
            let _ = kind;
            let Target::Http { url, .. } = Target::url(url).map_err(|_| ConfigError::NotAUrl {
                url: url.to_string(),
            })?
            else {
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
            .ok_or_else(|| ConfigError::NoUrlOrCommand {
                name: name.to_string(),
            })?;
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
pub fn split_command_line(s: &str) -> Result<Vec<String>, CommandLineError> {
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
                        None => return Err(CommandLineError::UnclosedSingleQuote),
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
                            None => return Err(CommandLineError::UnclosedDoubleQuote),
                        },
                        Some(c) => cur.push(c),
                        None => return Err(CommandLineError::UnclosedDoubleQuote),
                    }
                }
            }
            '\\' => {
                in_word = true;
                match chars.next() {
                    Some(c) => cur.push(c),
                    None => return Err(CommandLineError::TrailingBackslash),
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
            .to_string()
            .contains("known: old, s"));
        assert!(Target::from_config(&json!({}), "x").is_err());
        assert!(Target::from_config(&json!({"servers": {"a": {"args": 1}}}), "a").is_err());
    }

    #[test]
    fn config_errors_are_typed() {
        let doc = json!({"servers": {"a": {"command": "x", "args": 1}}});
        let err = Target::from_config(&doc, "a").unwrap_err();
        assert!(matches!(err, ConfigError::NotAnArray { ref key, .. } if key == "args"));
        assert_eq!(err.to_string(), "a.args must be an array of strings");
        let doc = json!({"servers": {"a": {"command": "x", "env": {"K": 1}}}});
        let err = Target::from_config(&doc, "a").unwrap_err();
        assert!(matches!(err, ConfigError::NotAString { ref entry, .. } if entry == "K"));
        assert_eq!(err.to_string(), "a.env.K must be a string");
        let err = Target::from_config(&json!({}), "x").unwrap_err();
        assert!(matches!(err, ConfigError::NoServers));
        assert_eq!(
            err.to_string(),
            "no \"mcpServers\" (Claude Desktop, Cursor) or \"servers\" (VS Code) object"
        );
        let err =
            Target::from_config(&json!({"servers": {"a": {"url": "ftp://x"}}}), "a").unwrap_err();
        assert!(matches!(err, ConfigError::NotAUrl { .. }));
        assert_eq!(
            err.to_string(),
            Target::url("ftp://x").unwrap_err().to_string()
        );
        let err = Target::from_config(&json!({"servers": {"a": {}}}), "a").unwrap_err();
        assert!(matches!(err, ConfigError::NoUrlOrCommand { .. }));
        assert_eq!(err.to_string(), "a has neither \"url\" nor \"command\"");
    }

    #[test]
    fn target_errors_are_typed() {
        let err = Target::stdio("echo 'open").unwrap_err();
        assert!(matches!(
            err,
            TargetError::BadCommand(CommandLineError::UnclosedSingleQuote)
        ));
        assert_eq!(
            err.to_string(),
            "bad --stdio command line: unclosed single quote"
        );
        let err = Target::stdio("  ").unwrap_err();
        assert!(matches!(
            err,
            TargetError::BadCommand(CommandLineError::Empty)
        ));
        assert_eq!(
            err.to_string(),
            "bad --stdio command line: the command is empty"
        );
        let dir = std::env::temp_dir().join(format!("mcp-triage-target-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let missing = dir.join("missing.json");
        let err = Target::from_config_file(&missing, "a").unwrap_err();
        assert!(matches!(err, TargetError::ConfigRead { .. }));
        assert!(err
            .to_string()
            .starts_with(&format!("config {}: ", missing.display())));
        let bad = dir.join("bad.json");
        std::fs::write(&bad, "{").unwrap();
        let err = Target::from_config_file(&bad, "a").unwrap_err();
        assert!(matches!(err, TargetError::ConfigNotJson { .. }));
        assert!(err
            .to_string()
            .starts_with(&format!("config {}: not JSON: ", bad.display())));
        let empty = dir.join("empty.json");
        std::fs::write(&empty, "{}").unwrap();
        let err = Target::from_config_file(&empty, "a").unwrap_err();
        assert!(matches!(
            err,
            TargetError::Config {
                source: ConfigError::NoServers,
                ..
            }
        ));
        assert_eq!(
            err.to_string(),
            format!(
                "config {}: no \"mcpServers\" (Claude Desktop, Cursor) or \"servers\" (VS Code) object",
                empty.display()
            )
        );
        std::fs::remove_dir_all(&dir).unwrap();
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
