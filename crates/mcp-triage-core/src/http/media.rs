/// What a `Content-Type` says the body is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MediaTypeKind {
    /// `application/json`: one JSON-RPC message.
    Json,
    /// `text/event-stream`: an SSE stream.
    EventStream,
    /// Anything else.
    Other,
}

/// A parsed media type: `type/subtype` lower-cased, and the `charset` parameter if any.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MediaType {
    /// `type/subtype`, lower-cased, without parameters.
    pub essence: String,
    /// The `charset` parameter, lower-cased, unquoted.
    pub charset: Option<String>,
}

impl MediaType {
    /// Parses a `Content-Type` value (RFC 9110 §8.3.1): the essence compares case-insensitively,
    /// parameters are ignored except `charset`.
    pub fn parse(value: &str) -> MediaType {
        let mut parts = value.split(';');
        let essence = parts.next().unwrap_or("").trim().to_ascii_lowercase();
        let charset = parts.find_map(|p| {
            let (name, val) = p.split_once('=')?;
            name.trim()
                .eq_ignore_ascii_case("charset")
                .then(|| val.trim().trim_matches('"').to_ascii_lowercase())
        });
        MediaType { essence, charset }
    }

    /// Which kind of body this media type announces.
    pub fn kind(&self) -> MediaTypeKind {
        MediaTypeKind::of_essence(&self.essence)
    }
}

impl MediaTypeKind {
    /// The kind of a `Content-Type` value, read in place (no lower-cased copy): what the
    /// classifier needs for every response, where [`MediaType::parse`] allocates.
    pub fn of(value: &str) -> MediaTypeKind {
        MediaTypeKind::of_essence(value.split(';').next().unwrap_or("").trim())
    }

    fn of_essence(essence: &str) -> MediaTypeKind {
        if essence.eq_ignore_ascii_case("application/json") {
            MediaTypeKind::Json
        } else if essence.eq_ignore_ascii_case("text/event-stream") {
            MediaTypeKind::EventStream
        } else {
            MediaTypeKind::Other
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn case_and_parameters() {
        let m = MediaType::parse("Application/JSON ; Charset=\"UTF-8\"");
        assert_eq!(m.kind(), MediaTypeKind::Json);
        assert_eq!(m.charset.as_deref(), Some("utf-8"));
        assert_eq!(
            MediaType::parse("text/event-stream").kind(),
            MediaTypeKind::EventStream
        );
        for value in [
            "Application/JSON ; Charset=\"UTF-8\"",
            " text/Event-Stream",
            "application/json-rpc",
            "",
            ";",
        ] {
            assert_eq!(
                MediaTypeKind::of(value),
                MediaType::parse(value).kind(),
                "{value:?}"
            );
        }
        assert_eq!(
            MediaType::parse("application/json-rpc").kind(),
            MediaTypeKind::Other
        );
        assert_eq!(MediaType::parse("").kind(), MediaTypeKind::Other);
    }
}
