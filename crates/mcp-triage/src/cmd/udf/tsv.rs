//! ClickHouse's `TabSeparated` text, as an executable UDF receives and answers it: fields split
//! by tabs, strings backslash-escaped (`\t`, `\n`, `\\`, `\0`, `\'`, ...), a `Map(String,String)`
//! written as `{'name':'value',...}` with quoted, escaped strings. Bytes pass as bytes, so a body
//! that is not UTF-8 reaches the classifier unchanged (JSONEachRow cannot carry one).

use std::borrow::Cow;
use std::io::{self, Write};

use mcp_triage_core::exchange::{BodyEnd, Exchange, ExchangeError};
use mcp_triage_core::{ProtocolVersion, RequestId, RequestKind, ResponseHead};

use super::Form;

/// Why a row is not an exchange: the text of its `{"error":...}` result.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum RowError {
    /// Not as many tab-separated fields as the form declares.
    #[error("{found} tab-separated fields, the {} form has {} ({})", form.name(), form.arity(), form.signature())]
    Fields {
        /// Fields in the row.
        found: usize,
        /// The function's form.
        form: Form,
    },
    /// The status is not 100-999.
    #[error("status {0:?} is not an HTTP status (100-999)")]
    Status(String),
    /// A TabSeparated `expectId` that is no Int64.
    #[error("expectId {0:?} is not an Int64")]
    ExpectId(String),
    /// A JSONEachRow `"expectId"` string that is no Int64.
    #[error("\"expectId\" {0:?} is not an Int64")]
    JsonExpectId(String),
    /// A text field that is not UTF-8.
    #[error("{what} is not UTF-8 (invalid at byte {at})")]
    Utf8 {
        /// The field.
        what: &'static str,
        /// Where the invalid bytes begin.
        at: usize,
    },
    /// The headers field is not a `Map(String,String)`.
    #[error("headers {field:?}: {why}")]
    Headers {
        /// The field as given (lossily decoded).
        field: String,
        /// What is wrong with it.
        why: &'static str,
    },
    /// An unknown protocol revision.
    #[error("protocolVersion {0:?} is not a known revision")]
    ProtocolVersion(String),
    /// An `end` that is none of the capture format's words.
    #[error("end {word:?} is not one of {}", BodyEnd::listed(", "))]
    End {
        /// The word as given.
        word: String,
    },
    /// A JSONEachRow row that is not an exchange line.
    #[error(transparent)]
    Exchange(#[from] ExchangeError),
    /// A row longer than the longest accepted.
    #[error("longer than --max-row-bytes {0}")]
    TooLong(usize),
}

/// `\x` escapes as ClickHouse reads them; any other escaped byte stands for itself.
fn unescaped(b: u8) -> u8 {
    match b {
        b'b' => 0x08,
        b'f' => 0x0c,
        b'n' => b'\n',
        b'r' => b'\r',
        b't' => b'\t',
        b'0' => 0,
        b'a' => 0x07,
        b'v' => 0x0b,
        other => other,
    }
}

fn hex(b: u8) -> Option<u8> {
    (b as char).to_digit(16).map(|d| d as u8)
}

/// A field's bytes with the escapes undone; borrowed when there is none (the common case).
pub fn unescape(field: &[u8]) -> Cow<'_, [u8]> {
    if memchr::memchr(b'\\', field).is_none() {
        return Cow::Borrowed(field);
    }
    let mut out = Vec::with_capacity(field.len());
    let mut i = 0;
    while i < field.len() {
        let b = field[i];
        if b != b'\\' || i + 1 == field.len() {
            out.push(b);
            i += 1;
            continue;
        }
        let e = field[i + 1];
        if e == b'x' && i + 3 < field.len() {
            if let (Some(h), Some(l)) = (hex(field[i + 2]), hex(field[i + 3])) {
                out.push(h << 4 | l);
                i += 4;
                continue;
            }
        }
        out.push(unescaped(e));
        i += 2;
    }
    Cow::Owned(out)
}

/// Writes `bytes` escaped so that ClickHouse reads them back as one `String` field.
pub fn write_escaped(out: &mut impl Write, bytes: &[u8]) -> io::Result<()> {
    let mut from = 0;
    for (i, &b) in bytes.iter().enumerate() {
        let esc: &[u8] = match b {
            b'\\' => b"\\\\",
            b'\t' => b"\\t",
            b'\n' => b"\\n",
            b'\r' => b"\\r",
            0 => b"\\0",
            _ => continue,
        };
        out.write_all(&bytes[from..i])?;
        out.write_all(esc)?;
        from = i + 1;
    }
    out.write_all(&bytes[from..])
}

