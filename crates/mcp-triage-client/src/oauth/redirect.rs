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

/// The loopback redirect could not be set up, failed, or never came; or no browser started.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum RedirectError {
    /// The port could not be bound.
    #[error("could not listen on 127.0.0.1:{port} for the OAuth redirect: {source}")]
    Bind {
        /// The port asked for (0: any).
        port: u16,
        /// The bind error.
        #[source]
        source: std::io::Error,
    },
    /// The bound socket reports no local address.
    #[error("the redirect listener has no address: {0}")]
    NoAddress(#[source] std::io::Error),
    /// `accept` failed.
    #[error("the redirect listener failed: {0}")]
    Accept(#[source] std::io::Error),
    /// No callback with the right state before the deadline.
    #[error(
        "no authorization redirect with this login's state arrived within {} s (raise --authorize-timeout, or check the URL was opened)",
        .timeout.as_secs()
    )]
    TimedOut {
        /// The wait.
        timeout: Duration,
    },
    /// The platform's opener did not start.
    #[error("could not start {opener}: {source}")]
    Browser {
        /// `open`, `rundll32` or `xdg-open`.
        opener: &'static str,
        /// The spawn error.
        #[source]
        source: std::io::Error,
    },
}

/// Binds 127.0.0.1 on `port` (0: any free port).
pub async fn bind(port: u16) -> Result<Listener, RedirectError> {
    let inner = TcpListener::bind(("127.0.0.1", port))
        .await
        .map_err(|source| RedirectError::Bind { port, source })?;
    let port = inner.local_addr().map_err(RedirectError::NoAddress)?.port();
    Ok(Listener {
        inner,
        redirect_uri: format!("http://127.0.0.1:{port}{CALLBACK_PATH}"),
    })
}

/// How long one connection to the listener may take to send its request head: a browser sends
/// it at once, so an idle connection (a port scanner, a stuck tab) is closed quickly and never
/// holds up the real redirect, which is served concurrently anyway.
const HEAD_TIMEOUT: Duration = Duration::from_secs(5);

/// What one connection to the listener brought.
enum Arrival {
    /// The callback with the state this login sent: the wait is over.
    Redirect(HashMap<String, String>),
    /// Anything else (another path, a wrong or missing state, an idle or garbled connection):
    /// answered, and the wait goes on.
    Ignored,
}

impl Listener {
    /// Waits for the redirect to the callback path whose `state` is `state`, and returns its
    /// query parameters. Connections are served concurrently, each with a short head timeout;
    /// other paths (a favicon) get a 404 and a callback with a wrong state a 400, and neither
    /// ends the wait: one stray or forged request must not abort the login (CSRF protection
    /// stays, since only the right state is accepted). The wait ends at `timeout`.
    pub async fn wait(
        self,
        state: String,
        timeout: Duration,
    ) -> Result<HashMap<String, String>, RedirectError> {
        let state = std::sync::Arc::new(state);
        let (tx, mut rx) = tokio::sync::mpsc::channel::<HashMap<String, String>>(1);
        let mut conns = tokio::task::JoinSet::new();
        let run = async {
            loop {
                tokio::select! {
                    accepted = self.inner.accept() => {
                        let (sock, _) = accepted.map_err(RedirectError::Accept)?;
                        let (state, tx) = (state.clone(), tx.clone());
                        conns.spawn(async move {
                            if let Arrival::Redirect(p) = serve(sock, &state).await {
                                let _ = tx.send(p).await;
                            }
                        });
                    }
                    Some(params) = rx.recv() => return Ok(params),
                }
            }
        };
        let out = tokio::time::timeout(timeout, run)
            .await
            .map_err(|_| RedirectError::TimedOut { timeout })?;
        conns.abort_all();
        out
    }
}

