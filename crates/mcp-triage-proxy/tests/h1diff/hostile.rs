//! The hostile families: requests and answers built to be read two ways (HTTP request
//! smuggling and response desync), each with what RFC 9112/9110 let a server do with it.

use super::gen::{
    base_lines, chunk, head, json_body, resp_head, valid_response, Class, Req, Resp, Rng,
};

/// A request that a lenient server would take for a second one: if it ever reaches the
/// upstream, a request was smuggled.
pub fn smuggled(tag: &str) -> Vec<u8> {
    let case = tag.rsplit_once('-').map_or(tag, |(c, _)| c);
    format!("GET /smuggled?h1d={case}-s HTTP/1.1\r\nHost: 127.0.0.1\r\nx-h1d: {case}-s\r\n\r\n")
        .into_bytes()
}

struct Built {
    family: &'static str,
    class: Class,
    method: &'static str,
    extra: Vec<String>,
    /// The bytes after the head.
    after: Vec<u8>,
    body: Vec<u8>,
    codings: Vec<String>,
    must_close: bool,
    /// Replaces the base lines' Host line (None: no Host; Some(two lines)).
    host: Option<Vec<String>>,
    target: Option<String>,
}

impl Built {
    fn new(family: &'static str, class: Class) -> Built {
        Built {
            family,
            class,
            method: "POST",
            extra: Vec::new(),
            after: Vec::new(),
            body: Vec::new(),
            codings: Vec::new(),
            must_close: false,
            host: Some(vec!["Host: 127.0.0.1".into()]),
            target: None,
        }
    }
}

/// A hostile request for `tag`, and whether an early answer may be scripted for it.
pub fn request(r: &mut Rng, tag: &str) -> (Req, bool) {
    let n = r.range(5, 120);
    let body = json_body(r, 9, n);
    let b = match r.below(11) {
        0 => cl_te(r, tag, &body),
        1 | 2 => te_obfuscated(r, tag, &body),
        3 | 4 => chunk_size(r, tag, &body),
        5 => fold_and_controls(r, &body),
        6 => content_lengths(r, &body),
        7 => hosts(r, &body),
        8 => methods(r, &body),
        9 => sizes(r, &body),
        _ => early_malformed(r, tag, &body),
    };
    let early_ok = b.class == Class::Valid || b.family.starts_with("early");
    let (target, mut lines) = base_lines(r, tag);
    lines.retain(|l| !l.to_ascii_lowercase().starts_with("host:"));
    if let Some(h) = &b.host {
        let at = r.below(lines.len() + 1);
        for (i, l) in h.iter().enumerate() {
            lines.insert(at + i, l.clone());
        }
    }
    for l in &b.extra {
        let at = r.below(lines.len() + 1);
        lines.insert(at, l.clone());
    }
    let mut bytes = head(b.method, b.target.as_deref().unwrap_or(&target), &lines);
    bytes.extend_from_slice(&b.after);
    let head_only = b.method == "HEAD";
    (
        Req {
            tag: tag.to_string(),
            family: b.family,
            bytes,
            class: b.class,
            body: b.body,
            codings: b.codings,
            must_close: b.must_close,
            head_only,
        },
        early_ok,
    )
}

/// CL.TE and TE.CL: both framings, each hiding a request from a server that takes the other.
fn cl_te(r: &mut Rng, tag: &str, body: &[u8]) -> Built {
    let mut b = Built::new("CL.TE", Class::Choice);
    b.must_close = true;
    let chunked = chunk(r, body);
    let te = "Transfer-Encoding: chunked".to_string();
    if r.pct(50) {
        // CL.TE: a length-framer takes the chunked body and the smuggled request as one body;
        // a chunked-framer sees the smuggled request after the last chunk.
        let mut after = chunked.clone();
        after.extend(smuggled(tag));
        b.extra = vec![format!("Content-Length: {}", after.len()), te];
        b.after = after;
    } else {
        // TE.CL: the length covers only the first chunk-size line; the rest is a request to a
        // length-framer, chunk data to a chunked-framer.
        b.family = "TE.CL";
        let s = smuggled(tag);
        let mut inner = s.clone();
        inner.extend_from_slice(body);
        let after = [
            format!("{:x}\r\n", inner.len()).into_bytes(),
            inner.clone(),
            b"\r\n0\r\n\r\n".to_vec(),
        ]
        .concat();
        b.extra = vec![
            te,
            format!("Content-Length: {}", format!("{:x}\r\n", inner.len()).len()),
        ];
        b.after = after;
        b.body = inner;
        return b;
    }
    b.body = body.to_vec();
    b
}

