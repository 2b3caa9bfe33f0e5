//! The token cache: one JSON file, readable by its owner only (0600), holding per server
//! (resource URL) the last token set and per authorization server the client registration,
//! so that a second `call` neither registers again nor asks the user again.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

/// A client registration with one authorization server.
#[derive(Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct StoredClient {
    /// The client id (a URL for a client ID metadata document).
    pub client_id: String,
    /// The secret, for confidential clients.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_secret: Option<String>,
    /// The token endpoint auth method registration answered.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub token_endpoint_auth_method: Option<String>,
    /// The redirect URI registered (its port is reused to keep it valid).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub redirect_uri: Option<String>,
}

impl std::fmt::Debug for StoredClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StoredClient")
            .field("client_id", &self.client_id)
            .field("client_secret", &self.client_secret.as_ref().map(|_| "…"))
            .finish_non_exhaustive()
    }
}

/// A token set for one resource.
#[derive(Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct StoredToken {
    /// The access token.
    pub access_token: String,
    /// The refresh token, when the server gave one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub refresh_token: Option<String>,
    /// Expiry, seconds since the Unix epoch, when the server said.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expires_at: Option<u64>,
    /// When it was issued (seconds since the Unix epoch): with `expires_at`, its lifetime.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub issued_at: Option<u64>,
    /// The scope granted (or requested, when the server did not say).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scope: Option<String>,
    /// The authorization server (issuer) that issued it: its registration is the one to
    /// refresh with.
    pub issuer: String,
    /// Where to refresh it.
    pub token_endpoint: String,
}

impl std::fmt::Debug for StoredToken {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StoredToken")
            .field("expires_at", &self.expires_at)
            .field("scope", &self.scope)
            .field("issuer", &self.issuer)
            .finish_non_exhaustive()
    }
}

/// The whole file.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct StoreData {
    /// Resource URL → token.
    #[serde(default)]
    pub tokens: BTreeMap<String, StoredToken>,
    /// Issuer → registration.
    #[serde(default)]
    pub clients: BTreeMap<String, StoredClient>,
}

/// Where the cache lives; `None` keeps it in memory for this process only.
#[derive(Debug, Clone)]
pub struct TokenStore {
    path: Option<PathBuf>,
}

/// The default file: `mcp-triage/oauth-tokens.json` in the user's config directory
/// (`$XDG_CONFIG_HOME` or `~/.config` on Unix, `~/Library/Application Support` on macOS,
/// `%APPDATA%` on Windows). `None` when no home is known.
pub fn default_path() -> Option<PathBuf> {
    let base = if cfg!(windows) {
        std::env::var_os("APPDATA").map(PathBuf::from)
    } else if cfg!(target_os = "macos") {
        std::env::var_os("HOME").map(|h| PathBuf::from(h).join("Library/Application Support"))
    } else {
        std::env::var_os("XDG_CONFIG_HOME")
            .filter(|x| !x.is_empty())
            .map(PathBuf::from)
            .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".config")))
    }?;
    Some(base.join("mcp-triage").join("oauth-tokens.json"))
}

impl TokenStore {
    /// A cache in this file.
    pub fn file(path: PathBuf) -> TokenStore {
        TokenStore { path: Some(path) }
    }

    /// A cache that lives as long as the process.
    pub fn memory() -> TokenStore {
        TokenStore { path: None }
    }

    /// The file, if any.
    pub fn path(&self) -> Option<&Path> {
        self.path.as_deref()
    }

    /// Reads the file; a missing file is an empty cache, a malformed one an error naming it.
    pub fn load(&self) -> Result<StoreData, String> {
        let Some(p) = &self.path else {
            return Ok(StoreData::default());
        };
        match std::fs::read(p) {
            Ok(b) => serde_json::from_slice(&b).map_err(|e| {
                format!(
                    "the token store {} is not a token store ({e}); remove it or pass another --token-store",
                    p.display()
                )
            }),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(StoreData::default()),
            Err(e) => Err(format!("could not read the token store {}: {e}", p.display())),
        }
    }

    /// Writes the file readable by its owner only, through a temporary file and a rename so
    /// that a reader never sees half a file.
    pub fn save(&self, data: &StoreData) -> Result<(), String> {
        let Some(p) = &self.path else {
            return Ok(());
        };
        let fail =
            |e: std::io::Error| format!("could not write the token store {}: {e}", p.display());
        if let Some(dir) = p.parent().filter(|d| !d.as_os_str().is_empty()) {
            create_private_dir(dir).map_err(fail)?;
        }
        let body = serde_json::to_vec_pretty(data).map_err(|e| e.to_string())?;
        let tmp = p.with_extension(format!("tmp{}", std::process::id()));
        write_private(&tmp, &body).map_err(fail)?;
        std::fs::rename(&tmp, p).map_err(|e| {
            let _ = std::fs::remove_file(&tmp);
            fail(e)
        })
    }
}

#[cfg(unix)]
fn create_private_dir(dir: &Path) -> std::io::Result<()> {
    use std::os::unix::fs::DirBuilderExt;
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
}

#[cfg(not(unix))]
fn create_private_dir(dir: &Path) -> std::io::Result<()> {
    std::fs::create_dir_all(dir)
}

#[cfg(unix)]
fn write_private(p: &Path, body: &[u8]) -> std::io::Result<()> {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(p)?;
    f.write_all(body)?;
    f.sync_all()
}

#[cfg(not(unix))]
fn write_private(p: &Path, body: &[u8]) -> std::io::Result<()> {
    std::fs::write(p, body)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scratch(name: &str) -> PathBuf {
        std::env::temp_dir().join(format!("mcp-triage-store-{}-{name}", std::process::id()))
    }

    #[test]
    fn round_trip_private_file() {
        let dir = scratch("rt");
        let p = dir.join("sub").join("tokens.json");
        let s = TokenStore::file(p.clone());
        assert_eq!(s.load().unwrap(), StoreData::default());
        let mut d = StoreData::default();
        d.tokens.insert(
            "http://127.0.0.1:1/mcp".into(),
            StoredToken {
                access_token: "canary-access".into(),
                refresh_token: Some("canary-refresh".into()),
                expires_at: Some(10),
                issued_at: Some(5),
                scope: Some("a b".into()),
                issuer: "http://127.0.0.1:2".into(),
                token_endpoint: "http://127.0.0.1:2/token".into(),
            },
        );
        d.clients.insert(
            "http://127.0.0.1:2".into(),
            StoredClient {
                client_id: "id".into(),
                client_secret: Some("canary-secret".into()),
                ..StoredClient::default()
            },
        );
        s.save(&d).unwrap();
        assert_eq!(s.load().unwrap(), d);
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(&p).unwrap().permissions().mode() & 0o777;
            assert_eq!(mode, 0o600);
        }
        // Debug output never shows a secret.
        let dbg = format!("{d:?}");
        assert!(!dbg.contains("canary"), "{dbg}");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_malformed_store_is_named() {
        let p = scratch("bad.json");
        std::fs::write(&p, b"[1,2").unwrap();
        let e = TokenStore::file(p.clone()).load().unwrap_err();
        assert!(e.contains("is not a token store"), "{e}");
        std::fs::remove_file(&p).unwrap();
        assert_eq!(TokenStore::memory().load().unwrap(), StoreData::default());
        TokenStore::memory().save(&StoreData::default()).unwrap();
    }
}
