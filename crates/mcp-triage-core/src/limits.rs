//! Explicit, configurable limits. Every buffer the classifier keeps is bounded by one of these;
//! exceeding one gives a `LIMIT_EXCEEDED` verdict naming it, never an allocation failure.

use serde::{Deserialize, Serialize};

/// Size, depth and count limits for one response. From JSON (as the Python and Node bindings
/// take them), absent members keep their defaults and an unknown one is an error, so that a
/// misspelt limit is reported instead of silently left at its default.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default, deny_unknown_fields)]
pub struct Limits {
    /// Largest `application/json` body that is classified.
    pub max_body_bytes: u64,
    /// Largest single SSE event (its data buffer, or one line of it).
    pub max_event_bytes: u64,
    /// Largest SSE stream read before the terminal response.
    pub max_stream_bytes: u64,
    /// Most SSE events read before the terminal response.
    pub max_stream_events: u64,
    /// Deepest JSON nesting that is classified.
    pub max_depth: usize,
    /// How much of a non-2xx body is kept to decode a JSON-RPC error from it; the rest is
    /// read past, not an error.
    pub max_error_body_bytes: u64,
    /// Most bytes a body with a `Content-Encoding` may decode to. `None` (the default): the
    /// limit of the body's kind counts its decoded bytes (`maxBodyBytes` for JSON,
    /// `maxStreamBytes` for SSE), so a compressed body gets the verdict the same body sent
    /// plain would get.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_decoded_bytes: Option<u64>,
    /// Largest ratio of decoded to encoded bytes, checked once more than 1 MiB is decoded: a
    /// decompression bomb is stopped after about a megabyte, not at `maxBodyBytes` (gzip
    /// reaches about 1,030:1 on zeros, Brotli and zstd far more; real JSON rarely passes
    /// 100:1). 0: not checked.
    pub max_decoded_ratio: u64,
}

impl Limits {
    /// The defaults: 64 MiB bodies and events, 1 GiB streams, 10 million events, depth 10,000,
    /// 64 KiB of an error body, decoded bytes counted by the body's own limit, and at most
    /// 1,000 decoded bytes per encoded byte.
    pub const DEFAULT: Limits = Limits {
        max_body_bytes: 64 << 20,
        max_event_bytes: 64 << 20,
        max_stream_bytes: 1 << 30,
        max_stream_events: 10_000_000,
        max_depth: 10_000,
        max_error_body_bytes: 64 << 10,
        max_decoded_bytes: None,
        max_decoded_ratio: 1000,
    };
}

impl Default for Limits {
    fn default() -> Self {
        Limits::DEFAULT
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn deserialises_by_camel_case_name_and_refuses_unknown_members() {
        let l: Limits = serde_json::from_str(r#"{"maxBodyBytes":10}"#).unwrap();
        assert_eq!(l.max_body_bytes, 10);
        assert_eq!(l.max_depth, Limits::DEFAULT.max_depth);
        let typo = serde_json::from_str::<Limits>(r#"{"maxBody":10}"#).unwrap_err();
        assert!(
            typo.to_string().contains("unknown field `maxBody`"),
            "{typo}"
        );
    }
}
