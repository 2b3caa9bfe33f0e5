//! Progress keeps a call alive: a `tools/call` is sent with a `progressToken` (its request id),
//! and each `notifications/progress` for that token moves the attempt's deadline to a full
//! `--timeout` from then, up to `--progress-max-wait` after the attempt began.
//!
//! Why: a long tool that reports progress is working, and giving up at a fixed timeout while
//! progress flows abandons a call that would have ended (opencode #28186, the same bug in
//! several hosts). Why a cap: a server that reports progress forever must not hold the client
//! forever. Streamable HTTP and stdio read progress here; the 2024-11-05 HTTP+SSE transport
//! keeps its fixed deadline.

use std::time::Duration;

use serde_json::Value;
use tokio::time::Instant;

/// What moves one attempt's deadline: its progress token, the window each progress
/// notification opens, and the latest deadline progress may reach.
#[derive(Debug, Clone)]
pub(crate) struct Keepalive {
    token: Value,
    window: Duration,
    until: Instant,
}

impl Keepalive {
    /// For a message sent with `_meta.progressToken` (None: it asked for no progress, or the
    /// cap is zero), started at `started` with attempt timeout `window`.
    pub(crate) fn for_message(
        msg: &Value,
        window: Duration,
        max_wait: Duration,
        started: Instant,
    ) -> Option<Keepalive> {
        let token = msg["params"]["_meta"].get("progressToken")?.clone();
        (!max_wait.is_zero()).then(|| Keepalive {
            token,
            window,
            until: started + max_wait,
        })
    }

    /// Whether `msg` is a `notifications/progress` for this attempt's token.
    pub(crate) fn is_progress(&self, msg: &Value) -> bool {
        msg["method"] == "notifications/progress"
            && msg["params"].get("progressToken") == Some(&self.token)
    }

    /// The deadline after a progress notification at `now`: a full window from now, never
    /// past the cap and never earlier than it already was.
    pub(crate) fn extended(&self, deadline: Instant, now: Instant) -> Instant {
        deadline.max((now + self.window).min(self.until))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn progress_for_the_token_moves_the_deadline_up_to_the_cap() {
        let t0 = Instant::now();
        let msg = json!({ "params": { "_meta": { "progressToken": 7 } } });
        let k = Keepalive::for_message(&msg, Duration::from_secs(2), Duration::from_secs(5), t0)
            .expect("a token");
        let ours = json!({ "method": "notifications/progress",
            "params": { "progressToken": 7, "progress": 1 } });
        let other = json!({ "method": "notifications/progress",
            "params": { "progressToken": "7", "progress": 1 } });
        assert!(k.is_progress(&ours));
        assert!(
            !k.is_progress(&other),
            "another token (a string is not the number)"
        );
        assert!(!k.is_progress(&json!({ "method": "notifications/message", "params": {} })));
        let d0 = t0 + Duration::from_secs(2);
        assert_eq!(
            k.extended(d0, t0 + Duration::from_secs(1)),
            t0 + Duration::from_secs(3)
        );
        assert_eq!(
            k.extended(d0, t0 + Duration::from_secs(4)),
            t0 + Duration::from_secs(5)
        );
        let late = t0 + Duration::from_secs(9);
        assert_eq!(k.extended(late, t0), late, "never earlier");
        assert!(
            Keepalive::for_message(&json!({}), Duration::ZERO, Duration::from_secs(5), t0)
                .is_none()
        );
        assert!(Keepalive::for_message(&msg, Duration::from_secs(2), Duration::ZERO, t0).is_none());
    }
}
