//! The raw-socket upstream: logs every request it reads (strictly, [`super::wire`]) per case,
//! and answers each from the script registered for its tag, early or after the body.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

use super::gen::Resp;
use super::wire::{self, Framing};

/// One request as the upstream read it.
#[derive(Debug, Clone)]
pub struct UpReq {
    pub tag: String,
    pub target: String,
    pub body: Vec<u8>,
    /// The body's end was read.
    pub complete: bool,
    /// Transfer codings named besides chunked.
    pub codings: Vec<String>,
    pub head: String,
}

/// What the upstream saw of one case.
#[derive(Debug, Default, Clone)]
pub struct CaseLog {
    pub reqs: Vec<UpReq>,
    /// Bytes the strict reader refused: the proxy forwarded something malformed.
    pub errors: Vec<String>,
    pub open: usize,
}

#[derive(Default)]
struct State {
    scripts: HashMap<String, Resp>,
    cases: HashMap<String, CaseLog>,
    /// Connections not yet tied to a case (no request read yet).
    pending: usize,
    /// Errors on connections tied to no case.
    orphans: Vec<String>,
}

#[derive(Clone)]
pub struct Upstream {
    pub addr: SocketAddr,
    state: Arc<Mutex<State>>,
}

/// The case key of a tag: `p12-3` → `p12`.
pub fn case_key(tag: &str) -> &str {
    tag.rsplit_once('-').map_or(tag, |(c, _)| c)
}

