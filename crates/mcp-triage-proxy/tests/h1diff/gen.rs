//! The generator: from a seed, one *case* — a client connection's requests (their exact bytes,
//! what they mean, and what the RFC lets a server do with them) and the upstream's scripted
//! answers. Most requests are valid MCP-like traffic; a share are hostile, one family each.

/// splitmix64: small, seeded, the same on every machine (no dependency, so a seed replays
/// whatever the workspace's `rand` does next year).
#[derive(Debug, Clone)]
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed)
    }
    pub fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
    /// Uniform in `0..n` (`n` > 0).
    pub fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
    pub fn range(&mut self, lo: usize, hi: usize) -> usize {
        lo + self.below(hi - lo + 1)
    }
    /// True with probability `pct`%.
    pub fn pct(&mut self, pct: usize) -> bool {
        self.below(100) < pct
    }
    pub fn pick<'a, T>(&mut self, xs: &'a [T]) -> &'a T {
        &xs[self.below(xs.len())]
    }
}

/// The case seed of case `index` under run seed `seed`: each case replays alone.
pub fn case_seed(seed: u64, index: u64) -> u64 {
    Rng::new(seed ^ index.wrapping_mul(0xd1b5_4a32_d192_ed03)).next()
}

/// What the RFC lets a server do with a request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Class {
    /// Must be forwarded as it means, and answered with the upstream's answer.
    Valid,
    /// Must be refused (400/501/431/...) and the connection closed; nothing of it may reach
    /// the upstream as a complete request. `body`: the defect is in the body, so the head may
    /// already have gone upstream (then the body must not end there).
    Refuse { body: bool },
    /// Either, at the server's choice; if forwarded, as it means and in strict form.
    Choice,
}

/// One request of a case.
#[derive(Debug, Clone)]
pub struct Req {
    /// `<case>-<n>`: in the target's query and an `x-h1d` field, so the upstream and the
    /// records name it.
    pub tag: String,
    pub family: &'static str,
    pub bytes: Vec<u8>,
    pub class: Class,
    /// The body as it means (decoded), when forwarded.
    pub body: Vec<u8>,
    /// Transfer codings other than chunked that must still be named upstream.
    pub codings: Vec<String>,
    /// After answering it, the connection must close (RFC 9112 §6.1 for CL+TE).
    pub must_close: bool,
    pub head_only: bool,
}

/// The upstream's answer to one request.
#[derive(Debug, Clone)]
pub struct Resp {
    pub family: &'static str,
    /// What the upstream writes (interim heads included).
    pub bytes: Vec<u8>,
    pub status: u16,
    /// The body as it means (RFC 9112 §6.3), which the client must get.
    pub body: Vec<u8>,
    /// The upstream closes its connection after writing it.
    pub close_after: bool,
    /// Written as soon as the request head is read, before the body.
    pub early: bool,
    /// The proxy may refuse to forward it (502 or a closed connection) instead.
    pub may_fail: bool,
    /// The response is one the RFC forbids forwarding as is: then the proxy must answer 502
    /// or close (a Content-Length list that disagrees).
    pub must_fail: bool,
}

/// One client connection's worth of traffic.
#[derive(Debug, Clone)]
pub struct Case {
    pub index: u64,
    pub seed: u64,
    pub reqs: Vec<Req>,
    pub resps: Vec<Resp>,
    /// All requests written at once (in slices) rather than one after the other's answer.
    pub pipelined: bool,
    /// Where the byte stream is cut into writes.
    pub cuts: Vec<usize>,
}

impl Case {
    /// Requests plus responses: what the figures count as messages.
    pub fn messages(&self) -> usize {
        self.reqs.len() + self.resps.len()
    }
}

pub const CRLF: &str = "\r\n";

/// The case `index` of run `seed`. `prefix` goes in front of tags (`p` proxy, `n` nginx).
pub fn case(seed: u64, index: u64, prefix: &str) -> Case {
    case_with(seed, index, prefix, false)
}

/// [`case`], with only valid answers when `valid_answers` (the same requests: the nginx
/// comparison is about which requests a server takes, and a desync the answers cause would
/// hide that).
pub fn case_with(seed: u64, index: u64, prefix: &str, valid_answers: bool) -> Case {
    case_of(seed, index, prefix, valid_answers, false)
}

/// Only valid traffic: what must pass byte-exact whatever the proxy's strictness.
pub fn valid_case(seed: u64, index: u64, prefix: &str) -> Case {
    case_of(seed, index, prefix, true, true)
}

