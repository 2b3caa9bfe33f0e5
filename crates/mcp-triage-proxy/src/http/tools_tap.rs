//! The `tools/list` tap ([`ToolsTap`]): reads the `tools` array of a response as it passes, JSON or
//! SSE, so the observer learns tool annotations without holding the body back.

use mcp_triage_core::sse::{Flow, SseItem, SseParser};
use serde_json::Value;

/// Reads the `tools` array of a `tools/list` result as the body passes (JSON or SSE), bounded by
/// the classification limits.
pub(super) struct ToolsTap {
    sse: Option<SseParser>,
    json: Vec<u8>,
    pub(super) max: u64,
    pub(super) overflow: bool,
    pub(super) tools: Option<Vec<Value>>,
}

impl ToolsTap {
    pub(super) fn new(sse: bool, limits: mcp_triage_core::Limits) -> ToolsTap {
        ToolsTap {
            sse: sse.then(|| SseParser::new(limits.max_event_bytes)),
            json: Vec::new(),
            max: limits.max_body_bytes,
            overflow: false,
            tools: None,
        }
    }

    pub(super) fn feed(&mut self, chunk: &[u8]) {
        if self.overflow || self.tools.is_some() {
            return;
        }
        if let Some(p) = self.sse.as_mut() {
            let mut found = None;
            let r = p.feed(chunk, &mut |item| {
                if let SseItem::Event { data, .. } = item {
                    if let Some(t) = tools_of(data) {
                        found = Some(t);
                        return Flow::Stop;
                    }
                }
                Flow::Continue
            });
            if r.is_err() {
                self.overflow = true;
            }
            self.tools = found;
        } else if self.json.len() as u64 + chunk.len() as u64 > self.max {
            self.overflow = true;
            self.json = Vec::new();
        } else {
            self.json.extend_from_slice(chunk);
        }
    }

    pub(super) fn finish(self) -> Option<Vec<Value>> {
        if self.overflow {
            return None;
        }
        self.tools.or_else(|| tools_of(&self.json))
    }
}

fn tools_of(data: &[u8]) -> Option<Vec<Value>> {
    let v: Value = serde_json::from_slice(data).ok()?;
    match v.get("result")?.get("tools")? {
        Value::Array(a) => Some(a.clone()),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tools_are_read_from_json_and_sse() {
        let body = br#"{"jsonrpc":"2.0","id":1,"result":{"tools":[{"name":"a"}]}}"#;
        let mut t = ToolsTap::new(false, mcp_triage_core::Limits::DEFAULT);
        t.feed(&body[..10]);
        t.feed(&body[10..]);
        assert_eq!(t.finish().unwrap().len(), 1);
        let mut t = ToolsTap::new(true, mcp_triage_core::Limits::DEFAULT);
        t.feed(b"event: message\ndata: ");
        t.feed(body);
        t.feed(b"\n\n");
        assert_eq!(t.finish().unwrap()[0]["name"], "a");
    }
}