impl Upstream {
    pub async fn start() -> std::io::Result<Upstream> {
        let l = TcpListener::bind("127.0.0.1:0").await?;
        let up = Upstream {
            addr: l.local_addr()?,
            state: Arc::default(),
        };
        let me = up.clone();
        tokio::spawn(async move {
            while let Ok((s, _)) = l.accept().await {
                me.lock().pending += 1;
                let me = me.clone();
                tokio::spawn(async move { me.serve(s).await });
            }
        });
        Ok(up)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    pub fn script(&self, tag: &str, resp: Resp) {
        self.lock().scripts.insert(tag.to_string(), resp);
    }

    /// Waits (bounded) until no connection of `key` is open, nor (for a moment) one tied to
    /// no case yet (it may be this case's); then its log.
    pub async fn settle(&self, key: &str, within: Duration) -> CaseLog {
        let start = tokio::time::Instant::now();
        let deadline = start + within;
        loop {
            {
                let st = self.lock();
                let open = st.cases.get(key).map_or(0, |c| c.open);
                let untied_done = st.pending == 0 || start.elapsed() > Duration::from_millis(100);
                if (open == 0 && untied_done) || tokio::time::Instant::now() >= deadline {
                    return st.cases.get(key).cloned().unwrap_or_default();
                }
            }
            tokio::time::sleep(Duration::from_millis(2)).await;
        }
    }

    /// Drops what the upstream kept of a checked case (its scripts, its log), so a long run
    /// holds only the cases in flight.
    pub fn forget(&self, key: &str, tags: impl Iterator<Item = String>) {
        let mut st = self.lock();
        for t in tags {
            st.scripts.remove(&t);
        }
        if st.cases.get(key).is_some_and(|c| c.open == 0) {
            st.cases.remove(key);
        }
    }

    pub fn orphans(&self) -> Vec<String> {
        self.lock().orphans.clone()
    }

    async fn serve(&self, mut s: TcpStream) {
        let mut key: Option<String> = None;
        let mut buf = Vec::new();
        let why = self.exchanges(&mut s, &mut buf, &mut key).await;
        let mut st = self.lock();
        match &key {
            Some(k) => {
                let c = st.cases.entry(k.clone()).or_default();
                c.open -= 1;
                if let Err(e) = why {
                    c.errors.push(e);
                }
            }
            None => {
                st.pending -= 1;
                // A connection whose first request the strict reader refused: its tag, if the
                // bytes name one, says whose it is.
                let k = find_tag(&buf).map(|t| case_key(&t).to_string());
                match (why, k) {
                    (Err(e), Some(k)) => st.cases.entry(k).or_default().errors.push(e),
                    (Err(e), None) => st.orphans.push(e),
                    (Ok(()), _) => {}
                }
            }
        }
    }

    /// Reads requests and answers them until the connection ends; an error names bytes the
    /// strict reader refused.
    async fn exchanges(
        &self,
        s: &mut TcpStream,
        buf: &mut Vec<u8>,
        key: &mut Option<String>,
    ) -> Result<(), String> {
        loop {
            let (h, framing) = loop {
                match wire::request(buf) {
                    Ok(Some(x)) => break x,
                    Ok(None) if fill(s, buf).await => {}
                    Ok(None) if buf.is_empty() => return Ok(()),
                    Ok(None) => return Err(format!("a request head cut off: {:?}", show(buf))),
                    Err(e) => return Err(format!("{}: {:?}", e.0, show(buf))),
                }
            };
            let raw = String::from_utf8_lossy(&buf[..h.len]).into_owned();
            buf.drain(..h.len);
            let tag = tag_of(&h);
            let at = self.log_head(key, &tag, &h, raw);
            let resp = self.lock().scripts.get(&tag).cloned();
            let resp = resp.unwrap_or_else(|| stray(&tag));
            if resp.early {
                let _ = s.write_all(&resp.bytes).await;
            }
            let body = match framing {
                Framing::None | Framing::UntilClose => Some(Vec::new()),
                Framing::Length(n) => {
                    while (buf.len() as u64) < n && fill(s, buf).await {}
                    (buf.len() as u64 >= n).then(|| buf.drain(..n as usize).collect())
                }
                Framing::Chunked => loop {
                    match wire::chunked(buf) {
                        Ok(Some((data, used))) => {
                            buf.drain(..used);
                            break Some(data);
                        }
                        Ok(None) if fill(s, buf).await => {}
                        Ok(None) => break None,
                        Err(e) => return Err(format!("{} in the body of {tag}", e.0)),
                    }
                },
            };
            let complete = body.is_some();
            if let (Some(k), Some(b)) = (key.as_ref(), body) {
                let mut st = self.lock();
                let r = &mut st.cases.get_mut(k).expect("tied").reqs[at];
                r.body = b;
                r.complete = true;
            }
            if !complete {
                return Ok(());
            }
            if !resp.early && s.write_all(&resp.bytes).await.is_err() {
                return Ok(());
            }
            if resp.close_after {
                let _ = s.shutdown().await;
                linger(s).await;
                return Ok(());
            }
        }
    }

    /// Logs a request head; its index in the case's log.
    fn log_head(&self, key: &mut Option<String>, tag: &str, h: &wire::Head, raw: String) -> usize {
        let mut st = self.lock();
        if key.is_none() {
            st.pending -= 1;
            let k = case_key(tag).to_string();
            st.cases.entry(k.clone()).or_default().open += 1;
            *key = Some(k);
        }
        let codings = wire::codings(h).map(|c| c.0).unwrap_or_default();
        let c = st.cases.entry(key.clone().unwrap_or_default()).or_default();
        c.reqs.push(UpReq {
            tag: tag.to_string(),
            target: h.start[1].clone(),
            body: Vec::new(),
            complete: false,
            codings,
            head: raw,
        });
        c.reqs.len() - 1
    }
}

/// The answer to a request no script names (a smuggled one): an answer a client would take.
fn stray(tag: &str) -> Resp {
    let mut r = super::hostile::head_response(&mut super::gen::Rng::new(0), tag);
    r.bytes = format!("HTTP/1.1 200 OK\r\nx-h1d-resp: {tag}\r\ncontent-length: 9\r\n\r\nsmuggled!")
        .into_bytes();
    r
}

/// The request's tag: `h1d=` in the target's query, else the `x-h1d` field, else `?`.
fn tag_of(h: &wire::Head) -> String {
    let t = &h.start[1];
    if let Some(i) = t.find("h1d=") {
        return t[i + 4..].split('&').next().unwrap_or("").to_string();
    }
    h.get("x-h1d")
        .map(|v| String::from_utf8_lossy(v).into_owned())
        .unwrap_or_else(|| "?-?".into())
}

/// The first `h1d=` tag in raw bytes.
fn find_tag(buf: &[u8]) -> Option<String> {
    let i = buf.windows(4).position(|w| w == b"h1d=")?;
    let t: Vec<u8> = buf[i + 4..]
        .iter()
        .take_while(|b| b.is_ascii_alphanumeric() || **b == b'-')
        .copied()
        .collect();
    (!t.is_empty()).then(|| String::from_utf8_lossy(&t).into_owned())
}

/// Reads more into `buf`; false at the end (or after 10 s of silence).
async fn fill(s: &mut TcpStream, buf: &mut Vec<u8>) -> bool {
    let mut chunk = [0u8; 16384];
    match tokio::time::timeout(Duration::from_secs(10), s.read(&mut chunk)).await {
        Ok(Ok(n)) if n > 0 => {
            buf.extend_from_slice(&chunk[..n]);
            true
        }
        _ => false,
    }
}

/// Reads and drops what still comes for a moment, so closing sends no reset over an answer.
async fn linger(s: &mut TcpStream) {
    let mut sink = [0u8; 16384];
    let _ = tokio::time::timeout(Duration::from_millis(300), async {
        while let Ok(n) = s.read(&mut sink).await {
            if n == 0 {
                break;
            }
        }
    })
    .await;
}

pub fn show(b: &[u8]) -> String {
    let s = String::from_utf8_lossy(&b[..b.len().min(300)]).into_owned();
    if b.len() > 300 {
        s + "…"
    } else {
        s
    }
}