/// TE.TE: Transfer-Encoding spelled so that one server sees chunked and another does not.
fn te_obfuscated(r: &mut Rng, tag: &str, body: &[u8]) -> Built {
    let chunked = chunk(r, body);
    let with_smuggle = [chunked.clone(), smuggled(tag)].concat();
    let (family, class, lines, codings): (&str, Class, Vec<&str>, Vec<&str>) = match r.below(11) {
        0 => (
            "TE casing Chunked",
            Class::Valid,
            vec!["Transfer-Encoding: Chunked"],
            vec![],
        ),
        1 => (
            "TE leading space",
            Class::Valid,
            vec!["Transfer-Encoding:  chunked"],
            vec![],
        ),
        2 => (
            "TE leading tab",
            Class::Valid,
            vec!["Transfer-Encoding:\tchunked"],
            vec![],
        ),
        3 => (
            "TE xchunked",
            Class::Refuse { body: false },
            vec!["Transfer-Encoding: xchunked"],
            vec![],
        ),
        4 => (
            "TE chunked, identity",
            Class::Refuse { body: false },
            vec!["Transfer-Encoding: chunked, identity"],
            vec![],
        ),
        5 => (
            "TE gzip, chunked",
            Class::Choice,
            vec!["Transfer-Encoding: gzip, chunked"],
            vec!["gzip"],
        ),
        6 => (
            "TE two lines gzip/chunked",
            Class::Choice,
            vec!["Transfer-Encoding: gzip", "Transfer-Encoding: chunked"],
            vec!["gzip"],
        ),
        7 => (
            "TE two lines chunked/chunked",
            Class::Choice,
            vec!["Transfer-Encoding: chunked", "Transfer-Encoding: chunked"],
            vec![],
        ),
        8 => (
            "TE identity",
            Class::Refuse { body: false },
            vec!["Transfer-Encoding: identity"],
            vec![],
        ),
        9 => (
            "TE chunked then identity lines",
            Class::Refuse { body: false },
            vec!["Transfer-Encoding: chunked", "Transfer-Encoding: identity"],
            vec![],
        ),
        _ => (
            "TE trailing comma chunked,",
            Class::Choice,
            vec!["Transfer-Encoding: chunked,"],
            vec![],
        ),
    };
    let mut b = Built::new(family, class);
    b.extra = lines.into_iter().map(String::from).collect();
    b.codings = codings.into_iter().map(String::from).collect();
    // Where the framing is not chunked the chunked body is followed by a smuggled request: a
    // server that does not refuse would read a length-less body as empty and the chunks and
    // that request as requests. Where it is chunked, what follows would be a real request.
    b.after = if matches!(class, Class::Refuse { .. }) {
        with_smuggle
    } else {
        chunked
    };
    b.body = body.to_vec();
    b
}

/// Chunk-size tricks: `0x`, `+`, leading zeros, overflow, extensions, bare LF, missing CRLF.
fn chunk_size(r: &mut Rng, tag: &str, body: &[u8]) -> Built {
    let n = body.len();
    let s = smuggled(tag);
    let good_rest = |data: &[u8]| [data.to_vec(), b"\r\n0\r\n\r\n".to_vec()].concat();
    let (family, class, after): (&str, Class, Vec<u8>) = match r.below(9) {
        0 => (
            "chunk size 0x",
            Class::Refuse { body: true },
            [format!("0x{n:x}\r\n").into_bytes(), good_rest(body)].concat(),
        ),
        1 => (
            "chunk size +",
            Class::Refuse { body: true },
            [format!("+{n:x}\r\n").into_bytes(), good_rest(body)].concat(),
        ),
        2 => (
            "chunk size leading zeros",
            Class::Valid,
            [format!("0000000{n:x}\r\n").into_bytes(), good_rest(body)].concat(),
        ),
        3 => (
            "chunk size overflow",
            Class::Refuse { body: true },
            [
                b"ffffffffffffffffff\r\n".to_vec(),
                body.to_vec(),
                b"\r\n0\r\n\r\n".to_vec(),
                s.clone(),
            ]
            .concat(),
        ),
        4 => (
            "chunk size overflow to small",
            Class::Refuse { body: true },
            [
                format!("1000000000000000{n:x}\r\n").into_bytes(),
                good_rest(body),
                s.clone(),
            ]
            .concat(),
        ),
        5 => (
            "chunk extension",
            Class::Valid,
            [
                format!("{n:x};a=b;c=\"d e\"\r\n").into_bytes(),
                good_rest(body),
            ]
            .concat(),
        ),
        6 => (
            "chunk bare LF",
            Class::Choice,
            [
                format!("{n:x}\n").into_bytes(),
                body.to_vec(),
                b"\n0\n\n".to_vec(),
            ]
            .concat(),
        ),
        7 => (
            "chunk missing CRLF after data",
            Class::Refuse { body: true },
            [
                format!("{:x}\r\n", n.saturating_sub(3).max(1)).into_bytes(),
                body.to_vec(),
                b"\r\n0\r\n\r\n".to_vec(),
                s.clone(),
            ]
            .concat(),
        ),
        _ => (
            "chunk negative size",
            Class::Refuse { body: true },
            [b"-1\r\n".to_vec(), good_rest(body)].concat(),
        ),
    };
    let mut b = Built::new(family, class);
    b.extra = vec!["Transfer-Encoding: chunked".into()];
    b.after = after;
    b.body = body.to_vec();
    b
}

