//! `mcp-triage wrap --install NAME --config FILE` and `--uninstall`: rewrite one stdio server
//! entry of an `mcp.json` so that the host starts it through the wrapper, and back.
//!
//! Claude Desktop, Claude Code and Cursor keep servers under `mcpServers`, VS Code under
//! `servers`; an entry is `{"command": …, "args": […], …}`. Installing keeps the rest of the
//! entry (env, cwd, type) and replaces command and args with
//! `<mcp-triage> wrap --log LOG -- <command> <args…>`; uninstalling reads the original command
//! back from after the `--`, so it works even when the file was edited since. Before each
//! rewrite the file is copied to `FILE.mcp-triage.bak`.

use std::path::{Path, PathBuf};

use serde_json::{json, Value};

/// Why the config could not be changed.
#[derive(Debug, thiserror::Error)]
pub enum InstallError {
    /// Reading, writing or backing up the file failed.
    #[error("{0}: {1}")]
    Io(PathBuf, std::io::Error),
    /// The file is not JSON (JSON with comments is not supported: the rewrite would lose them).
    #[error("{0} is not JSON: {1}")]
    NotJson(PathBuf, serde_json::Error),
    /// No entry of that name under `mcpServers` or `servers`.
    #[error("{file} has no server {name:?} under \"mcpServers\" or \"servers\" (it has: {known})")]
    NoSuchServer {
        /// The config file.
        file: PathBuf,
        /// The name asked for.
        name: String,
        /// The names it has.
        known: String,
    },
    /// The entry is not a stdio server or is already (not) wrapped.
    #[error("server {0:?}: {1}")]
    Entry(String, String),
}

/// The path of the backup copy.
pub fn backup_path(config: &Path) -> PathBuf {
    let mut p = config.as_os_str().to_owned();
    p.push(".mcp-triage.bak");
    PathBuf::from(p)
}

fn load(config: &Path) -> Result<Value, InstallError> {
    let text =
        std::fs::read_to_string(config).map_err(|e| InstallError::Io(config.to_path_buf(), e))?;
    serde_json::from_str(&text).map_err(|e| InstallError::NotJson(config.to_path_buf(), e))
}

fn save(config: &Path, doc: &Value) -> Result<(), InstallError> {
    let io = |e| InstallError::Io(config.to_path_buf(), e);
    std::fs::copy(config, backup_path(config)).map_err(io)?;
    let mut text = serde_json::to_string_pretty(doc).expect("a JSON value serialises");
    text.push('\n');
    // Write beside the file and rename, so a crash never leaves a half-written config.
    let tmp = {
        let mut p = config.as_os_str().to_owned();
        p.push(".mcp-triage.tmp");
        PathBuf::from(p)
    };
    std::fs::write(&tmp, text).map_err(io)?;
    std::fs::rename(&tmp, config).map_err(io)
}

fn entry<'a>(doc: &'a mut Value, config: &Path, name: &str) -> Result<&'a mut Value, InstallError> {
    let key = ["mcpServers", "servers"]
        .into_iter()
        .find(|k| doc.get(k).and_then(|s| s.get(name)).is_some());
    match key {
        Some(k) => Ok(&mut doc[k][name]),
        None => {
            let mut known: Vec<String> = ["mcpServers", "servers"]
                .iter()
                .filter_map(|k| doc.get(k).and_then(Value::as_object))
                .flat_map(|o| o.keys().cloned())
                .collect();
            known.sort();
            Err(InstallError::NoSuchServer {
                file: config.to_path_buf(),
                name: name.to_string(),
                known: if known.is_empty() {
                    "none".into()
                } else {
                    known.join(", ")
                },
            })
        }
    }
}

fn is_wrapped(e: &Value) -> bool {
    e.get("args").and_then(Value::as_array).is_some_and(|a| {
        a.first().and_then(Value::as_str) == Some("wrap") && a.iter().any(|x| x == "--")
    })
}

