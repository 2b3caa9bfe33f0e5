//! A strict RFC 9112 reader of what the proxy *sends*: request heads and bodies on the upstream
//! side, response heads and bodies on the client side. Strict on purpose: anything a lenient
//! peer could read two ways (bare LF, obs-fold, CR/NUL in a value, a space before the colon,
//! Content-Length beside Transfer-Encoding in a request, a Content-Length list, chunked not last)
//! is an error here, because an intermediary must never *forward* such a message, whatever it
//! accepts from its own peers.

/// Why bytes are not one strict HTTP/1.1 message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Bad(pub String);

fn bad<T>(why: impl Into<String>) -> Result<T, Bad> {
    Err(Bad(why.into()))
}

/// One field line as read (name lower-cased).
pub type Field = (String, Vec<u8>);

/// A parsed head: the start line's three parts and the fields.
#[derive(Debug, Clone)]
pub struct Head {
    pub start: [String; 3],
    pub fields: Vec<Field>,
    /// The head's length in bytes, the blank line included.
    pub len: usize,
}

impl Head {
    pub fn all(&self, name: &str) -> impl Iterator<Item = &[u8]> {
        let name = name.to_string();
        self.fields
            .iter()
            .filter(move |(n, _)| *n == name)
            .map(|(_, v)| v.as_slice())
    }
    pub fn get(&self, name: &str) -> Option<&[u8]> {
        self.all(name).next()
    }
    pub fn count(&self, name: &str) -> usize {
        self.all(name).count()
    }
}

fn is_tchar(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b)
}

/// Finds the end of one CRLF-terminated line starting at `at`: `Ok(None)` when incomplete, an
/// error for a bare LF or a bare CR.
fn line(buf: &[u8], at: usize) -> Result<Option<usize>, Bad> {
    for (i, &b) in buf[at..].iter().enumerate() {
        let i = at + i;
        match b {
            b'\n' => return bad(format!("bare LF at byte {i}")),
            b'\r' => {
                return match buf.get(i + 1) {
                    None => Ok(None),
                    Some(b'\n') => Ok(Some(i)),
                    Some(_) => bad(format!("bare CR at byte {i}")),
                }
            }
            0 => return bad(format!("NUL at byte {i}")),
            _ => {}
        }
    }
    Ok(None)
}

/// Reads a head (start line, fields, blank line) at the start of `buf`: `Ok(None)` while it
/// is incomplete.
pub fn head(buf: &[u8]) -> Result<Option<Head>, Bad> {
    let Some(end) = line(buf, 0)? else {
        return Ok(None);
    };
    let start_line = &buf[..end];
    let parts: Vec<&[u8]> = start_line.splitn(3, |&b| b == b' ').collect();
    if parts.len() != 3 || parts.iter().take(2).any(|p| p.is_empty()) {
        return bad(format!(
            "start line {:?} is not three parts",
            String::from_utf8_lossy(start_line)
        ));
    }
    let start = [0, 1, 2].map(|i| String::from_utf8_lossy(parts[i]).into_owned());
    let mut fields = Vec::new();
    let mut at = end + 2;
    loop {
        let Some(end) = line(buf, at)? else {
            return Ok(None);
        };
        if end == at {
            return Ok(Some(Head {
                start,
                fields,
                len: end + 2,
            }));
        }
        fields.push(field(&buf[at..end])?);
        at = end + 2;
    }
}

fn field(l: &[u8]) -> Result<Field, Bad> {
    let show = || String::from_utf8_lossy(l).into_owned();
    if l[0] == b' ' || l[0] == b'\t' {
        return bad(format!("obs-fold line {:?}", show()));
    }
    let Some(colon) = l.iter().position(|&b| b == b':') else {
        return bad(format!("field line without a colon {:?}", show()));
    };
    let name = &l[..colon];
    if name.is_empty() || !name.iter().all(|&b| is_tchar(b)) {
        return bad(format!("field name not a token {:?}", show()));
    }
    let value = trim_ows(&l[colon + 1..]);
    if value.iter().any(|&b| b != b'\t' && (b < 0x20 || b == 0x7f)) {
        return bad(format!("control byte in a field value {:?}", show()));
    }
    Ok((
        name.to_ascii_lowercase()
            .iter()
            .map(|&b| b as char)
            .collect(),
        value.to_vec(),
    ))
}

pub fn trim_ows(v: &[u8]) -> &[u8] {
    let s = v
        .iter()
        .position(|&b| b != b' ' && b != b'\t')
        .unwrap_or(v.len());
    let e = v
        .iter()
        .rposition(|&b| b != b' ' && b != b'\t')
        .map_or(s, |e| e + 1);
    &v[s..e]
}

