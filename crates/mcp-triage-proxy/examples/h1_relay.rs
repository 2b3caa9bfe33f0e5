//! For `bench/proxy-overhead.sh --instructions`: what forwarding HTTP/1.1 costs without hyper.
//!
//! `h1_relay --listen 127.0.0.1:0 --upstream HOST:PORT` is a reverse proxy that reads each
//! request head with `httparse`, writes it upstream rewritten as the proxy rewrites it (origin
//! form, `Host` of the upstream, `Via`, hop-by-hop headers dropped), passes the body's bytes on
//! as they come (a chunked body stays chunked: its framing is only scanned, never re-written),
//! and answers with the upstream's response the same way. One current-thread runtime and one
//! upstream connection per client connection, like the proxy's default. It prints its URL.
//!
//! Why it exists: issue 22 asks the proxy for at most 2× nginx's instructions per exchange.
//! The proxy forwards through hyper, whose server and client sides alone cost about 2× nginx's
//! whole exchange. This relay measures, in the same run, what a forwarder built for exactly this
//! job (heads parsed once, passed on as bytes, no `HeaderMap`, no body channel) costs, so the
//! decision to replace hyper on the forwarding path rests on a number, not a guess.
//!
//! It is a measuring instrument, not a proxy to run: it observes nothing and writes no record,
//! and it leaves out what the real proxy must do around the bytes: TLS upstreams, header and
//! body timeouts, the connection cap, `Expect: 100-continue` and `Upgrade`, a response that
//! starts before the request body has ended, and graceful shutdown. Bad input closes the
//! connection (with a `400` for an unreadable request head, `502` for an unreadable response
//! head), and the reason goes to stderr.

use std::io;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

const USAGE: &str = "usage: h1_relay --listen ADDR --upstream HOST:PORT";

/// The longest request or response head read before the connection is refused.
const MAX_HEAD_BYTES: usize = 64 * 1024;
/// The most header lines of one head.
const MAX_HEADERS: usize = 100;

/// Headers that concern one connection only (RFC 9110 §7.6.1), never passed on.
/// `Transfer-Encoding` is not among them here: the body's bytes pass unchanged, framing included.
const HOP_BY_HOP: [&str; 7] = [
    "connection",
    "keep-alive",
    "proxy-connection",
    "proxy-authorization",
    "te",
    "trailer",
    "upgrade",
];

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let (mut listen, mut upstream) = (None, None);
    let mut args = std::env::args().skip(1);
    while let Some(flag) = args.next() {
        match flag.as_str() {
            "--listen" => listen = args.next(),
            "--upstream" => upstream = args.next(),
            other => {
                eprintln!("h1_relay: unknown argument {other:?}; {USAGE}");
                std::process::exit(2);
            }
        }
    }
    let (Some(listen), Some(upstream)) = (listen, upstream) else {
        eprintln!("{USAGE}");
        std::process::exit(2);
    };
    let listener = match TcpListener::bind(&listen).await {
        Ok(l) => l,
        Err(e) => {
            eprintln!("h1_relay: cannot listen on {listen}: {e}");
            std::process::exit(1);
        }
    };
    println!("http://{}", listener.local_addr().expect("local address"));
    loop {
        let (client, _) = match listener.accept().await {
            Ok(c) => c,
            Err(e) => {
                eprintln!("h1_relay: accept: {e}");
                continue;
            }
        };
        let upstream = upstream.clone();
        tokio::spawn(async move {
            if let Err(e) = relay(client, &upstream).await {
                eprintln!("h1_relay: {e}");
            }
        });
    }
}

/// How a body's end is found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Body {
    Empty,
    Length(u64),
    Chunked(ChunkScan),
    /// A response without length or chunking: it ends when the upstream closes.
    UntilClose,
}