fn utf8(bytes: Cow<'_, [u8]>, what: &'static str) -> Result<String, RowError> {
    String::from_utf8(bytes.into_owned()).map_err(|e| RowError::Utf8 {
        what,
        at: e.utf8_error().valid_up_to(),
    })
}

/// A `Map(String,String)` field: `{}` or `{'a':'b','c':'d'}`.
pub fn parse_map(field: &[u8]) -> Result<Vec<(String, String)>, RowError> {
    let bad = |why| RowError::Headers {
        field: String::from_utf8_lossy(field).into_owned(),
        why,
    };
    let inner = field
        .strip_prefix(b"{")
        .and_then(|f| f.strip_suffix(b"}"))
        .ok_or_else(|| bad("not a Map(String,String) ({...})"))?;
    let mut pairs = Vec::new();
    let mut rest = inner;
    while !rest.is_empty() {
        let (name, after) = quoted(rest).ok_or_else(|| bad("a name is not a quoted string"))?;
        let after = after
            .strip_prefix(b":")
            .ok_or_else(|| bad("no ':' after a name"))?;
        let (value, after) = quoted(after).ok_or_else(|| bad("a value is not a quoted string"))?;
        pairs.push((utf8(name, "a header name")?, utf8(value, "a header value")?));
        rest = match after {
            [] => after,
            [b',', more @ ..] if !more.is_empty() => more,
            _ => return Err(bad("pairs must be separated by ','")),
        };
    }
    Ok(pairs)
}

/// A `'...'` string at the start of `s` (escapes undone) and what follows it.
fn quoted(s: &[u8]) -> Option<(Cow<'_, [u8]>, &[u8])> {
    let body = s.strip_prefix(b"'")?;
    let mut i = 0;
    while i < body.len() {
        match body[i] {
            b'\\' => i += 2,
            b'\'' => return Some((unescape(&body[..i]), &body[i + 1..])),
            _ => i += 1,
        }
    }
    None
}

/// One row of the function's arguments: `status contentType body expectId` (basic form), then
/// `headers protocolVersion` (full form).
pub fn parse_row(line: &[u8], form: Form) -> Result<Exchange<'_>, RowError> {
    let fields: Vec<&[u8]> = line.split(|&b| b == b'\t').collect();
    if fields.len() != form.arity() {
        return Err(RowError::Fields {
            found: fields.len(),
            form,
        });
    }
    let status_text = String::from_utf8_lossy(fields[0]);
    let status = status_text
        .parse::<u16>()
        .ok()
        .filter(|s| (100..=999).contains(s))
        .ok_or_else(|| RowError::Status(status_text.to_string()))?;
    let content_type = utf8(unescape(fields[1]), "contentType")?;
    let expected_id = if form == Form::Capture {
        capture_id(&utf8(unescape(fields[3]), "expectId")?)
    } else {
        let id_text = String::from_utf8_lossy(fields[3]);
        id_text
            .parse::<i64>()
            .map(RequestId::Number)
            .map_err(|_| RowError::ExpectId(id_text.to_string()))?
    };
    let mut head = ResponseHead::new(status).content_type(&content_type);
    let mut protocol_version = None;
    if form != Form::Basic {
        for (name, value) in parse_map(fields[4])? {
            // The contentType argument is the Content-Type, as in an exchange file.
            if !name.eq_ignore_ascii_case("content-type") {
                head = head.header(name, value);
            }
        }
        let v = utf8(unescape(fields[5]), "protocolVersion")?;
        if !v.is_empty() {
            protocol_version = Some(
                ProtocolVersion::parse(&v).ok_or_else(|| RowError::ProtocolVersion(v.clone()))?,
            );
        }
    }
    let (method, end) = if form == Form::Capture {
        let method = utf8(unescape(fields[6]), "method")?;
        let end = utf8(unescape(fields[7]), "end")?;
        let end = match end.as_str() {
            "" => None,
            e => Some(BodyEnd::parse(e).ok_or_else(|| RowError::End {
                word: e.to_string(),
            })?),
        };
        (
            Some(Cow::<str>::Owned(method)).filter(|m| !m.is_empty()),
            end,
        )
    } else {
        (None, None)
    };
    Ok(Exchange {
        head,
        body: unescape(fields[2]),
        expected_id,
        protocol_version,
        output_schema: None,
        now: None,
        end,
        request_kind: method
            .as_deref()
            .map_or(RequestKind::ToolCall, RequestKind::from_method),
        method,
        captured: form == Form::Capture,
    })
}