/// The elements of a list-valued field (all its lines), trimmed and lower-cased; an empty
/// element is an error (strict).
pub fn list(h: &Head, name: &str) -> Result<Vec<String>, Bad> {
    let mut out = Vec::new();
    for v in h.all(name) {
        for e in v.split(|&b| b == b',') {
            let e = trim_ows(e);
            if e.is_empty() || !e.iter().all(|&b| is_tchar(b)) {
                return bad(format!("{name} element {:?}", String::from_utf8_lossy(e)));
            }
            out.push(String::from_utf8_lossy(e).to_ascii_lowercase());
        }
    }
    Ok(out)
}

/// How a body's end is found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Framing {
    None,
    Length(u64),
    Chunked,
    UntilClose,
}

/// One strict Content-Length: exactly one line, digits only.
fn content_length(h: &Head) -> Result<Option<u64>, Bad> {
    let vals: Vec<_> = h.all("content-length").collect();
    match vals.as_slice() {
        [] => Ok(None),
        [v] if !v.is_empty() && v.len() <= 18 && v.iter().all(u8::is_ascii_digit) => {
            Ok(Some(String::from_utf8_lossy(v).parse().unwrap_or(0)))
        }
        _ => bad(format!(
            "Content-Length is not one number: {:?}",
            vals.iter()
                .map(|v| String::from_utf8_lossy(v))
                .collect::<Vec<_>>()
        )),
    }
}

/// The transfer codings other than chunked, in order; an error when chunked is not last or
/// comes twice.
pub fn codings(h: &Head) -> Result<(Vec<String>, bool), Bad> {
    let all = list(h, "transfer-encoding")?;
    let chunked = all.iter().filter(|c| *c == "chunked").count();
    if chunked > 1 || (chunked == 1 && all.last().map(String::as_str) != Some("chunked")) {
        return bad(format!(
            "Transfer-Encoding {all:?}: chunked not once and last"
        ));
    }
    let others = all.into_iter().filter(|c| c != "chunked").collect();
    Ok((others, chunked == 1))
}

/// A strict request: the head and its framing (RFC 9112 §6.3, with no leniency).
pub fn request(buf: &[u8]) -> Result<Option<(Head, Framing)>, Bad> {
    let Some(h) = head(buf)? else { return Ok(None) };
    let [method, target, version] = &h.start;
    if !method.bytes().all(is_tchar) {
        return bad(format!("method {method:?} is not a token"));
    }
    if target.is_empty() || target.bytes().any(|b| b <= b' ' || b == 0x7f) {
        return bad(format!("request target {target:?}"));
    }
    if version != "HTTP/1.1" {
        return bad(format!(
            "request version {version:?} (the proxy speaks HTTP/1.1 upstream)"
        ));
    }
    if h.count("host") != 1 {
        return bad(format!("{} Host lines", h.count("host")));
    }
    let te = h.count("transfer-encoding") > 0;
    let cl = content_length(&h)?;
    if te && h.count("content-length") > 0 {
        return bad("a request with both Transfer-Encoding and Content-Length");
    }
    let framing = if te {
        let (_, chunked) = codings(&h)?;
        if !chunked {
            return bad("a request whose Transfer-Encoding does not end in chunked");
        }
        Framing::Chunked
    } else {
        match cl {
            Some(0) | None => Framing::None,
            Some(n) => Framing::Length(n),
        }
    };
    Ok(Some((h, framing)))
}

/// The status of a response head.
pub fn status(h: &Head) -> Result<u16, Bad> {
    let [version, code, _] = &h.start;
    if version != "HTTP/1.1" && version != "HTTP/1.0" {
        return bad(format!("response version {version:?}"));
    }
    if code.len() != 3 || !code.bytes().all(|b| b.is_ascii_digit()) {
        return bad(format!("status {code:?}"));
    }
    Ok(code.parse().unwrap_or(0))
}

/// A strict response as the client reads it: both framings at once is an error here (the
/// proxy must remove the Content-Length, RFC 9112 §6.3), as is a Content-Length list.
pub fn response(buf: &[u8], to_head: bool) -> Result<Option<(Head, u16, Framing)>, Bad> {
    let Some(h) = head(buf)? else { return Ok(None) };
    let code = status(&h)?;
    let te = h.count("transfer-encoding") > 0;
    if te && h.count("content-length") > 0 {
        return bad("a response with both Transfer-Encoding and Content-Length");
    }
    let cl = content_length(&h)?;
    let framing = if to_head || code < 200 || code == 204 || code == 304 {
        Framing::None
    } else if te {
        match codings(&h)? {
            (_, true) => Framing::Chunked,
            (_, false) => Framing::UntilClose,
        }
    } else {
        match cl {
            Some(0) => Framing::None,
            Some(n) => Framing::Length(n),
            None => Framing::UntilClose,
        }
    };
    Ok(Some((h, code, framing)))
}