/// obs-fold, CR/LF/NUL inside values, a space before the colon.
fn fold_and_controls(r: &mut Rng, body: &[u8]) -> Built {
    let (family, class, line): (&str, Class, String) = match r.below(8) {
        0 => ("obs-fold", Class::Choice, "x-fold: a\r\n b".into()),
        1 => (
            "obs-fold tab",
            Class::Choice,
            "x-fold: a\r\n\tTransfer-Encoding: chunked".into(),
        ),
        2 => ("NUL in value", Class::Choice, "x-nul: a\0b".into()),
        3 => ("bare CR in value", Class::Choice, "x-cr: a\rb".into()),
        4 => (
            "bare LF in value",
            Class::Choice,
            "x-lf: a\nTransfer-Encoding: chunked".into(),
        ),
        5 => (
            "space before colon",
            Class::Refuse { body: false },
            "Content-Length : 0".into(),
        ),
        6 => (
            "space before colon TE",
            Class::Refuse { body: false },
            "Transfer-Encoding : chunked".into(),
        ),
        _ => (
            "tab before colon",
            Class::Refuse { body: false },
            "x-a\t: b".into(),
        ),
    };
    let mut b = Built::new(family, class);
    b.extra = vec![line, format!("Content-Length: {}", body.len())];
    b.after = body.to_vec();
    b.body = body.to_vec();
    b
}

/// Duplicate and list Content-Length (RFC 9110 §8.6).
fn content_lengths(r: &mut Rng, body: &[u8]) -> Built {
    let n = body.len();
    let (family, class, lines, after): (&str, Class, Vec<String>, Vec<u8>) = match r.below(7) {
        0 => (
            "CL twice equal",
            Class::Choice,
            vec![
                format!("Content-Length: {n}"),
                format!("Content-Length: {n}"),
            ],
            body.to_vec(),
        ),
        1 => (
            "CL list equal",
            Class::Choice,
            vec![format!("Content-Length: {n}, {n}")],
            body.to_vec(),
        ),
        2 => (
            "CL list differs",
            Class::Refuse { body: false },
            vec![format!("Content-Length: 1, {n}")],
            body.to_vec(),
        ),
        3 => (
            "CL twice differs",
            Class::Refuse { body: false },
            vec![
                format!("Content-Length: {n}"),
                format!("Content-Length: {}", n + 1),
            ],
            body.to_vec(),
        ),
        4 => (
            "CL plus sign",
            Class::Refuse { body: false },
            vec![format!("Content-Length: +{n}")],
            body.to_vec(),
        ),
        5 => (
            "CL hex",
            Class::Refuse { body: false },
            vec![format!("Content-Length: 0x{n:x}")],
            body.to_vec(),
        ),
        _ => (
            "CL leading zeros",
            Class::Valid,
            vec![format!("Content-Length: 000{n}")],
            body.to_vec(),
        ),
    };
    let mut b = Built::new(family, class);
    b.extra = lines;
    b.after = after;
    b.body = body.to_vec();
    b
}

/// Missing Host, two Host lines (RFC 9112 §3.2: 400).
fn hosts(r: &mut Rng, body: &[u8]) -> Built {
    let (family, host) = match r.below(3) {
        0 => ("Host missing", None),
        1 => (
            "Host twice equal",
            Some(vec![
                "Host: 127.0.0.1".to_string(),
                "Host: 127.0.0.1".to_string(),
            ]),
        ),
        _ => (
            "Host twice differs",
            Some(vec![
                "Host: 127.0.0.1".to_string(),
                "Host: evil.example".to_string(),
            ]),
        ),
    };
    let mut b = Built::new(family, Class::Refuse { body: false });
    b.host = host;
    b.extra = vec![format!("Content-Length: {}", body.len())];
    b.after = body.to_vec();
    b.body = body.to_vec();
    b
}

