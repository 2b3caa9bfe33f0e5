//! Every exit status of `mcp-triage`, named once (hurl's pattern): each command returns one of
//! these, so a number means the same in every command and in every page of `docs/commands/`.
//! `wrap` is the one exception: it exits with the wrapped server's own status when nothing of
//! its own went wrong, as a wrapper must.

use std::process::ExitCode;

use mcp_triage_core::{CallRecord, Layer, Outcome};

/// An exit status and what it means.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum Exit {
    /// The command did what was asked; for `call`, the tool succeeded.
    Success = 0,
    /// The command ran, and what it reports failed or was lost: records or captured exchanges
    /// not written (proxy, wrap), bad lines in a batch (classify), rows, cases or checks that
    /// did not pass (demo, judge, report, conformance-client).
    Failed = 1,
    /// Bad usage, or input the command cannot start with (unreadable files, a server command
    /// that cannot be started).
    Usage = 2,
    /// `call`, `list`, `probe`: the server could not be reached or set up (`initialize` or
    /// `tools/list` failed); `call`: the call failed on the transport layer.
    Transport = 3,
    /// `call`: the call failed on the protocol layer; `probe`: it found problems.
    Protocol = 4,
    /// `call`: the server needs input that was not given.
    InputUnanswered = 5,
    /// `call`: the tool ran and reported an error.
    ToolError = 6,
    /// `call`: the arguments do not match the tool's `inputSchema`; nothing was sent.
    InvalidArguments = 7,
    /// `call`: interrupted by Ctrl-C (128 + SIGINT, the shell's convention); an open task
    /// was cancelled first and the record says so (`TASK_CANCELLED`).
    Interrupted = 130,
}

impl From<Exit> for ExitCode {
    fn from(e: Exit) -> ExitCode {
        ExitCode::from(e as u8)
    }
}

/// The exit status of `call` for its record: by outcome, then by layer.
pub fn of_call(r: &CallRecord) -> Exit {
    match r.outcome {
        Outcome::ToolSuccess => Exit::Success,
        Outcome::ToolError => Exit::ToolError,
        _ => match r.layer {
            Layer::Transport => Exit::Transport,
            Layer::Protocol => Exit::Protocol,
            Layer::Interaction => Exit::InputUnanswered,
            Layer::Application => Exit::ToolError,
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn call_exit_statuses_follow_outcome_then_layer() {
        let mut r = CallRecord::new("c", "stdio", "tools/call");
        assert_eq!(of_call(&r), Exit::Transport);
        for (outcome, exit) in [
            (Outcome::ToolError, Exit::ToolError),
            (Outcome::InputRequired, Exit::InputUnanswered),
            (Outcome::InvalidEnvelope, Exit::Protocol),
            (Outcome::ToolSuccess, Exit::Success),
            (Outcome::StreamIncomplete, Exit::Transport),
        ] {
            r.outcome = outcome;
            r.layer = outcome.layer();
            assert_eq!(of_call(&r), exit, "{outcome:?}");
        }
    }

    /// The numbers are a public contract (scripts test them): pinned here.
    #[test]
    fn the_numbers_do_not_move() {
        let all = [
            Exit::Success,
            Exit::Failed,
            Exit::Usage,
            Exit::Transport,
            Exit::Protocol,
            Exit::InputUnanswered,
            Exit::ToolError,
            Exit::InvalidArguments,
            Exit::Interrupted,
        ];
        assert_eq!(all.map(|e| e as u8), [0, 1, 2, 3, 4, 5, 6, 7, 130]);
    }
}
