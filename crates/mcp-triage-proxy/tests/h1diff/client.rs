//! The raw client: writes a case's bytes (cut into slices, pipelined or one request at a
//! time) and reads the answers strictly, the way a client would frame them.

use std::net::SocketAddr;
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use super::gen::Case;
use super::wire::{self, Framing};

/// One final answer as the client framed it.
#[derive(Debug, Clone)]
pub struct Got {
    pub status: u16,
    /// The `x-h1d-resp` tag: which request the upstream wrote it for (none: the proxy's own).
    pub marker: Option<String>,
    pub body: Vec<u8>,
    pub interim: usize,
    pub head: String,
    /// Its body ran to the connection's end (no length, not chunked).
    pub until_close: bool,
}

/// How the client's reading ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum End {
    /// It had an answer for every request it sent and the connection stayed open.
    Done,
    /// The proxy closed the connection.
    Closed,
    /// Nothing more came within the idle limit while answers were still due.
    Stalled,
    /// Bytes that are no strict answer (a desync, or framing the client cannot follow).
    Garbage(String),
}

#[derive(Debug, Clone)]
pub struct ClientSide {
    pub got: Vec<Got>,
    pub end: End,
    /// Bytes after the last due answer (an answer the client never asked for).
    pub extra: Vec<u8>,
    pub sent: usize,
}

struct Conn {
    s: TcpStream,
    buf: Vec<u8>,
    eof: bool,
    idle: Duration,
}

impl Conn {
    /// Reads more; false at the end or after the idle limit (then `eof` says which).
    async fn fill(&mut self, idle: Duration) -> bool {
        if self.eof {
            return false;
        }
        let mut chunk = [0u8; 16384];
        match tokio::time::timeout(idle, self.s.read(&mut chunk)).await {
            Ok(Ok(n)) if n > 0 => {
                self.buf.extend_from_slice(&chunk[..n]);
                true
            }
            Ok(_) => {
                self.eof = true;
                false
            }
            Err(_) => false,
        }
    }

    /// Reads one final answer (skipping 1xx). `Ok(None)`: closed or stalled before one.
    async fn answer(&mut self, to_head: bool) -> Result<Option<Got>, String> {
        let mut interim = 0;
        loop {
            let (h, status, framing) = loop {
                match wire::response(&self.buf, to_head) {
                    Ok(Some(x)) => break x,
                    Ok(None) if self.fill(self.idle).await => {}
                    Ok(None) if self.buf.is_empty() => return Ok(None),
                    Ok(None) => {
                        return Err(format!(
                            "an answer cut off: {:?}",
                            super::upstream::show(&self.buf)
                        ))
                    }
                    Err(e) => {
                        return Err(format!("{}: {:?}", e.0, super::upstream::show(&self.buf)))
                    }
                }
            };
            let head = String::from_utf8_lossy(&self.buf[..h.len]).into_owned();
            self.buf.drain(..h.len);
            if (100..200).contains(&status) {
                interim += 1;
                continue;
            }
            let body = match framing {
                Framing::None => Vec::new(),
                Framing::Length(n) => {
                    while (self.buf.len() as u64) < n && self.fill(self.idle).await {}
                    if (self.buf.len() as u64) < n {
                        return Err(format!(
                            "{status} body cut off at {} of {n} bytes",
                            self.buf.len()
                        ));
                    }
                    self.buf.drain(..n as usize).collect()
                }
                Framing::Chunked => loop {
                    match wire::chunked(&self.buf) {
                        Ok(Some((data, used))) => {
                            self.buf.drain(..used);
                            break data;
                        }
                        Ok(None) if self.fill(self.idle).await => {}
                        Ok(None) => return Err(format!("{status} chunked body cut off")),
                        Err(e) => return Err(format!("{status} chunked body: {}", e.0)),
                    }
                },
                Framing::UntilClose => {
                    while self.fill(self.idle).await {}
                    if !self.eof {
                        return Err(format!("{status} close-delimited body never ended"));
                    }
                    std::mem::take(&mut self.buf)
                }
            };
            let marker = h
                .get("x-h1d-resp")
                .map(|v| String::from_utf8_lossy(v).into_owned());
            let until_close = framing == Framing::UntilClose;
            return Ok(Some(Got {
                status,
                marker,
                body,
                interim,
                head,
                until_close,
            }));
        }
    }
}

/// Runs `case` against `addr`. `idle`: how long a due answer may be silent.
pub async fn run(addr: SocketAddr, case: &Case, idle: Duration) -> Result<ClientSide, String> {
    let s = TcpStream::connect(addr)
        .await
        .map_err(|e| format!("connect {addr}: {e}"))?;
    let _ = s.set_nodelay(true);
    let mut c = Conn {
        s,
        buf: Vec::new(),
        eof: false,
        idle,
    };
    let stream: Vec<u8> = case.reqs.iter().flat_map(|q| q.bytes.clone()).collect();
    let mut bounds = Vec::new();
    let mut at = 0;
    for q in &case.reqs {
        at += q.bytes.len();
        bounds.push(at);
    }
    let mut got = Vec::new();
    let mut sent = 0;
    let mut written = 0;
    let mut end = End::Done;
    for (i, q) in case.reqs.iter().enumerate() {
        let upto = if case.pipelined {
            stream.len()
        } else {
            bounds[i]
        };
        if written < upto {
            // A write the proxy refused (it closed after an answer) still leaves that answer
            // to read.
            let _ = write_slices(&mut c.s, &stream, written, upto, &case.cuts).await;
            written = upto;
            sent = if case.pipelined {
                case.reqs.len()
            } else {
                i + 1
            };
        }
        match c.answer(q.head_only).await {
            Ok(Some(g)) => {
                let own = g.marker.is_none();
                got.push(g);
                if own && c.eof_soon().await {
                    end = End::Closed;
                    break;
                }
            }
            Ok(None) => {
                end = if c.eof { End::Closed } else { End::Stalled };
                break;
            }
            Err(e) => {
                end = End::Garbage(e);
                break;
            }
        }
    }
    let mut extra = Vec::new();
    if end == End::Done {
        // Anything more is an answer nobody asked for; a closed connection is fine.
        let short = Duration::from_millis(10);
        while c.fill(short).await {}
        extra = std::mem::take(&mut c.buf);
        if c.eof {
            end = End::Closed;
        }
    }
    Ok(ClientSide {
        got,
        end,
        extra,
        sent,
    })
}

impl Conn {
    /// After an answer the proxy wrote itself: whether the connection closes (soon).
    async fn eof_soon(&mut self) -> bool {
        if !self.buf.is_empty() {
            return false;
        }
        while self.fill(Duration::from_millis(300)).await {}
        self.eof && self.buf.is_empty()
    }
}

/// Writes `stream[from..to]` cut at `cuts`, yielding between writes so they arrive apart.
async fn write_slices(
    s: &mut TcpStream,
    stream: &[u8],
    from: usize,
    to: usize,
    cuts: &[usize],
) -> std::io::Result<()> {
    let mut at = from;
    for &cut in cuts.iter().filter(|&&c| c > from && c < to) {
        s.write_all(&stream[at..cut]).await?;
        s.flush().await?;
        tokio::time::sleep(Duration::from_millis(1)).await;
        at = cut;
    }
    s.write_all(&stream[at..to]).await
}
