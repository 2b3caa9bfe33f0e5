//! The exchange-file format: one recorded HTTP response to a `tools/call` per JSON line
//! (`status`, `contentType`, `body` or `bodyBase64`, `expectId`, `headers`). mcp-triage adds
//! optional `protocolVersion`, `outputSchema` and `now` (an HTTP-date) per line. Other members
//! (`name`, `expect`, ...) are ignored.

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::SystemTime;

use base64::Engine as _;
use serde::Deserialize;

use crate::{CallContext, OutputSchema, ProtocolVersion, RequestId, ResponseHead};

/// One parsed line.
#[derive(Debug)]
pub struct Exchange<'a> {
    /// Status and headers (`contentType` becomes a `Content-Type` header).
    pub head: ResponseHead,
    /// The body bytes.
    pub body: Cow<'a, [u8]>,
    /// The expected id (default 1).
    pub expected_id: RequestId,
    /// The line's `protocolVersion`, if it names one.
    pub protocol_version: Option<ProtocolVersion>,
    /// The line's compiled `outputSchema`, if any.
    pub output_schema: Option<Arc<OutputSchema>>,
    /// The line's `now`, if any.
    pub now: Option<SystemTime>,
}

/// Why a line is not an exchange.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExchangeError(pub String);

impl std::fmt::Display for ExchangeError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for ExchangeError {}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Line<'a> {
    status: serde_json::Value,
    #[serde(borrow, default)]
    content_type: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    body: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    body_base64: Option<Cow<'a, str>>,
    #[serde(default)]
    expect_id: Option<RequestId>,
    #[serde(default)]
    headers: Option<BTreeMap<String, String>>,
    #[serde(default)]
    protocol_version: Option<String>,
    #[serde(default)]
    output_schema: Option<serde_json::Value>,
    #[serde(default)]
    now: Option<String>,
}

impl<'a> Exchange<'a> {
    /// Parses one line of an exchange file.
    pub fn parse(line: &'a [u8]) -> Result<Exchange<'a>, ExchangeError> {
        let text = simdutf8::basic::from_utf8(line).map_err(|_| {
            let at = simdutf8::compat::from_utf8(line)
                .err()
                .map_or(0, |e| e.valid_up_to());
            ExchangeError(format!(
                "invalid UTF-8 at byte {at} (an exchange file is UTF-8)"
            ))
        })?;
        let l: Line<'a> = serde_json::from_str(text)
            .map_err(|e| ExchangeError(format!("not an exchange object: {e}")))?;
        let status = match &l.status {
            serde_json::Value::Number(n) => n
                .as_u64()
                .and_then(|s| u16::try_from(s).ok())
                .filter(|s| (100..=999).contains(s))
                .ok_or_else(|| {
                    ExchangeError(format!("\"status\" {n} is not an HTTP status (100-999)"))
                })?,
            other => {
                return Err(ExchangeError(format!(
                    "\"status\" must be an integer, got {other}"
                )))
            }
        };
        let mut head = ResponseHead::new(status);
        if let Some(ct) = l.content_type.as_deref() {
            head = head.content_type(ct);
        }
        for (name, value) in l.headers.unwrap_or_default() {
            if name.eq_ignore_ascii_case("content-type") && l.content_type.is_some() {
                continue;
            }
            head = head.header(name, value);
        }
        let body: Cow<'a, [u8]> = match (l.body, l.body_base64) {
            (Some(_), Some(_)) => {
                return Err(ExchangeError(
                    "a line has \"body\" or \"bodyBase64\", not both".to_string(),
                ))
            }
            (Some(Cow::Borrowed(s)), None) => Cow::Borrowed(s.as_bytes()),
            (Some(Cow::Owned(s)), None) => Cow::Owned(s.into_bytes()),
            (None, Some(b)) => Cow::Owned(
                base64::engine::general_purpose::STANDARD
                    .decode(b.as_bytes())
                    .map_err(|e| ExchangeError(format!("\"bodyBase64\" is not base64: {e}")))?,
            ),
            (None, None) => Cow::Borrowed(&b""[..]),
        };
        let protocol_version = match l.protocol_version {
            None => None,
            Some(v) => Some(ProtocolVersion::parse(&v).ok_or_else(|| {
                ExchangeError(format!("\"protocolVersion\" {v:?} is not a known revision"))
            })?),
        };
        let output_schema = match l.output_schema {
            None => None,
            Some(s) => Some(Arc::new(
                OutputSchema::compile(&s).map_err(|e| ExchangeError(e.to_string()))?,
            )),
        };
        let now = match l.now {
            None => None,
            Some(d) => Some(
                httpdate::parse_http_date(&d)
                    .map_err(|_| ExchangeError(format!("\"now\" {d:?} is not an HTTP-date")))?,
            ),
        };
        Ok(Exchange {
            head,
            body,
            expected_id: l.expect_id.unwrap_or(RequestId::Number(1)),
            protocol_version,
            output_schema,
            now,
        })
    }

    /// The context for this line: its own settings over `base`.
    pub fn context(&self, base: &CallContext) -> CallContext {
        let mut ctx = base.clone();
        ctx.expected_id = self.expected_id.clone();
        if let Some(v) = self.protocol_version {
            ctx.protocol_version = v;
        }
        if let Some(s) = &self.output_schema {
            ctx.output_schema = Some(s.clone());
        }
        if let Some(now) = self.now {
            ctx.now = now;
        }
        ctx
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_a_seed_line() {
        let x = Exchange::parse(
            br#"{"status":200,"contentType":"application/json","body":"{\"a\":1}","expectId":7}"#,
        )
        .unwrap();
        assert_eq!(x.head.get("content-type"), Some("application/json"));
        assert_eq!(&*x.body, br#"{"a":1}"#);
        assert_eq!(x.expected_id, RequestId::Number(7));
    }

    #[test]
    fn base64_and_errors() {
        let x = Exchange::parse(br#"{"status":200,"bodyBase64":"/w==","contentType":""}"#).unwrap();
        assert_eq!(&*x.body, b"\xff");
        assert_eq!(x.head.get("content-type"), None);
        for bad in [
            &br#"{"status":"200"}"#[..],
            br#"{"status":20}"#,
            br#"{"status":200,"body":"a","bodyBase64":"YQ=="}"#,
            br#"{"status":200,"bodyBase64":"***"}"#,
            br#"{"status":200,"protocolVersion":"2099-01-01"}"#,
            br#"[1]"#,
            b"{",
        ] {
            assert!(
                Exchange::parse(bad).is_err(),
                "{}",
                String::from_utf8_lossy(bad)
            );
        }
    }
}