/// Decodes a strict chunked body at the start of `buf`: `Ok(None)` while incomplete, else
/// the data and the bytes used (trailers included).
pub fn chunked(buf: &[u8]) -> Result<Option<(Vec<u8>, usize)>, Bad> {
    let mut data = Vec::new();
    let mut at = 0;
    loop {
        let Some(end) = line(buf, at)? else {
            return Ok(None);
        };
        let l = &buf[at..end];
        let size_end = l
            .iter()
            .position(|b| !b.is_ascii_hexdigit())
            .unwrap_or(l.len());
        let size = &l[..size_end];
        if size.is_empty() || size.len() > 15 {
            return bad(format!("chunk size {:?}", String::from_utf8_lossy(l)));
        }
        let rest = &l[size_end..];
        if !rest.is_empty() && !chunk_ext(rest) {
            return bad(format!("chunk extension {:?}", String::from_utf8_lossy(l)));
        }
        let n = usize::from_str_radix(&String::from_utf8_lossy(size), 16).unwrap_or(usize::MAX);
        at = end + 2;
        if n == 0 {
            // Trailer fields, then the blank line.
            loop {
                let Some(end) = line(buf, at)? else {
                    return Ok(None);
                };
                if end == at {
                    return Ok(Some((data, end + 2)));
                }
                field(&buf[at..end])?;
                at = end + 2;
            }
        }
        if buf.len() < at + n + 2 {
            return Ok(None);
        }
        data.extend_from_slice(&buf[at..at + n]);
        if &buf[at + n..at + n + 2] != b"\r\n" {
            return bad("chunk data not followed by CRLF");
        }
        at += n + 2;
    }
}

/// `*( BWS ";" BWS name [ BWS "=" BWS ( token / quoted-string ) ] )`, loosely on the value.
fn chunk_ext(rest: &[u8]) -> bool {
    let s = String::from_utf8_lossy(rest);
    s.split(';').enumerate().all(|(i, part)| {
        if i == 0 {
            return part.trim_matches([' ', '\t']).is_empty();
        }
        let (name, value) = part.split_once('=').unwrap_or((part, "x"));
        let name = name.trim_matches([' ', '\t']);
        let value = value.trim_matches([' ', '\t']);
        !name.is_empty()
            && name.bytes().all(is_tchar)
            && (value.bytes().all(is_tchar) && !value.is_empty()
                || value.len() >= 2 && value.starts_with('"') && value.ends_with('"'))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strict_heads() {
        let (h, f) = request(b"POST /x HTTP/1.1\r\nHost: a\r\nContent-Length: 3\r\n\r\nabc")
            .unwrap()
            .unwrap();
        assert_eq!((h.len, f), (48, Framing::Length(3)));
        assert!(request(b"POST /x HTTP/1.1\nHost: a\r\n\r\n").is_err());
        assert!(request(b"GET / HTTP/1.1\r\nHost: a\r\nx: a\r\n b\r\n\r\n").is_err());
        assert!(request(b"GET / HTTP/1.1\r\nHost : a\r\n\r\n").is_err());
        assert!(request(b"GET / HTTP/1.1\r\n\r\n").is_err());
        assert!(request(b"POST / HTTP/1.1\r\nHost: a\r\ncontent-length: 1, 1\r\n\r\n").is_err());
        assert!(request(b"GET / HTTP/1.1\r\nHost: a\r\n").unwrap().is_none());
    }

    #[test]
    fn strict_chunks() {
        assert_eq!(
            chunked(b"3;a=b\r\nabc\r\n0\r\nx: y\r\n\r\nNEXT").unwrap(),
            Some((b"abc".to_vec(), 23))
        );
        assert!(chunked(b"0x3\r\nabc\r\n0\r\n\r\n").is_err());
        assert!(chunked(b"3\nabc\r\n0\r\n\r\n").is_err());
        assert!(chunked(b"3\r\nabcX\r\n0\r\n\r\n").is_err());
        assert!(chunked(b"ffffffffffffffffff\r\n").is_err());
        assert_eq!(chunked(b"3\r\nab").unwrap(), None);
    }
}