/// Lower-case methods, CONNECT, `OPTIONS *`: the RFC lets a server forward an unknown method.
fn methods(r: &mut Rng, body: &[u8]) -> Built {
    let mut b = Built::new("lower-case method", Class::Choice);
    match r.below(3) {
        0 => {
            b.method = "post";
            b.extra = vec![format!("Content-Length: {}", body.len())];
            b.after = body.to_vec();
            b.body = body.to_vec();
        }
        1 => {
            b.family = "CONNECT";
            b.method = "CONNECT";
            b.target = Some("127.0.0.1:443".into());
        }
        _ => {
            b.family = "OPTIONS *";
            b.method = "OPTIONS";
            b.target = Some("*".into());
        }
    }
    b
}

/// Many header lines (to past 100) and huge ones (past 64 KiB).
fn sizes(r: &mut Rng, body: &[u8]) -> Built {
    let mut b = Built::new("many header lines", Class::Choice);
    if r.pct(50) {
        b.extra = (0..r.range(90, 140))
            .map(|i| format!("x-h{i}: {i}"))
            .collect();
    } else {
        b.family = "huge header";
        b.extra = vec![format!(
            "x-huge: {}",
            "h".repeat(r.range(60 << 10, 70 << 10))
        )];
    }
    b.extra.push(format!("Content-Length: {}", body.len()));
    b.after = body.to_vec();
    b.body = body.to_vec();
    b
}

/// A chunked body whose second chunk-size is not hex, followed by a request: scripted with an
/// early answer, so the upstream has answered before the bad byte arrives.
fn early_malformed(r: &mut Rng, tag: &str, body: &[u8]) -> Built {
    let mut b = Built::new(
        "early answer, malformed chunk",
        Class::Refuse { body: true },
    );
    let first = r.range(1, body.len());
    b.extra = vec!["Transfer-Encoding: chunked".into()];
    b.after = [
        format!("{first:x}\r\n").into_bytes(),
        body[..first].to_vec(),
        b"\r\nzz-not-hex\r\n".to_vec(),
        smuggled(tag),
    ]
    .concat();
    b.body = body.to_vec();
    b
}

/// The answer to a HEAD: a length and no body.
pub fn head_response(r: &mut Rng, tag: &str) -> Resp {
    let n = r.range(0, 5000);
    Resp {
        family: "HEAD answer",
        bytes: resp_head(
            "200 OK",
            tag,
            &[
                "content-type: application/json".into(),
                format!("content-length: {n}"),
            ],
        ),
        status: 200,
        body: Vec::new(),
        close_after: false,
        early: false,
        may_fail: false,
        must_fail: false,
    }
}

/// A planted response: what a client would take for the next answer after a misframed body.
fn planted() -> Vec<u8> {
    b"HTTP/1.1 200 OK\r\nx-h1d-resp: PLANTED\r\ncontent-length: 8\r\n\r\nplanted!".to_vec()
}

/// A hostile answer: TE+CL, identity+CL, 1xx first, 204/304 with a body, close-delimited,
/// too many lines, Content-Length lists, early answers.
pub fn response(r: &mut Rng, tag: &str, early_ok: bool) -> Resp {
    let n = r.range(0, 400);
    let body = json_body(r, 3, n);
    let mut out = valid_response(r, tag);
    out.body = body.clone();
    out.status = 200;
    let pick = r.below(if early_ok { 12 } else { 11 });
    let (family, bytes) = match pick {
        0..=2 | 10 => framing_answer(r, tag, &body, pick, &mut out),
        3..=9 => odd_answer(r, tag, &body, pick, &mut out),
        _ => return early(r, tag),
    };
    out.family = family;
    out.bytes = bytes;
    out
}

