//! How an exchange ended, read from what Envoy says about the stream (its response code details
//! and response flags, the words of `%RESPONSE_CODE_DETAILS%` and `%RESPONSE_FLAGS%`): which
//! interruption the core is told about, and whether the client hung up. Pure functions, so the
//! mapping is tested without an Envoy.

use mcp_triage_ffi::{MCPT_INTERRUPT_CONNECTION_LOST, MCPT_INTERRUPT_TIMED_OUT};

/// Envoy answered itself because the upstream sent no response head (a local reply): what the
/// core is told (`mcpt_verdict_no_response`), and whether the client's stream should be reset
/// rather than given Envoy's 503 (the upstream closed after the request, as the proxy does).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NoHead {
    /// Envoy's status for its own answer (kept in the record unless the client's stream is reset).
    pub code: u16,
    pub kind: i32,
    pub reason: String,
    pub reset_client: bool,
}

/// The no-head case of a local reply with `code` and `details`, or `None` when the local reply
/// is not about the upstream (then it is classified as the response the client gets).
pub fn no_head(code: u32, details: &str) -> Option<NoHead> {
    // the request had ended (it was parsed), so a stream idle timeout before the head is the
    // upstream's silence, as the route's response timeout is
    let timeout = details.contains("timeout");
    let upstream_silent = details.starts_with("upstream")
        || details.starts_with("stream_idle_timeout")
        || details.contains("max_duration");
    if timeout && upstream_silent {
        return Some(NoHead {
            code: code as u16,
            kind: MCPT_INTERRUPT_TIMED_OUT,
            reason: format!("the upstream sent no response head within the route's timeout (Envoy {code}: {details})"),
            reset_client: false,
        });
    }
    if details.contains("connection_failure") || details.starts_with("no_healthy_upstream") {
        return Some(NoHead {
            code: code as u16,
            kind: MCPT_INTERRUPT_CONNECTION_LOST,
            reason: format!("Envoy could not connect to the upstream (Envoy {code}: {details})"),
            reset_client: false,
        });
    }
    if details.starts_with("upstream_reset_before_response_started") {
        return Some(NoHead {
            code: code as u16,
            kind: MCPT_INTERRUPT_CONNECTION_LOST,
            reason: "the upstream closed the connection before a response head".into(),
            reset_client: true,
        });
    }
    None
}

/// Whether the client hung up (Envoy's `DC` flag, downstream connection termination, or a
/// `downstream_*` detail) rather than the upstream or a timeout ending the stream.
pub fn client_hung_up(details: &str, flags: &str) -> bool {
    flags.split(',').any(|f| f == "DC") || details.starts_with("downstream")
}

/// The interruption of a response body that did not end: `TIMED_OUT` when Envoy says a timeout
/// ended it or it was silent for `read_timeout_ms` at least, else a lost connection.
pub fn interruption(details: &str, flags: &str, silent_ms: u64, read_timeout_ms: u64) -> i32 {
    let timeout_flag = flags
        .split(',')
        .any(|f| f == "UT" || f == "SI" || f == "DT");
    if details.contains("timeout") || timeout_flag || silent_ms >= read_timeout_ms {
        MCPT_INTERRUPT_TIMED_OUT
    } else {
        MCPT_INTERRUPT_CONNECTION_LOST
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn local_replies_about_the_upstream_are_no_head_cases() {
        let closed = no_head(
            503,
            "upstream_reset_before_response_started{connection_termination}",
        )
        .unwrap();
        assert_eq!(closed.kind, MCPT_INTERRUPT_CONNECTION_LOST);
        assert!(closed.reset_client);
        assert_eq!(
            closed.reason,
            "the upstream closed the connection before a response head"
        );
        let refused = no_head(503, "upstream_reset_before_response_started{remote_connection_failure,delayed_connect_error:_Connection_refused}").unwrap();
        assert_eq!(refused.kind, MCPT_INTERRUPT_CONNECTION_LOST);
        assert!(!refused.reset_client);
        assert!(
            refused.reason.starts_with("Envoy could not connect"),
            "{}",
            refused.reason
        );
        let slow = no_head(504, "upstream_response_timeout").unwrap();
        assert_eq!(slow.kind, MCPT_INTERRUPT_TIMED_OUT);
        assert!(!slow.reset_client);
        // the route's idle_timeout (nginx's proxy_read_timeout) before any response head
        let idle = no_head(504, "stream_idle_timeout").unwrap();
        assert_eq!(idle.kind, MCPT_INTERRUPT_TIMED_OUT);
        assert!(no_head(503, "no_healthy_upstream").is_some());
        // Envoy's own answers that are not about the upstream are the response
        assert_eq!(no_head(404, "route_not_found"), None);
        assert_eq!(no_head(413, "request_payload_too_large"), None);
    }

    #[test]
    fn who_ended_the_stream() {
        assert!(client_hung_up("downstream_remote_disconnect", ""));
        assert!(client_hung_up("via_upstream", "DC"));
        assert!(!client_hung_up(
            "upstream_reset_after_response_started{connection_termination}",
            "UC"
        ));
        assert_eq!(
            interruption(
                "upstream_reset_after_response_started{remote_reset}",
                "UR",
                10,
                60_000
            ),
            MCPT_INTERRUPT_CONNECTION_LOST
        );
        assert_eq!(
            interruption("stream_idle_timeout", "SI", 10, 60_000),
            MCPT_INTERRUPT_TIMED_OUT
        );
        assert_eq!(
            interruption("via_upstream", "", 60_000, 60_000),
            MCPT_INTERRUPT_TIMED_OUT
        );
        assert_eq!(
            interruption("via_upstream", "", 59_999, 60_000),
            MCPT_INTERRUPT_CONNECTION_LOST
        );
    }
}