/// Reads one request head (bounded in bytes and time) and answers it.
async fn serve(mut sock: tokio::net::TcpStream, state: &str) -> Arrival {
    let mut head = Vec::new();
    let mut buf = [0u8; 2048];
    let read = async {
        while !head.windows(4).any(|w| w == b"\r\n\r\n") && head.len() < MAX_HEAD {
            match sock.read(&mut buf).await {
                Ok(n) if n > 0 => head.extend_from_slice(&buf[..n]),
                _ => break,
            }
        }
    };
    if tokio::time::timeout(HEAD_TIMEOUT, read).await.is_err() {
        return Arrival::Ignored;
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
        answer(&mut sock, "404 Not Found", "").await;
        return Arrival::Ignored;
    };
    let params: HashMap<String, String> = u.query_pairs().into_owned().collect();
    if params.get("state").map(String::as_str) != Some(state) {
        let page = "This redirect does not carry the state of the login mcp-triage is waiting for; it was ignored.";
        answer(&mut sock, "400 Bad Request", page).await;
        return Arrival::Ignored;
    }
    let page = if params.contains_key("code") {
        "Authorization complete. You can close this window and return to mcp-triage."
    } else {
        "Authorization failed; mcp-triage shows the reason."
    };
    answer(&mut sock, "200 OK", page).await;
    Arrival::Redirect(params)
}

async fn answer(sock: &mut tokio::net::TcpStream, status: &str, page: &str) {
    let resp = format!(
        "HTTP/1.1 {status}\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: {}\r\nConnection: close\r\nCache-Control: no-store\r\n\r\n{page}",
        page.len()
    );
    let _ = sock.write_all(resp.as_bytes()).await;
    let _ = sock.shutdown().await;
}

/// Opens `url` in the user's browser with the platform's opener; `Err` when none started.
pub fn open_browser(url: &str) -> Result<(), RedirectError> {
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
        .map_err(|source| RedirectError::Browser {
            opener: cmd,
            source,
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn the_listener_returns_the_callback_query_and_ignores_other_paths() {
        let l = bind(0).await.unwrap();
        let uri = l.redirect_uri.clone();
        assert!(uri.starts_with("http://127.0.0.1:") && uri.ends_with("/callback"));
        let waiter = tokio::spawn(l.wait("s1".into(), Duration::from_secs(10)));
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
    async fn a_wrong_state_and_idle_connections_do_not_end_or_delay_the_wait() {
        let l = bind(0).await.unwrap();
        let uri = l.redirect_uri.clone();
        let addr = uri
            .trim_start_matches("http://")
            .trim_end_matches(CALLBACK_PATH)
            .to_string();
        let t0 = std::time::Instant::now();
        let waiter = tokio::spawn(l.wait("right".into(), Duration::from_secs(20)));
        // three connections that never send a byte
        let mut idle = Vec::new();
        for _ in 0..3 {
            idle.push(tokio::net::TcpStream::connect(&addr).await.unwrap());
        }
        let http = reqwest::Client::builder().no_proxy().build().unwrap();
        let r = http
            .get(format!("{uri}?code=forged&state=wrong"))
            .send()
            .await
            .unwrap();
        assert_eq!(r.status().as_u16(), 400);
        let r = http.get(format!("{uri}?code=forged")).send().await.unwrap();
        assert_eq!(r.status().as_u16(), 400);
        assert!(!waiter.is_finished(), "a wrong state ended the wait");
        let r = http
            .get(format!("{uri}?code=real&state=right"))
            .send()
            .await
            .unwrap();
        assert_eq!(r.status().as_u16(), 200);
        let params = waiter.await.unwrap().unwrap();
        assert_eq!(params["code"], "real");
        // served while the idle connections were still open, not after their timeouts
        assert!(t0.elapsed() < HEAD_TIMEOUT, "{:?}", t0.elapsed());
        drop(idle);
    }

    #[tokio::test]
    async fn the_wait_is_bounded() {
        let l = bind(0).await.unwrap();
        let e = l
            .wait("s".into(), Duration::from_millis(50))
            .await
            .unwrap_err();
        assert!(matches!(e, RedirectError::TimedOut { .. }));
        assert_eq!(
            e.to_string(),
            "no authorization redirect with this login's state arrived within 0 s (raise --authorize-timeout, or check the URL was opened)"
        );
    }

    #[tokio::test]
    async fn a_taken_port_is_a_typed_bind_error() {
        let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = taken.local_addr().unwrap().port();
        let e = bind(port).await.err().expect("the port is taken");
        assert!(matches!(e, RedirectError::Bind { port: p, .. } if p == port));
        assert!(e.to_string().starts_with(&format!(
            "could not listen on 127.0.0.1:{port} for the OAuth redirect: "
        )));
    }
}
