//! What the heads of both directions share: header fields read from a head's bytes into a
//! `HeaderMap` that shares them, and the fields that frame a message or say what becomes of the
//! connection, read the same way for requests and responses (RFC 9110 §8.6, RFC 9112 §6–§9).

use bytes::Bytes;
use http::header::{self, HeaderMap, HeaderName, HeaderValue};

/// The most header lines of a head (hyper's limit, which the proxy had before).
pub(crate) const MAX_HEADERS: usize = 100;

/// Where a field's name and value lie in a head: `((name start, end), (value start, end))`.
pub(crate) type FieldRange = ((usize, usize), (usize, usize));

/// The places of `fields` (parsed from `buf`) in `buf`, so they can be cut from the head once
/// it is split off the read buffer.
pub(crate) fn field_ranges(buf: &[u8], fields: &[httparse::Header<'_>]) -> Vec<FieldRange> {
    let base = buf.as_ptr() as usize;
    let at = |s: &[u8]| {
        let start = s.as_ptr() as usize - base;
        (start, start + s.len())
    };
    fields
        .iter()
        .map(|f| (at(f.name.as_bytes()), at(f.value)))
        .collect()
}

/// The fields of `head` at `ranges`, each value sharing the head's bytes (no copy, no
/// allocation per value). `Err` names a field whose name or value is not valid.
pub(crate) fn header_map(head: &Bytes, ranges: &[FieldRange]) -> Result<HeaderMap, String> {
    let mut headers = HeaderMap::with_capacity(ranges.len());
    for &((ns, ne), (vs, ve)) in ranges {
        let bad = || String::from_utf8_lossy(&head[ns..ne]).into_owned();
        let name = HeaderName::from_bytes(&head[ns..ne]).map_err(|_| bad())?;
        let value = HeaderValue::from_maybe_shared(head.slice(vs..ve)).map_err(|_| bad())?;
        headers.append(name, value);
    }
    Ok(headers)
}

/// `Content-Length` that is not one number (RFC 9110 §8.6: every value, and every member of a
/// list, must be the same decimal number).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct InvalidLength;

/// The message's `Content-Length`, `None` without one.
pub(crate) fn content_length(headers: &HeaderMap) -> Result<Option<u64>, InvalidLength> {
    let mut length = None;
    for v in headers.get_all(header::CONTENT_LENGTH) {
        for part in v.as_bytes().split(|&b| b == b',') {
            let digits = part.trim_ascii();
            if digits.is_empty() || !digits.iter().all(u8::is_ascii_digit) {
                return Err(InvalidLength);
            }
            let n: u64 = std::str::from_utf8(digits)
                .ok()
                .and_then(|t| t.parse().ok())
                .ok_or(InvalidLength)?;
            if length.is_some_and(|l| l != n) {
                return Err(InvalidLength);
            }
            length = Some(n);
        }
    }
    Ok(length)
}

/// Whether the last `Transfer-Encoding` ends in `chunked`; `None` without the field.
pub(crate) fn ends_in_chunked(headers: &HeaderMap) -> Option<bool> {
    let last = headers
        .get_all(header::TRANSFER_ENCODING)
        .iter()
        .next_back()?;
    Some(
        last.as_bytes()
            .rsplit(|&b| b == b',')
            .next()
            .is_some_and(|c| c.trim_ascii().eq_ignore_ascii_case(b"chunked")),
    )
}

/// Whether `v`, a comma-separated list, has `token` (compared without case).
pub(crate) fn lists(v: &HeaderValue, token: &[u8]) -> bool {
    v.as_bytes()
        .split(|&b| b == b',')
        .any(|t| t.trim_ascii().eq_ignore_ascii_case(token))
}

/// Whether a `Connection` field lists `token` (`close`, `keep-alive`).
pub(crate) fn connection_lists(headers: &HeaderMap, token: &[u8]) -> bool {
    headers
        .get_all(header::CONNECTION)
        .iter()
        .any(|v| lists(v, token))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn map(fields: &[(&str, &str)]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (n, v) in fields {
            h.append(
                HeaderName::from_bytes(n.as_bytes()).unwrap(),
                HeaderValue::from_str(v).unwrap(),
            );
        }
        h
    }

    #[test]
    fn lengths_must_agree_and_be_digits() {
        assert_eq!(content_length(&map(&[])), Ok(None));
        assert_eq!(
            content_length(&map(&[("content-length", " 12 ")])),
            Ok(Some(12))
        );
        assert_eq!(
            content_length(&map(&[("content-length", "3, 3"), ("content-length", "3")])),
            Ok(Some(3))
        );
        for bad in ["1, 2", "-1", "+1", "", "0x10", "99999999999999999999999"] {
            assert_eq!(
                content_length(&map(&[("content-length", bad)])),
                Err(InvalidLength),
                "{bad:?}"
            );
        }
    }

    #[test]
    fn chunked_must_come_last_and_connection_tokens_are_found() {
        assert_eq!(ends_in_chunked(&map(&[])), None);
        assert_eq!(
            ends_in_chunked(&map(&[("transfer-encoding", "gzip, Chunked")])),
            Some(true)
        );
        assert_eq!(
            ends_in_chunked(&map(&[("transfer-encoding", "chunked, gzip")])),
            Some(false)
        );
        let h = map(&[("connection", "keep-alive"), ("connection", "x, Close")]);
        assert!(connection_lists(&h, b"close") && connection_lists(&h, b"keep-alive"));
        assert!(!connection_lists(&h, b"upgrade"));
    }

    #[test]
    fn fields_share_the_heads_bytes() {
        let head = Bytes::from_static(b"x-a: 1\r\nX-B: two\r\n");
        let ranges = [((0, 3), (5, 6)), ((8, 11), (13, 16))];
        let h = header_map(&head, &ranges).unwrap();
        assert_eq!(h.get("x-a").unwrap(), "1");
        assert_eq!(h.get("x-b").unwrap(), "two");
        let bad = Bytes::from_static(b"x(a: 1");
        assert_eq!(header_map(&bad, &[((0, 3), (5, 6))]).unwrap_err(), "x(a");
    }
}