impl Body {
    /// How many of `buf`'s bytes belong to the body, and whether the body ends with them.
    fn take(&mut self, buf: &[u8]) -> Result<(usize, bool), &'static str> {
        Ok(match self {
            Body::Empty => (0, true),
            Body::Length(left) => {
                let n = (*left).min(buf.len() as u64);
                *left -= n;
                (n as usize, *left == 0)
            }
            Body::Chunked(scan) => match scan.feed(buf)? {
                Some(end) => (end, true),
                None => (buf.len(), false),
            },
            Body::UntilClose => (buf.len(), false),
        })
    }
}

/// Where a chunked body's scan stands (RFC 9112 §7.1): only the sizes are read, to find the end.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum ChunkScan {
    /// In a chunk-size line (hex digits, then maybe extensions), the size so far.
    Size {
        size: u64,
        digits: bool,
        extension: bool,
    },
    /// Expecting the LF of the size line.
    SizeLf {
        size: u64,
    },
    /// In chunk data, bytes left.
    Data(u64),
    /// The CR, then the LF, after chunk data.
    DataCr,
    DataLf,
    /// After the last chunk: at the start of a trailer line (an empty one ends the body).
    TrailerStart,
    /// In a trailer line, or the empty line's CR seen (`true`).
    TrailerLine {
        empty: bool,
    },
}

impl ChunkScan {
    const START: ChunkScan = ChunkScan::Size {
        size: 0,
        digits: false,
        extension: false,
    };

    /// Scans `buf`; `Some(n)` when the body ends after its first `n` bytes.
    fn feed(&mut self, buf: &[u8]) -> Result<Option<usize>, &'static str> {
        let mut i = 0;
        while i < buf.len() {
            let b = buf[i];
            *self = match *self {
                ChunkScan::Data(left) => {
                    let n = left.min((buf.len() - i) as u64);
                    i += n as usize;
                    *self = if n == left {
                        ChunkScan::DataCr
                    } else {
                        ChunkScan::Data(left - n)
                    };
                    continue;
                }
                ChunkScan::Size {
                    size,
                    digits,
                    extension,
                } => match b {
                    b'\r' if digits => ChunkScan::SizeLf { size },
                    b'\n' if digits => Self::after_size(size),
                    _ if extension => ChunkScan::Size {
                        size,
                        digits,
                        extension,
                    },
                    b';' | b' ' | b'\t' if digits => ChunkScan::Size {
                        size,
                        digits,
                        extension: true,
                    },
                    _ => {
                        let d = (b as char).to_digit(16).ok_or("a chunk size is not hex")?;
                        let size = size
                            .checked_mul(16)
                            .and_then(|s| s.checked_add(u64::from(d)))
                            .ok_or("a chunk size overflows")?;
                        ChunkScan::Size {
                            size,
                            digits: true,
                            extension,
                        }
                    }
                },
                ChunkScan::SizeLf { size } if b == b'\n' => Self::after_size(size),
                ChunkScan::DataCr if b == b'\r' => ChunkScan::DataLf,
                ChunkScan::DataLf if b == b'\n' => Self::START,
                ChunkScan::TrailerStart if b == b'\r' => ChunkScan::TrailerLine { empty: true },
                ChunkScan::TrailerStart if b == b'\n' => return Ok(Some(i + 1)),
                ChunkScan::TrailerStart => ChunkScan::TrailerLine { empty: false },
                ChunkScan::TrailerLine { empty: true } if b == b'\n' => return Ok(Some(i + 1)),
                ChunkScan::TrailerLine { .. } if b == b'\n' => ChunkScan::TrailerStart,
                ChunkScan::TrailerLine { .. } => ChunkScan::TrailerLine { empty: false },
                ChunkScan::SizeLf { .. } | ChunkScan::DataCr | ChunkScan::DataLf => {
                    return Err("a chunk's line does not end in CRLF")
                }
            };
            i += 1;
        }
        Ok(None)
    }

    fn after_size(size: u64) -> ChunkScan {
        if size == 0 {
            ChunkScan::TrailerStart
        } else {
            ChunkScan::Data(size)
        }
    }
}

