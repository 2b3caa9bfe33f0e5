//! The query of a URL instance (`/s/{scenario}/mcp?…`): its parameters, typed by the
//! scenario's schema, and its instance tag.
//!
//! `receive` parses it to pick the instance a request addresses; the OAuth endpoints
//! (`auth_endpoints`) read the same queries, so it is one parser for both.

use mcp_triage_wire::percent::decode_form as percent_decode;
use serde_json::{Map, Value};

/// Why a URL instance's query is refused (answered as a 400 naming it).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum QueryError {
    /// `params=` is not a JSON object (not JSON, or another JSON value).
    #[error("`params` must be a JSON object")]
    ParamsNotObject,
}

/// Parse the URL-instance query: `params=<json>` and/or one `name=value` per parameter
/// (values parsed as JSON when they parse, else taken as strings; a string parameter keeps
/// the raw text). `instance=<tag>` separates otherwise identical instances.
pub fn parse_query(
    scenario: &str,
    query: Option<&str>,
) -> Result<(Value, Option<String>), QueryError> {
    let mut params = Map::new();
    let mut tag = None;
    let info = crate::scenarios::find(scenario).map(|s| s.info());
    for pair in query.unwrap_or("").split('&').filter(|p| !p.is_empty()) {
        let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
        let k = percent_decode(k);
        let v = percent_decode(v);
        match k.as_str() {
            "params" => match serde_json::from_str::<Value>(&v) {
                Ok(Value::Object(m)) => params.extend(m),
                _ => return Err(QueryError::ParamsNotObject),
            },
            "instance" => tag = Some(v),
            _ => {
                let is_string = info
                    .and_then(|i| {
                        i.params
                            .iter()
                            .chain(crate::scenarios::COMMON_PARAMS)
                            .find(|p| p.name.eq_ignore_ascii_case(&k))
                    })
                    .is_some_and(|p| p.kind == crate::scenarios::ParamKind::String);
                let value = if is_string {
                    Value::String(v)
                } else {
                    serde_json::from_str(&v).unwrap_or(Value::String(v))
                };
                params.insert(k, value);
            }
        }
    }
    Ok((Value::Object(params), tag))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn query_params_are_typed_by_schema() {
        let (p, tag) = parse_query(
            "errors.http_status_sequence",
            Some("statusCodes=%5B503%2C200%5D&instance=a"),
        )
        .unwrap();
        assert_eq!(p, json!({ "statusCodes": [503, 200] }));
        assert_eq!(tag.as_deref(), Some("a"));
        let (p, _) = parse_query("errors.rate_limited", Some("retryAfter=2")).unwrap();
        assert_eq!(p, json!({ "retryAfter": "2" }));
        let (p, _) = parse_query(
            "errors.tool_error",
            Some("params=%7B%22onInvocation%22%3A2%7D"),
        )
        .unwrap();
        assert_eq!(p, json!({ "onInvocation": 2 }));
        assert!(parse_query("baseline", Some("params=[1]")).is_err());
    }

    #[test]
    fn a_params_member_that_is_not_an_object_is_typed() {
        for q in ["params=[1]", "params=%7B", "a=1&params=2"] {
            let e = parse_query("baseline", Some(q)).unwrap_err();
            assert!(matches!(e, QueryError::ParamsNotObject), "{q}");
            assert_eq!(e.to_string(), "`params` must be a JSON object");
        }
    }
}