fn case_of(seed: u64, index: u64, prefix: &str, valid_answers: bool, valid_only: bool) -> Case {
    let cs = case_seed(seed, index);
    let mut r = Rng::new(cs);
    let n = r.range(1, 5);
    let hostile_case = r.pct(45) && !valid_only;
    let mut reqs = Vec::with_capacity(n);
    let mut resps = Vec::with_capacity(n);
    for i in 0..n {
        let tag = format!("{prefix}{index}-{i}");
        let hostile = hostile_case && r.pct(45);
        let (req, early_ok) = if hostile {
            super::hostile::request(&mut r, &tag)
        } else {
            (valid_request(&mut r, &tag), true)
        };
        let hostile_resp = hostile_case && r.pct(35);
        let resp = if req.family == "CONNECT" {
            // A 2xx to CONNECT would turn the connection into a tunnel.
            let mut r = valid_response(&mut r, &tag);
            r.bytes = resp_head(
                "405 Method Not Allowed",
                &tag,
                &["content-length: 0".into()],
            );
            (r.status, r.body, r.family) = (405, Vec::new(), "405 to CONNECT");
            r
        } else if req.family.starts_with("early answer") {
            // The family is about what follows an early answer: it always gets one.
            super::hostile::early(&mut r, &tag)
        } else if req.head_only {
            super::hostile::head_response(&mut r, &tag)
        } else if hostile_resp {
            super::hostile::response(&mut r, &tag, early_ok && !req.body.is_empty())
        } else {
            valid_response(&mut r, &tag)
        };
        let resp = if valid_answers
            && !resp.family.starts_with("valid")
            && !matches!(resp.family, "HEAD answer" | "405 to CONNECT")
        {
            // Its own generator, so the requests' bytes stay those of the full case.
            valid_response(&mut Rng::new(cs ^ i as u64), &tag)
        } else {
            resp
        };
        reqs.push(req);
        resps.push(resp);
    }
    let total: usize = reqs.iter().map(|q| q.bytes.len()).sum();
    let mut cuts: Vec<usize> = (0..r.range(0, 6)).map(|_| r.below(total.max(1))).collect();
    cuts.sort_unstable();
    cuts.dedup();
    Case {
        index,
        seed: cs,
        reqs,
        resps,
        pipelined: r.pct(40),
        cuts,
    }
}

/// A JSON-RPC body of about `size` bytes.
pub fn json_body(r: &mut Rng, id: usize, size: usize) -> Vec<u8> {
    let method = r.pick(&["tools/call", "tools/list", "ping", "resources/read"]);
    let mut pad = String::with_capacity(size + size / 4);
    for _ in 0..size {
        match *r.pick(&['a', 'b', ' ', '"', '\\', 'é', '0', '{', '\r', '\n']) {
            '"' => pad.push_str("\\\""),
            '\\' => pad.push_str("\\\\"),
            '\r' => pad.push_str("\\r"),
            '\n' => pad.push_str("\\n"),
            c => pad.push(c),
        }
    }
    format!(
        r#"{{"jsonrpc":"2.0","id":{id},"method":"{method}","params":{{"name":"echo","arguments":{{"pad":"{pad}"}}}}}}"#
    )
    .into_bytes()
}

/// Encodes `body` chunked in random chunk sizes (sometimes with extensions, leading zeros
/// or a trailer: all valid).
pub fn chunk(r: &mut Rng, body: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    let mut at = 0;
    while at < body.len() {
        let cap = *r.pick(&[3usize, 64, 4096]);
        let n = r.range(1, (body.len() - at).min(cap));
        let size = match r.below(10) {
            0 => format!("000{n:x}"),
            1 => format!("{n:X}"),
            2 => format!("{n:x};ext=1"),
            3 => format!("{n:x};a=\"q s\""),
            _ => format!("{n:x}"),
        };
        out.extend_from_slice(size.as_bytes());
        out.extend_from_slice(b"\r\n");
        out.extend_from_slice(&body[at..at + n]);
        out.extend_from_slice(b"\r\n");
        at += n;
    }
    out.extend_from_slice(if r.pct(10) {
        b"0\r\nx-trailer: t\r\n\r\n"
    } else {
        b"0\r\n\r\n"
    });
    out
}

/// A request head: `lines` between the request line and the blank line.
pub fn head(method: &str, target: &str, lines: &[String]) -> Vec<u8> {
    let mut h = format!("{method} {target} HTTP/1.1\r\n");
    for l in lines {
        h.push_str(l);
        h.push_str(CRLF);
    }
    h.push_str(CRLF);
    h.into_bytes()
}

/// The target and fields every generated request carries: its tag twice, and MCP's headers.
pub fn base_lines(r: &mut Rng, tag: &str) -> (String, Vec<String>) {
    let target = format!("/mcp?h1d={tag}");
    let mut lines = vec![
        format!("{}: 127.0.0.1", r.pick(&["Host", "host", "HOST"])),
        format!("x-h1d: {tag}"),
        "accept: application/json, text/event-stream".to_string(),
    ];
    if r.pct(30) {
        lines.push("user-agent: h1diff/1".into());
    }
    (target, lines)
}

