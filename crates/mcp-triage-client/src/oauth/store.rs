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
    /// Bound to this process's DPoP key (`token_type` DPoP, RFC 9449): presented with proofs
    /// of that key, and never written to the file, since the key is not.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub dpop: bool,
}

impl std::fmt::Debug for StoredToken {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StoredToken")
            .field("expires_at", &self.expires_at)
            .field("scope", &self.scope)
            .field("issuer", &self.issuer)
            .field("dpop", &self.dpop)
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

/// The token store file could not be read, locked or written.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StoreError {
    /// Reading, locking or writing the file failed (or it is a link or shared).
    #[error("the token store {}: {source}", .path.display())]
    Io {
        /// The store file.
        path: PathBuf,
        /// What failed.
        #[source]
        source: std::io::Error,
    },
    /// The file is not a token store's JSON.
    #[error(
        "the token store {} is not a token store ({source}); it is kept as {} when a token is next saved",
        .path.display(),
        .copy.display()
    )]
    Corrupt {
        /// The store file.
        path: PathBuf,
        /// Where it is kept when replaced.
        copy: PathBuf,
        /// The parse error.
        #[source]
        source: serde_json::Error,
    },
    /// The contents could not be encoded.
    #[error("{0}")]
    Encode(#[source] serde_json::Error),
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
    pub fn load(&self) -> Result<StoreData, StoreError> {
        let Some(p) = &self.path else {
            return Ok(StoreData::default());
        };
        read_data(p)
            .map_err(io_error(p))?
            .map_err(|source| StoreError::Corrupt {
                path: p.clone(),
                copy: corrupt_copy_name(p),
                source,
            })
    }

    /// Applies `change` to the store's current contents and writes the result, under an
    /// exclusive lock (`flock` on `.NAME.lock` beside the file, waited for up to 10 s), and
    /// returns what was written. Why not `save` of a snapshot: two `call`s to different servers
    /// each load the store at their start, so whichever saved last dropped the other's token and
    /// registration. A store that is not valid JSON is kept as `NAME.corrupt-<secs>` and
    /// replaced. For the in-memory store `change` applies to `current`.
    pub fn update(
        &self,
        current: &StoreData,
        change: impl FnOnce(&mut StoreData),
    ) -> Result<StoreData, StoreError> {
        let Some(p) = &self.path else {
            let mut d = current.clone();
            change(&mut d);
            return Ok(d);
        };
        let fail = io_error(p);
        if let Some(dir) = p.parent().filter(|d| !d.as_os_str().is_empty()) {
            create_private_dir(dir).map_err(fail)?;
        }
        let _lock = lock(p).map_err(fail)?;
        let mut data = match read_data(p).map_err(fail)? {
            Ok(d) => d,
            Err(_) => {
                std::fs::rename(p, corrupt_copy_name(p)).map_err(fail)?;
                StoreData::default()
            }
        };
        change(&mut data);
        self.save(&data)?;
        Ok(data)
    }

    /// Writes the file readable by its owner only, through a temporary file and a rename so
    /// that a reader never sees half a file. Replaces the whole store: [`TokenStore::update`]
    /// is what merges with other processes' changes.
    pub fn save(&self, data: &StoreData) -> Result<(), StoreError> {
        let Some(p) = &self.path else {
            return Ok(());
        };
        let fail = io_error(p);
        let dir = p.parent().filter(|d| !d.as_os_str().is_empty());
        if let Some(dir) = dir {
            create_private_dir(dir).map_err(fail)?;
        }
        // The file the rename replaces must be one we would read: not a link, not shared.
        check_existing(p).map_err(fail)?;
        let body = serde_json::to_vec_pretty(data).map_err(StoreError::Encode)?;
        let tmp = write_temporary(dir.unwrap_or(Path::new(".")), p, &body).map_err(fail)?;
        std::fs::rename(&tmp, p).map_err(|e| {
            let _ = std::fs::remove_file(&tmp);
            fail(e)
        })
    }
}