/// One client connection: request, response, again, over one upstream connection.
async fn relay(mut client: TcpStream, upstream_addr: &str) -> io::Result<()> {
    client.set_nodelay(true)?;
    let mut upstream = TcpStream::connect(upstream_addr).await?;
    upstream.set_nodelay(true)?;
    let (mut from_client, mut from_upstream, mut out) = (
        Vec::with_capacity(16 * 1024),
        Vec::with_capacity(16 * 1024),
        Vec::new(),
    );
    loop {
        let Some(request) = read_head(
            &mut client,
            &mut from_client,
            |buf, out| rewrite_request(buf, upstream_addr, out),
            &mut out,
        )
        .await?
        else {
            return Ok(());
        };
        let request = match request {
            Ok(r) => r,
            Err(why) => return refuse(&mut client, "400 Bad Request", why).await,
        };
        pass_body(
            &mut client,
            &mut from_client,
            &mut upstream,
            &mut out,
            request.body,
        )
        .await?;
        let response = loop {
            let head = read_head(
                &mut upstream,
                &mut from_upstream,
                |buf, out| rewrite_response(buf, request.head_only, out),
                &mut out,
            )
            .await?;
            match head {
                Some(Ok(r)) if r.informational => {
                    client.write_all(&out).await?;
                    out.clear();
                }
                Some(Ok(r)) => break r,
                Some(Err(why)) => return refuse(&mut client, "502 Bad Gateway", why).await,
                None => return refuse(&mut client, "502 Bad Gateway", "no response").await,
            }
        };
        pass_body(
            &mut upstream,
            &mut from_upstream,
            &mut client,
            &mut out,
            response.body,
        )
        .await?;
        if request.close || response.close {
            return client.shutdown().await;
        }
    }
}

/// What a head says about the exchange.
struct Head {
    body: Body,
    /// The connection ends after this exchange (`Connection: close`, or a body until close).
    close: bool,
    /// A `HEAD` request: its response has no body whatever its headers say.
    head_only: bool,
    /// A 1xx response: the final one follows.
    informational: bool,
}

/// Reads until `rewrite` finds a whole head in `buf` (it writes the head to `out` and says how
/// many bytes it took); `None` when the peer closed before the first byte of one.
async fn read_head(
    from: &mut TcpStream,
    buf: &mut Vec<u8>,
    rewrite: impl Fn(&[u8], &mut Vec<u8>) -> Result<Option<(usize, Head)>, &'static str>,
    out: &mut Vec<u8>,
) -> io::Result<Option<Result<Head, &'static str>>> {
    loop {
        match rewrite(buf, out) {
            Ok(Some((n, head))) => {
                buf.drain(..n);
                return Ok(Some(Ok(head)));
            }
            Ok(None) if buf.len() >= MAX_HEAD_BYTES => {
                return Ok(Some(Err("the head is too long")))
            }
            Ok(None) => {}
            Err(why) => return Ok(Some(Err(why))),
        }
        out.clear();
        buf.reserve(16 * 1024);
        if from.read_buf(buf).await? == 0 {
            return match buf.is_empty() {
                true => Ok(None),
                false => Ok(Some(Err("the connection closed inside a head"))),
            };
        }
    }
}

/// Passes the body's bytes from `buf` and then `from` to `to`, after the head waiting in `out`
/// (so a head and the body bytes read with it go in one write).
async fn pass_body(
    from: &mut TcpStream,
    buf: &mut Vec<u8>,
    to: &mut TcpStream,
    out: &mut Vec<u8>,
    mut body: Body,
) -> io::Result<()> {
    loop {
        let (n, done) = body
            .take(buf)
            .map_err(|why| io::Error::new(io::ErrorKind::InvalidData, why))?;
        out.extend_from_slice(&buf[..n]);
        buf.drain(..n);
        if !out.is_empty() {
            to.write_all(out).await?;
            out.clear();
        }
        if done {
            return Ok(());
        }
        buf.reserve(16 * 1024);
        if from.read_buf(buf).await? == 0 {
            return match body {
                Body::UntilClose => Ok(()),
                _ => Err(io::ErrorKind::UnexpectedEof.into()),
            };
        }
    }
}

