//! The loopback redirect (RFC 8252 §7.3): a listener on 127.0.0.1 that waits for the
//! authorization server to send the browser back with `code` and `state`, and the opener
//! that shows the user the authorization page.

use std::collections::HashMap;
use std::time::Duration;

use reqwest::Url;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

/// The path the redirect URI names.
pub const CALLBACK_PATH: &str = "/callback";
/// Largest request head the listener reads.
const MAX_HEAD: usize = 16 * 1024;

/// A bound listener and its redirect URI.
pub struct Listener {
    inner: TcpListener,
    /// `http://127.0.0.1:PORT/callback`.
    pub redirect_uri: String,
}

/// Binds 127.0.0.1 on `port` (0: any free port).
pub async fn bind(port: u16) -> Result<Listener, String> {
    let inner = TcpListener::bind(("127.0.0.1", port))
        .await
        .map_err(|e| format!("could not listen on 127.0.0.1:{port} for the OAuth redirect: {e}"))?;
    let port = inner
        .local_addr()
        .map_err(|e| format!("the redirect listener has no address: {e}"))?
        .port();
    Ok(Listener {
        inner,
        redirect_uri: format!("http://127.0.0.1:{port}{CALLBACK_PATH}"),
    })
}

impl Listener {
    /// Waits for the redirect to the callback path and returns its query parameters. Other
    /// requests (a browser's favicon) get a 404 and are ignored; the wait ends at `timeout`.
    pub async fn wait(self, timeout: Duration) -> Result<HashMap<String, String>, String> {
        let run = async {
            loop {
                let (mut sock, _) = self
                    .inner
                    .accept()
                    .await
                    .map_err(|e| format!("the redirect listener failed: {e}"))?;
                let mut head = Vec::new();
                let mut buf = [0u8; 2048];
                while !head.windows(4).any(|w| w == b"\r\n\r\n") && head.len() < MAX_HEAD {
                    match tokio::time::timeout(Duration::from_secs(10), sock.read(&mut buf)).await {
                        Ok(Ok(n)) if n > 0 => head.extend_from_slice(&buf[..n]),
                        _ => break,
                    }
                }
                let text = String::from_utf8_lossy(&head);
                let target = text
                    .lines()
                    .next()
                    .and_then(|l| l.strip_prefix("GET "))
                    .and_then(|l| l.split(' ').next())
                    .unwrap_or("");
                let parsed = Url::parse(&format!("http://127.0.0.1{target}")).ok();
                let Some(u) = parsed.filter(|u| u.path() == CALLBACK_PATH) else {
                    let _ = sock
                        .write_all(b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
                        .await;
                    continue;
                };
                let params: HashMap<String, String> = u.query_pairs().into_owned().collect();
                let page = if params.contains_key("code") {
                    "Authorization complete. You can close this window and return to mcp-triage."
                } else {
                    "Authorization failed; mcp-triage shows the reason."
                };
                let resp = format!(
                    "HTTP/1.1 200 OK\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: {}\r\nConnection: close\r\nCache-Control: no-store\r\n\r\n{page}",
                    page.len()
                );
                let _ = sock.write_all(resp.as_bytes()).await;
                let _ = sock.shutdown().await;
                return Ok(params);
            }
        };
        tokio::time::timeout(timeout, run).await.map_err(|_| {
            format!(
                "no authorization redirect arrived within {} s (raise --authorize-timeout, or check the URL was opened)",
                timeout.as_secs()
            )
        })?
    }
}

/// Opens `url` in the user's browser with the platform's opener; `Err` when none started.
pub fn open_browser(url: &str) -> Result<(), String> {
    let (cmd, args): (&str, Vec<&str>) = if cfg!(target_os = "macos") {
        ("open", vec![url])
    } else if cfg!(windows) {
        ("rundll32", vec!["url.dll,FileProtocolHandler", url])
    } else {
        ("xdg-open", vec![url])
    };
    std::process::Command::new(cmd)
        .args(&args)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .map(|mut child| {
            // Reap the opener when it exits (it returns at once) so no zombie is left.
            std::thread::spawn(move || child.wait());
        })
        .map_err(|e| format!("could not start {cmd}: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn the_listener_returns_the_callback_query_and_ignores_other_paths() {
        let l = bind(0).await.unwrap();
        let uri = l.redirect_uri.clone();
        assert!(uri.starts_with("http://127.0.0.1:") && uri.ends_with("/callback"));
        let waiter = tokio::spawn(l.wait(Duration::from_secs(10)));
        let http = reqwest::Client::builder().no_proxy().build().unwrap();
        let base = uri.trim_end_matches(CALLBACK_PATH).to_string();
        let r = http
            .get(format!("{base}/favicon.ico"))
            .send()
            .await
            .unwrap();
        assert_eq!(r.status().as_u16(), 404);
        let r = http
            .get(format!("{uri}?code=abc%20d&state=s1"))
            .send()
            .await
            .unwrap();
        assert_eq!(r.status().as_u16(), 200);
        let params = waiter.await.unwrap().unwrap();
        assert_eq!(params["code"], "abc d");
        assert_eq!(params["state"], "s1");
    }

    #[tokio::test]
    async fn the_wait_is_bounded() {
        let l = bind(0).await.unwrap();
        let e = l.wait(Duration::from_millis(50)).await.unwrap_err();
        assert!(e.contains("no authorization redirect"), "{e}");
    }
}