/// A valid request: a POST with a JSON body (length or chunked), a GET for a stream, a
/// DELETE, a HEAD; sometimes with many (but allowed) header lines.
pub fn valid_request(r: &mut Rng, tag: &str) -> Req {
    let (target, mut lines) = base_lines(r, tag);
    if r.pct(5) {
        for i in 0..r.range(10, 60) {
            lines.push(format!("x-many-{i}: {}", "v".repeat(r.range(0, 40))));
        }
    }
    let pick = r.below(100);
    let (method, body, chunked) = match pick {
        0..=59 => {
            let n = *r.pick(&[0usize, 20, 200, 200, 200, 3000, 3000, 3000, 40000]);
            ("POST", json_body(r, pick, n), false)
        }
        60..=79 => {
            let n = *r.pick(&[0usize, 30, 500, 20000]);
            ("POST", json_body(r, pick, n), true)
        }
        80..=89 => ("GET", Vec::new(), false),
        90..=94 => ("DELETE", Vec::new(), false),
        _ => ("HEAD", Vec::new(), false),
    };
    let mut bytes;
    if method == "POST" {
        lines.push("content-type: application/json".into());
        if chunked {
            lines.push(format!(
                "{}: chunked",
                r.pick(&["Transfer-Encoding", "transfer-encoding"])
            ));
            bytes = head(method, &target, &lines);
            bytes.extend(chunk(r, &body));
        } else {
            lines.push(format!(
                "{}: {}",
                r.pick(&["Content-Length", "content-length"]),
                body.len()
            ));
            bytes = head(method, &target, &lines);
            bytes.extend_from_slice(&body);
        }
    } else {
        bytes = head(method, &target, &lines);
    }
    Req {
        tag: tag.to_string(),
        family: match (method, chunked) {
            ("POST", false) => "valid POST length",
            ("POST", true) => "valid POST chunked",
            ("GET", _) => "valid GET",
            ("DELETE", _) => "valid DELETE",
            _ => "valid HEAD",
        },
        bytes,
        class: Class::Valid,
        body,
        codings: Vec::new(),
        must_close: false,
        head_only: method == "HEAD",
    }
}

/// The fields every upstream answer carries: its tag, so the client can tell which request
/// an answer is for (and an answer the proxy wrote itself, which has none).
pub fn resp_head(status: &str, tag: &str, lines: &[String]) -> Vec<u8> {
    let mut h = format!("HTTP/1.1 {status}\r\nx-h1d-resp: {tag}\r\n");
    for l in lines {
        h.push_str(l);
        h.push_str(CRLF);
    }
    h.push_str(CRLF);
    h.into_bytes()
}

/// A valid answer: JSON by length, chunked JSON, an SSE stream, a 202, an error status.
pub fn valid_response(r: &mut Rng, tag: &str) -> Resp {
    let n = *r.pick(&[0usize, 10, 10, 300, 300, 300, 2000, 5000, 5000, 70000]);
    let body = json_body(r, 1, n);
    let pick = r.below(100);
    let (status, family, bytes, body) = match pick {
        0..=44 => {
            let h = resp_head(
                "200 OK",
                tag,
                &[
                    "content-type: application/json".into(),
                    format!("content-length: {}", body.len()),
                ],
            );
            ("200", "valid JSON length", [h, body.clone()].concat(), body)
        }
        45..=64 => {
            let h = resp_head(
                "200 OK",
                tag,
                &[
                    "content-type: application/json".into(),
                    "transfer-encoding: chunked".into(),
                ],
            );
            (
                "200",
                "valid JSON chunked",
                [h, chunk(r, &body)].concat(),
                body,
            )
        }
        65..=84 => {
            let events: Vec<u8> = (0..r.range(1, 4))
                .flat_map(|i| {
                    format!(
                        "id: {i}\ndata: {}\n\n",
                        String::from_utf8_lossy(&body[..body.len().min(200)])
                    )
                    .into_bytes()
                })
                .collect();
            let h = resp_head(
                "200 OK",
                tag,
                &[
                    "content-type: text/event-stream".into(),
                    "cache-control: no-cache".into(),
                    "transfer-encoding: chunked".into(),
                ],
            );
            (
                "200",
                "valid SSE chunked",
                [h, chunk(r, &events)].concat(),
                events,
            )
        }
        85..=92 => {
            let h = resp_head("202 Accepted", tag, &["content-length: 0".into()]);
            ("202", "valid 202", h, Vec::new())
        }
        _ => {
            let b = b"{\"error\":\"nope\"}".to_vec();
            let h = resp_head(
                "404 Not Found",
                tag,
                &[
                    "content-type: application/json".into(),
                    format!("content-length: {}", b.len()),
                ],
            );
            ("404", "valid 404", [h, b.clone()].concat(), b)
        }
    };
    Resp {
        family,
        bytes,
        status: status.parse().unwrap_or(0),
        body,
        close_after: false,
        early: false,
        may_fail: false,
        must_fail: false,
    }
}