/// The request head as the upstream gets it, and how its body is framed.
fn rewrite_request(
    buf: &[u8],
    upstream_host: &str,
    out: &mut Vec<u8>,
) -> Result<Option<(usize, Head)>, &'static str> {
    let mut headers = [httparse::EMPTY_HEADER; MAX_HEADERS];
    let mut req = httparse::Request::new(&mut headers);
    let n = match req.parse(buf) {
        Ok(httparse::Status::Complete(n)) => n,
        Ok(httparse::Status::Partial) => return Ok(None),
        Err(_) => return Err("the request head does not parse"),
    };
    let (Some(method), Some(path)) = (req.method, req.path) else {
        return Err("the request line is incomplete");
    };
    for part in [method.as_bytes(), b" ", path.as_bytes(), b" HTTP/1.1\r\n"] {
        out.extend_from_slice(part);
    }
    let framing = copy_headers(req.headers, &["host"], out)?;
    for part in [
        b"host: ",
        upstream_host.as_bytes(),
        b"\r\nvia: 1.1 h1_relay\r\n\r\n",
    ] {
        out.extend_from_slice(part);
    }
    let head = Head {
        body: framing.body.unwrap_or(Body::Empty),
        close: framing.close || req.version == Some(0),
        head_only: method == "HEAD",
        informational: false,
    };
    Ok(Some((n, head)))
}

/// The response head as the client gets it, and how its body is framed.
fn rewrite_response(
    buf: &[u8],
    head_only: bool,
    out: &mut Vec<u8>,
) -> Result<Option<(usize, Head)>, &'static str> {
    let mut headers = [httparse::EMPTY_HEADER; MAX_HEADERS];
    let mut resp = httparse::Response::new(&mut headers);
    let n = match resp.parse(buf) {
        Ok(httparse::Status::Complete(n)) => n,
        Ok(httparse::Status::Partial) => return Ok(None),
        Err(_) => return Err("the response head does not parse"),
    };
    let code = resp.code.ok_or("the status line is incomplete")?;
    let reason = resp.reason.unwrap_or("");
    out.extend_from_slice(format!("HTTP/1.1 {code:03} {reason}\r\n").as_bytes());
    let framing = copy_headers(resp.headers, &[], out)?;
    let bodiless = head_only || (100..200).contains(&code) || code == 204 || code == 304;
    let body = match framing.body {
        _ if bodiless => Body::Empty,
        Some(b) => b,
        None => Body::UntilClose,
    };
    let close = framing.close || body == Body::UntilClose;
    if close {
        out.extend_from_slice(b"connection: close\r\n");
    }
    out.extend_from_slice(b"\r\n");
    let informational = (100..200).contains(&code);
    Ok(Some((
        n,
        Head {
            body,
            close,
            head_only,
            informational,
        },
    )))
}

/// What the headers of a head say about its framing.
struct Framing {
    body: Option<Body>,
    close: bool,
}