/// A capture's `expectId` as a `String` column: a JSON number id arrives as its digits and a
/// string id as itself, so digits are read as the number (the usual id) and the rest as a
/// string; empty (a notification has no id) keeps the default.
pub fn capture_id(text: &str) -> RequestId {
    match text.parse::<i64>() {
        Ok(n) => RequestId::Number(n),
        Err(_) if text.is_empty() => RequestId::Number(1),
        Err(_) => RequestId::String(text.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unescape_undoes_clickhouse_escapes() {
        assert_eq!(&*unescape(b"plain"), b"plain");
        assert!(matches!(unescape(b"plain"), Cow::Borrowed(_)));
        assert_eq!(
            &*unescape(br"a\tb\nc\\d\0e\'f\x41\xZZ\q"),
            b"a\tb\nc\\d\0e'fAxZZq"
        );
        assert_eq!(&*unescape(b"end\\"), b"end\\");
    }

    #[test]
    fn write_escaped_round_trips() {
        let raw = b"q\"uote\\ \t tab \n nl \r \0 \xc8 end";
        let mut out = Vec::new();
        write_escaped(&mut out, raw).unwrap();
        assert!(!out.contains(&b'\t') && !out.contains(&b'\n'));
        assert_eq!(&*unescape(&out), raw);
    }

    #[test]
    fn maps_as_clickhouse_writes_them() {
        assert!(parse_map(b"{}").unwrap().is_empty());
        assert_eq!(
            parse_map(br"{'Retry-After':'2\'s\\','X':'a,b:c'}").unwrap(),
            [
                ("Retry-After".to_string(), "2's\\".to_string()),
                ("X".to_string(), "a,b:c".to_string())
            ]
        );
        for bad in [&b"[]"[..], b"{'a'}", b"{'a':'b',}", b"{'a':'b'", b"{'a':b}"] {
            assert!(parse_map(bad).is_err(), "{}", String::from_utf8_lossy(bad));
        }
    }

    #[test]
    fn rows_of_both_forms() {
        let x = parse_row(b"200\tapplication/json\t{\"a\":\"\\t\"}\t-7", Form::Basic).unwrap();
        assert_eq!(x.head.status, 200);
        assert_eq!(x.head.get("content-type"), Some("application/json"));
        assert_eq!(&*x.body, b"{\"a\":\"\t\"}");
        assert_eq!(x.expected_id, RequestId::Number(-7));
        let x = parse_row(
            b"429\t\t\t1\t{'Retry-After':'3','content-type':'x/y'}\t2025-06-18",
            Form::Full,
        )
        .unwrap();
        assert_eq!(x.head.get("retry-after"), Some("3"));
        assert_eq!(x.head.get("content-type"), None);
        assert_eq!(x.protocol_version, ProtocolVersion::parse("2025-06-18"));
        assert_eq!(
            parse_row(b"200\t\t\t1\t{}\t", Form::Full)
                .unwrap()
                .protocol_version,
            None
        );
    }

    #[test]
    fn bad_rows_say_what_is_wrong() {
        let err = |row: &[u8], form| parse_row(row, form).unwrap_err().to_string();
        assert!(err(b"200\tx\tbody", Form::Basic).contains("3 tab-separated fields"));
        assert!(err(b"0\tx\tb\t1", Form::Basic).contains("status \"0\""));
        assert!(err(b"200\tx\tb\t1.5", Form::Basic).contains("expectId \"1.5\""));
        assert!(err(b"200\t\xff\tb\t1", Form::Basic).contains("contentType is not UTF-8"));
        assert!(err(b"200\tx\tb\t1\t{}\t2099-01-01", Form::Full).contains("protocolVersion"));
        // A body need not be UTF-8: it reaches the classifier as bytes.
        assert_eq!(
            &*parse_row(b"200\tx\t\xff\t1", Form::Basic).unwrap().body,
            b"\xff"
        );
    }
}