/// Wraps server `name` of `config`: `exe` is the mcp-triage binary, `log` the record file.
pub fn install(config: &Path, name: &str, exe: &Path, log: &Path) -> Result<(), InstallError> {
    let mut doc = load(config)?;
    let e = entry(&mut doc, config, name)?;
    let bad = |why: &str| InstallError::Entry(name.to_string(), why.to_string());
    let Some(command) = e.get("command").and_then(Value::as_str).map(str::to_string) else {
        return Err(bad(if e.get("url").is_some() {
            "it is an HTTP server (it has \"url\"); point its url at `mcp-triage proxy` instead"
        } else {
            "it has no \"command\", so it is not a stdio server"
        }));
    };
    if is_wrapped(e) {
        return Err(bad("it already goes through `mcp-triage wrap`"));
    }
    let mut args = vec![
        json!("wrap"),
        json!("--log"),
        json!(log.to_string_lossy()),
        json!("--"),
        json!(command),
    ];
    match e.get("args") {
        None => {}
        Some(Value::Array(a)) => args.extend(a.iter().cloned()),
        Some(_) => return Err(bad("\"args\" is not an array")),
    }
    e["command"] = json!(exe.to_string_lossy());
    e["args"] = Value::Array(args);
    save(config, &doc)
}

/// Restores server `name` of `config` to the command it had before [`install`].
pub fn uninstall(config: &Path, name: &str) -> Result<(), InstallError> {
    let mut doc = load(config)?;
    let e = entry(&mut doc, config, name)?;
    if !is_wrapped(e) {
        return Err(InstallError::Entry(
            name.to_string(),
            "it does not go through `mcp-triage wrap`; nothing to undo".into(),
        ));
    }
    let args = e["args"].as_array().cloned().unwrap_or_default();
    let sep = args
        .iter()
        .position(|a| a == "--")
        .expect("is_wrapped saw --");
    let Some(command) = args.get(sep + 1).cloned() else {
        return Err(InstallError::Entry(
            name.to_string(),
            "nothing follows `--` in its args".into(),
        ));
    };
    let rest: Vec<Value> = args[sep + 2..].to_vec();
    e["command"] = command;
    if rest.is_empty() {
        if let Some(o) = e.as_object_mut() {
            o.remove("args");
        }
    } else {
        e["args"] = Value::Array(rest);
    }
    save(config, &doc)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tmp(name: &str, text: &str) -> PathBuf {
        let dir =
            std::env::temp_dir().join(format!("mcp-triage-install-{}-{name}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let p = dir.join("mcp.json");
        std::fs::write(&p, text).unwrap();
        p
    }

    #[test]
    fn install_and_uninstall_round_trip_both_layouts() {
        for (layout, text) in [
            (
                "claude",
                r#"{"mcpServers":{"fs":{"command":"npx","args":["-y","server-fs","/tmp"],"env":{"A":"1"}},"web":{"url":"http://x"}}}"#,
            ),
            (
                "vscode",
                r#"{"servers":{"fs":{"type":"stdio","command":"node"}}}"#,
            ),
        ] {
            let p = tmp(layout, text);
            let before: Value = serde_json::from_str(text).unwrap();
            install(
                &p,
                "fs",
                Path::new("/usr/bin/mcp-triage"),
                Path::new("/tmp/fs.jsonl"),
            )
            .unwrap();
            let after = load(&p).unwrap();
            let key = if layout == "claude" {
                "mcpServers"
            } else {
                "servers"
            };
            let e = &after[key]["fs"];
            assert_eq!(e["command"], "/usr/bin/mcp-triage");
            assert_eq!(e["args"][0], "wrap");
            assert_eq!(e["args"][4], before[key]["fs"]["command"]);
            assert_eq!(e.get("env"), before[key]["fs"].get("env"));
            let backup: Value =
                serde_json::from_str(&std::fs::read_to_string(backup_path(&p)).unwrap()).unwrap();
            assert_eq!(backup, before);
            assert!(
                install(&p, "fs", Path::new("x"), Path::new("y")).is_err(),
                "twice"
            );
            uninstall(&p, "fs").unwrap();
            assert_eq!(load(&p).unwrap(), before, "{layout}");
            assert!(uninstall(&p, "fs").is_err());
            assert!(matches!(
                install(&p, "nope", Path::new("x"), Path::new("y")),
                Err(InstallError::NoSuchServer { .. })
            ));
        }
        let p = tmp("http", r#"{"mcpServers":{"web":{"url":"http://x"}}}"#);
        let e = install(&p, "web", Path::new("x"), Path::new("y")).unwrap_err();
        assert!(e.to_string().contains("mcp-triage proxy"), "{e}");
        let p = tmp("bad", "{ // comment\n}");
        assert!(matches!(uninstall(&p, "x"), Err(InstallError::NotJson(..))));
    }
}