/// The [`StoreError::Io`] of the store at `p`.
fn io_error(p: &Path) -> impl Fn(std::io::Error) -> StoreError + Copy + '_ {
    move |source| StoreError::Io {
        path: p.to_path_buf(),
        source,
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

/// The store's contents: the outer error is reading the file (a missing file is an empty
/// store), the inner one its JSON.
fn read_data(p: &Path) -> std::io::Result<Result<StoreData, serde_json::Error>> {
    match read_private(p) {
        Ok(b) => Ok(serde_json::from_slice(&b)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Ok(StoreData::default())),
        Err(e) => Err(e),
    }
}

/// Where [`TokenStore::update`] keeps a store that is not valid JSON (this second's name).
fn corrupt_copy_name(p: &Path) -> PathBuf {
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    let name = p.file_name().and_then(|n| n.to_str()).unwrap_or("tokens");
    p.with_file_name(format!("{name}.corrupt-{secs}"))
}

/// How long [`TokenStore::update`] waits for another process's lock.
const LOCK_WAIT: std::time::Duration = std::time::Duration::from_secs(10);

/// An exclusive lock on `.NAME.lock` beside the store, held until the file is dropped.
#[cfg(unix)]
fn lock(p: &Path) -> std::io::Result<std::fs::File> {
    use std::os::fd::AsRawFd;
    use std::os::unix::fs::OpenOptionsExt;
    let name = p.file_name().and_then(|n| n.to_str()).unwrap_or("tokens");
    let lock_path = p.with_file_name(format!(".{name}.lock"));
    let f = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .mode(0o600)
        .custom_flags(libc::O_NOFOLLOW)
        .open(&lock_path)?;
    let start = std::time::Instant::now();
    loop {
        // SAFETY: flock on a descriptor this function owns; no memory is involved.
        if unsafe { libc::flock(f.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) } == 0 {
            return Ok(f);
        }
        let e = std::io::Error::last_os_error();
        if e.raw_os_error() != Some(libc::EWOULDBLOCK) {
            return Err(e);
        }
        if start.elapsed() > LOCK_WAIT {
            return Err(std::io::Error::new(
                std::io::ErrorKind::TimedOut,
                format!(
                    "{} is held by another process for more than {} s",
                    lock_path.display(),
                    LOCK_WAIT.as_secs()
                ),
            ));
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
}

/// No advisory lock off Unix: updates there are last-writer-wins.
#[cfg(not(unix))]
fn lock(_p: &Path) -> std::io::Result<()> {
    Ok(())
}

fn refused(why: String) -> std::io::Error {
    std::io::Error::new(std::io::ErrorKind::PermissionDenied, why)
}

/// An existing store must be a regular file only its owner can write: a symlink planted where
/// the store lives would send tokens into (or read tokens from) a file someone else chose, and a
/// file others can write could hold tokens they chose. A missing file is fine.
fn check_existing(p: &Path) -> std::io::Result<()> {
    let m = match std::fs::symlink_metadata(p) {
        Ok(m) => m,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(e),
    };
    if m.file_type().is_symlink() {
        return Err(refused(
            "is a symbolic link: refusing to read or write tokens through it (remove the link)"
                .into(),
        ));
    }
    if !m.is_file() {
        return Err(refused("is not a regular file".into()));
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = m.permissions().mode() & 0o777;
        if mode & 0o022 != 0 {
            return Err(refused(format!(
                "is writable by others (mode {mode:o}): refusing to use it (chmod 600 it)"
            )));
        }
    }
    Ok(())
}

/// Reads the store after [`check_existing`], without following a link swapped in between.
fn read_private(p: &Path) -> std::io::Result<Vec<u8>> {
    use std::io::Read;
    check_existing(p)?;
    let mut opts = std::fs::OpenOptions::new();
    opts.read(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        opts.custom_flags(libc::O_NOFOLLOW);
    }
    let mut out = Vec::new();
    opts.open(p)?.read_to_end(&mut out)?;
    Ok(out)
}

/// Writes `body` to a new file beside `p` with an unpredictable name, created exclusively
/// (`O_EXCL`, which also refuses any symlink at that name) with mode 0600, and returns its path.
fn write_temporary(dir: &Path, p: &Path, body: &[u8]) -> std::io::Result<PathBuf> {
    use std::io::Write;
    let name = p.file_name().and_then(|n| n.to_str()).unwrap_or("tokens");
    for _ in 0..8 {
        let mut r = [0u8; 12];
        getrandom::fill(&mut r).map_err(|e| std::io::Error::other(e.to_string()))?;
        let hex: String = r.iter().map(|b| format!("{b:02x}")).collect();
        let tmp = dir.join(format!(".{name}.{hex}.tmp"));
        let mut opts = std::fs::OpenOptions::new();
        opts.write(true).create_new(true);
        #[cfg(unix)]
        {
            use std::os::unix::fs::OpenOptionsExt;
            opts.mode(0o600).custom_flags(libc::O_NOFOLLOW);
        }
        match opts.open(&tmp) {
            Ok(mut f) => {
                let written = f.write_all(body).and_then(|_| f.sync_all());
                return match written {
                    Ok(()) => Ok(tmp),
                    Err(e) => {
                        let _ = std::fs::remove_file(&tmp);
                        Err(e)
                    }
                };
            }
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(e),
        }
    }
    Err(std::io::Error::other(
        "no unused temporary file name in 8 tries",
    ))
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
                dpop: false,
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

    #[cfg(unix)]
    #[test]
    fn a_planted_symlink_is_refused_and_its_target_untouched() {
        let dir = scratch("link");
        std::fs::create_dir_all(&dir).unwrap();
        let target = dir.join("victim");
        std::fs::write(&target, b"{}").unwrap();
        let p = dir.join("tokens.json");
        std::os::unix::fs::symlink(&target, &p).unwrap();
        let s = TokenStore::file(p.clone());
        let e = s.load().unwrap_err().to_string();
        assert!(e.contains("symbolic link"), "{e}");
        let mut d = StoreData::default();
        d.clients.insert(
            "x".into(),
            StoredClient {
                client_id: "canary".into(),
                ..Default::default()
            },
        );
        let e = s.save(&d).unwrap_err().to_string();
        assert!(e.contains("symbolic link"), "{e}");
        assert_eq!(std::fs::read(&target).unwrap(), b"{}");
        assert!(std::fs::symlink_metadata(&p)
            .unwrap()
            .file_type()
            .is_symlink());
        // no temporary left behind, and none at a predictable name
        let left: Vec<_> = std::fs::read_dir(&dir)
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(left.len(), 2, "{left:?}");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[cfg(unix)]
    #[test]
    fn a_store_others_can_write_is_refused() {
        use std::os::unix::fs::PermissionsExt;
        let dir = scratch("shared");
        std::fs::create_dir_all(&dir).unwrap();
        let p = dir.join("tokens.json");
        std::fs::write(&p, b"{}").unwrap();
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o666)).unwrap();
        let e = TokenStore::file(p.clone()).load().unwrap_err();
        assert!(matches!(e, StoreError::Io { ref path, .. } if path == &p));
        let e = e.to_string();
        assert!(e.contains("writable by others"), "{e}");
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o600)).unwrap();
        assert_eq!(TokenStore::file(p).load().unwrap(), StoreData::default());
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[cfg(unix)]
    #[test]
    fn the_old_temporary_name_is_not_followed() {
        // A link planted at the name the store used to write through (FILE.tmp<pid>) is ignored.
        let dir = scratch("oldtmp");
        std::fs::create_dir_all(&dir).unwrap();
        let target = dir.join("victim");
        std::fs::write(&target, b"untouched").unwrap();
        let p = dir.join("tokens.json");
        let old = p.with_extension(format!("tmp{}", std::process::id()));
        std::os::unix::fs::symlink(&target, &old).unwrap();
        TokenStore::file(p.clone())
            .save(&StoreData::default())
            .unwrap();
        assert_eq!(std::fs::read(&target).unwrap(), b"untouched");
        assert!(!std::fs::symlink_metadata(&p)
            .unwrap()
            .file_type()
            .is_symlink());
        std::fs::remove_dir_all(&dir).unwrap();
    }

    fn token(access: &str) -> StoredToken {
        StoredToken {
            access_token: access.into(),
            issuer: "http://127.0.0.1:2".into(),
            token_endpoint: "http://127.0.0.1:2/token".into(),
            ..StoredToken::default()
        }
    }

    #[test]
    fn concurrent_updates_of_different_servers_keep_both() {
        let dir = scratch("merge");
        let p = dir.join("tokens.json");
        // Two processes that loaded the (empty) store before either saved.
        let stale = StoreData::default();
        let a = TokenStore::file(p.clone());
        let b = TokenStore::file(p.clone());
        a.update(&stale, |d| {
            d.tokens.insert("http://127.0.0.1:1/a".into(), token("ta"));
        })
        .unwrap();
        let merged = b
            .update(&stale, |d| {
                d.tokens.insert("http://127.0.0.1:1/b".into(), token("tb"));
            })
            .unwrap();
        assert_eq!(merged.tokens.len(), 2);
        // Many at once, from threads (flock is per open file, so this is the cross-process case).
        let threads: Vec<_> = (0..8)
            .map(|i| {
                let p = p.clone();
                std::thread::spawn(move || {
                    for j in 0..10 {
                        TokenStore::file(p.clone())
                            .update(&StoreData::default(), |d| {
                                d.tokens
                                    .insert(format!("http://127.0.0.1:1/{i}/{j}"), token("t"));
                            })
                            .unwrap();
                    }
                })
            })
            .collect();
        for t in threads {
            t.join().unwrap();
        }
        assert_eq!(TokenStore::file(p).load().unwrap().tokens.len(), 82);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_corrupt_store_is_kept_as_a_copy_when_replaced() {
        let dir = scratch("corrupt");
        std::fs::create_dir_all(&dir).unwrap();
        let p = dir.join("tokens.json");
        std::fs::write(&p, b"{\"tokens\": [oops").unwrap();
        let s = TokenStore::file(p.clone());
        let e = s.load().unwrap_err().to_string();
        assert!(e.contains("tokens.json.corrupt-"), "{e}");
        s.update(&StoreData::default(), |d| {
            d.tokens.insert("http://127.0.0.1:1/a".into(), token("ta"));
        })
        .unwrap();
        assert_eq!(s.load().unwrap().tokens.len(), 1);
        let copies: Vec<_> = std::fs::read_dir(&dir)
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.to_string_lossy().contains(".corrupt-"))
            .collect();
        assert_eq!(copies.len(), 1, "{copies:?}");
        assert_eq!(std::fs::read(&copies[0]).unwrap(), b"{\"tokens\": [oops");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_malformed_store_is_named() {
        let p = scratch("bad.json");
        std::fs::write(&p, b"[1,2").unwrap();
        let e = TokenStore::file(p.clone()).load().unwrap_err();
        assert!(matches!(e, StoreError::Corrupt { ref path, .. } if path == &p));
        let e = e.to_string();
        assert!(
            e.starts_with(&format!(
                "the token store {} is not a token store (",
                p.display()
            )),
            "{e}"
        );
        assert!(e.contains("is not a token store"), "{e}");
        std::fs::remove_file(&p).unwrap();
        assert_eq!(TokenStore::memory().load().unwrap(), StoreData::default());
        TokenStore::memory().save(&StoreData::default()).unwrap();
    }
}