/// Copies the end-to-end headers to `out` (not the hop-by-hop ones, those named in
/// `Connection`, or `skip`) and reads the body's framing from them.
fn copy_headers(
    headers: &[httparse::Header<'_>],
    skip: &[&str],
    out: &mut Vec<u8>,
) -> Result<Framing, &'static str> {
    let connection: Vec<&[u8]> = headers
        .iter()
        .filter(|h| h.name.eq_ignore_ascii_case("connection"))
        .flat_map(|h| h.value.split(|&b| b == b','))
        .map(|t| t.trim_ascii())
        .collect();
    let mut framing = Framing {
        body: None,
        close: connection.iter().any(|t| t.eq_ignore_ascii_case(b"close")),
    };
    for h in headers {
        let name = h.name;
        if name.eq_ignore_ascii_case("content-length") && framing.body.is_none() {
            let text = std::str::from_utf8(h.value).map_err(|_| "a Content-Length is not text")?;
            let len = text
                .trim()
                .parse()
                .map_err(|_| "a Content-Length is not a number")?;
            framing.body = Some(Body::Length(len));
        } else if name.eq_ignore_ascii_case("transfer-encoding") {
            if !h
                .value
                .trim_ascii()
                .to_ascii_lowercase()
                .ends_with(b"chunked")
            {
                return Err("a Transfer-Encoding other than chunked");
            }
            framing.body = Some(Body::Chunked(ChunkScan::START));
        }
        let dropped = HOP_BY_HOP
            .iter()
            .chain(skip)
            .any(|h| name.eq_ignore_ascii_case(h))
            || connection
                .iter()
                .any(|t| t.eq_ignore_ascii_case(name.as_bytes()));
        if !dropped {
            for part in [name.as_bytes(), b": ", h.value, b"\r\n"] {
                out.extend_from_slice(part);
            }
        }
    }
    Ok(framing)
}

/// Answers with `status` and closes: the exchange cannot go on.
async fn refuse(client: &mut TcpStream, status: &str, why: &str) -> io::Result<()> {
    eprintln!("h1_relay: {status}: {why}");
    let answer = format!(
        "HTTP/1.1 {status}\r\ncontent-type: text/plain\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{why}\n",
        why.len() + 1
    );
    client.write_all(answer.as_bytes()).await?;
    client.shutdown().await
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scan_all(body: &[u8]) -> Result<Option<usize>, &'static str> {
        let mut scan = ChunkScan::START;
        scan.feed(body)
    }

    #[test]
    fn a_chunked_body_ends_after_its_last_chunk_and_trailers() {
        let body = b"5;ext=1\r\nhello\r\n0\r\nx-t: 1\r\n\r\nNEXT";
        assert_eq!(scan_all(body), Ok(Some(body.len() - 4)));
        // byte by byte, the same end
        let mut scan = ChunkScan::START;
        let ends: Vec<usize> = (0..body.len())
            .filter(|&i| scan.feed(&body[i..i + 1]).unwrap().is_some())
            .collect();
        assert_eq!(ends, vec![body.len() - 5]);
    }

    #[test]
    fn bad_chunk_framing_is_an_error() {
        assert_eq!(scan_all(b"zz\r\n"), Err("a chunk size is not hex"));
        assert_eq!(
            scan_all(b"1\r\nab\r\n"),
            Err("a chunk's line does not end in CRLF")
        );
        assert_eq!(scan_all(b"3\r\nab"), Ok(None));
    }

    #[test]
    fn the_request_head_is_rewritten_for_the_upstream() {
        let mut out = Vec::new();
        let req = b"POST /mcp?x=1 HTTP/1.1\r\nHost: proxy:1\r\nConnection: keep-alive, x-drop\r\nx-drop: 1\r\nContent-Length: 2\r\n\r\n{}";
        let (n, head) = rewrite_request(req, "up:2", &mut out).unwrap().unwrap();
        assert_eq!(n, req.len() - 2);
        assert_eq!(head.body, Body::Length(2));
        assert!(!head.close);
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "POST /mcp?x=1 HTTP/1.1\r\nContent-Length: 2\r\nhost: up:2\r\nvia: 1.1 h1_relay\r\n\r\n"
        );
    }

    #[test]
    fn a_response_without_length_ends_with_the_connection() {
        let mut out = Vec::new();
        let (_, head) = rewrite_response(
            b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n\r\n",
            false,
            &mut out,
        )
        .unwrap()
        .unwrap();
        assert_eq!(head.body, Body::UntilClose);
        assert!(head.close);
        let (_, head) = rewrite_response(b"HTTP/1.1 204 No Content\r\n\r\n", false, &mut out)
            .unwrap()
            .unwrap();
        assert_eq!(head.body, Body::Empty);
    }
}