/// Answers whose framing a length-framer reads differently: TE with CL, `identity` with CL.
fn framing_answer(
    r: &mut Rng,
    tag: &str,
    body: &[u8],
    pick: usize,
    out: &mut Resp,
) -> (&'static str, Vec<u8>) {
    match pick {
        0 => {
            // The length covers the first chunk-size line: a length-framer reads the planted
            // answer (the chunk's data) as the answer to the next request.
            let p = planted();
            let size = format!("{:x}\r\n", p.len());
            out.body = p.clone();
            let h = resp_head(
                "200 OK",
                tag,
                &[
                    "content-type: application/json".into(),
                    "transfer-encoding: chunked".into(),
                    format!("content-length: {}", size.len()),
                ],
            );
            (
                "response TE+CL planted",
                [h, size.into_bytes(), p, b"\r\n0\r\n\r\n".to_vec()].concat(),
            )
        }
        1 => {
            let h = resp_head(
                "200 OK",
                tag,
                &[
                    format!("content-length: {}", body.len() + 20),
                    "content-type: application/json".into(),
                    "transfer-encoding: chunked".into(),
                ],
            );
            ("response CL+TE (CL longer)", [h, chunk(r, body)].concat())
        }
        2 => {
            // Transfer-Encoding present, chunked not last: the body runs to the close.
            out.close_after = true;
            out.may_fail = true;
            let h = resp_head(
                "200 OK",
                tag,
                &[
                    "transfer-encoding: identity".into(),
                    format!("content-length: {}", body.len().min(5)),
                ],
            );
            ("response identity+CL", [h, body.to_vec()].concat())
        }
        _ => {
            let h = resp_head(
                "200 OK",
                tag,
                &[
                    "content-type: application/json".into(),
                    "transfer-encoding: chunked".into(),
                    "content-length: 0".into(),
                ],
            );
            ("response TE+CL 0", [h, chunk(r, body)].concat())
        }
    }
}

/// Interim answers, bodies where none may be, close-delimited bodies, many lines, listed
/// lengths.
fn odd_answer(
    r: &mut Rng,
    tag: &str,
    body: &[u8],
    pick: usize,
    out: &mut Resp,
) -> (&'static str, Vec<u8>) {
    match pick {
        3 => {
            let interim = r.pick(&[
                "HTTP/1.1 100 Continue\r\n\r\n",
                "HTTP/1.1 102 Processing\r\n\r\n",
                "HTTP/1.1 103 Early Hints\r\nlink: </a>; rel=preload\r\n\r\n",
                "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 103 Early Hints\r\nlink: </b>\r\n\r\n",
            ]);
            let h = resp_head(
                "200 OK",
                tag,
                &[
                    "content-type: application/json".into(),
                    format!("content-length: {}", body.len()),
                ],
            );
            (
                "1xx before the answer",
                [interim.as_bytes().to_vec(), h, body.to_vec()].concat(),
            )
        }
        4 | 5 => {
            let (status, family) = if pick == 4 {
                ("204 No Content", "204 with a body")
            } else {
                ("304 Not Modified", "304 with a body")
            };
            out.status = status[..3].parse().unwrap_or(0);
            out.body = Vec::new();
            // The bytes after the head are no body: the upstream closes so they are no answer
            // either, and nothing of them may reach the client.
            out.close_after = true;
            let h = resp_head(
                status,
                tag,
                &[format!("content-length: {}", planted().len())],
            );
            (family, [h, planted()].concat())
        }
        6 => {
            out.close_after = true;
            let h = resp_head("200 OK", tag, &["content-type: application/json".into()]);
            ("close-delimited body", [h, body.to_vec()].concat())
        }
        7 => {
            out.may_fail = true;
            let mut lines: Vec<String> = (0..r.range(95, 160))
                .map(|i| format!("x-r{i}: {i}"))
                .collect();
            lines.push(format!("content-length: {}", body.len()));
            (
                "response past 100 lines",
                [resp_head("200 OK", tag, &lines), body.to_vec()].concat(),
            )
        }
        8 => {
            out.may_fail = true;
            let n = body.len();
            let lines = if r.pct(50) {
                vec![
                    format!("content-length: {n}"),
                    format!("content-length: {n}"),
                ]
            } else {
                vec![format!("content-length: {n}, {n}")]
            };
            (
                "response CL duplicate equal",
                [resp_head("200 OK", tag, &lines), body.to_vec()].concat(),
            )
        }
        _ => {
            out.must_fail = true;
            out.close_after = true;
            let lines = vec![format!("content-length: 1, {}", body.len().max(2))];
            (
                "response CL list differs",
                [resp_head("200 OK", tag, &lines), body.to_vec()].concat(),
            )
        }
    }
}

/// An answer written as soon as the request head is read (401/413 do this), before the body;
/// the upstream closes after it three times in five.
pub fn early(r: &mut Rng, tag: &str) -> Resp {
    let close_after = r.pct(60);
    let (status, family) = *r.pick(&[
        ("401 Unauthorized", "early 401"),
        ("413 Payload Too Large", "early 413"),
    ]);
    let body = b"{\"error\":\"early\"}".to_vec();
    let mut lines = vec![format!("content-length: {}", body.len())];
    if close_after {
        lines.push("connection: close".into());
    }
    Resp {
        family,
        bytes: [resp_head(status, tag, &lines), body.clone()].concat(),
        status: status[..3].parse().unwrap_or(0),
        body,
        close_after,
        early: true,
        may_fail: false,
        must_fail: false,
    }
}
