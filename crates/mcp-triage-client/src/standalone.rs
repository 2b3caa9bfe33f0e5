//! The legacy session's standalone GET stream ([`Standalone`]): opened after `initialize`, read
//! for the whole session, every server request on it answered by POST.

use std::sync::Arc;

use mcp_triage_core::sse::{Flow, SseItem, SseParser};
use mcp_triage_core::ProtocolVersion;
use serde_json::Value;

use crate::answers::answer_or_error;
use crate::headers::{is_event_stream, with_token};
use crate::oauth::BearerCell;
use crate::options::ClientOptions;
use crate::wire::Incoming;

/// Where and how a legacy session's standalone GET stream is read and answered.
pub(crate) struct Standalone {
    pub(crate) http: reqwest::Client,
    pub(crate) url: String,
    pub(crate) headers: Vec<(String, String)>,
    pub(crate) opts: Arc<ClientOptions>,
    pub(crate) bearer: BearerCell,
    pub(crate) version: ProtocolVersion,
    pub(crate) session: String,
}

impl Standalone {
    fn request(&self, b: reqwest::RequestBuilder) -> reqwest::RequestBuilder {
        let mut b = with_token(b, &self.headers, &self.bearer);
        if self.version.at_least(ProtocolVersion::V2025_06_18) {
            b = b.header("MCP-Protocol-Version", self.version.as_str());
        }
        b.header("Mcp-Session-Id", self.session.as_str())
    }

    /// Opens the GET stream (signalling `ready` once its head arrived or it failed), answers
    /// every server request on it by POST, until the stream ends or the task is aborted.
    pub(crate) async fn run(self, ready: tokio::sync::oneshot::Sender<()>) {
        let req = self.request(
            self.http
                .get(&self.url)
                .header("Accept", "text/event-stream"),
        );
        let resp = req.send().await;
        let _ = ready.send(());
        let Ok(mut resp) = resp else { return };
        if !is_event_stream(&resp) {
            return;
        }
        let mut parser = SseParser::new(self.opts.limits.max_event_bytes);
        while let Ok(Some(chunk)) = resp.chunk().await {
            for inc in requests_in(&mut parser, &chunk) {
                let reply = answer_or_error(&self.opts, &inc);
                let post = self
                    .request(self.http.post(&self.url))
                    .header("Accept", "application/json, text/event-stream")
                    .header("Content-Type", "application/json")
                    .body(serde_json::to_vec(&reply).unwrap_or_default());
                let _ = tokio::time::timeout(self.opts.timeout, async {
                    if let Ok(r) = post.send().await {
                        let _ = r.bytes().await;
                    }
                })
                .await;
            }
        }
    }
}

/// The server requests that one chunk of the standalone stream completes, in order. No response
/// is judged on this stream, so no classifier reads it: this is its only parser. An event over
/// `maxEventBytes` is skipped and the stream read on.
fn requests_in(parser: &mut SseParser, chunk: &[u8]) -> Vec<Incoming> {
    let mut found = Vec::new();
    let _ = parser.feed(chunk, &mut |item| {
        if let SseItem::Event {
            event_type, data, ..
        } = item
        {
            if event_type == b"message" {
                let message = serde_json::from_slice::<Value>(data).ok();
                found.extend(message.as_ref().and_then(Incoming::request_in));
            }
        }
        Flow::Continue
    });
    found
}

/// Aborts the task when dropped (a replaced or closed session stops listening).
pub(crate) struct AbortOnDrop(pub(crate) tokio::task::JoinHandle<()>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}
