//! `kitchen --replay FILE.jsonl`: serve the exchanges a `proxy --capture` recorded, as a
//! scenario of their own.
//!
//! A failure seen in production can then be met again by any client, and graded by `judge`,
//! without the server that produced it. The rules are fixed in `docs/capture-format.md`
//! (section *Replay*); in short:
//!
//! - Each request has a key: `(method, tool, argumentsHash)` for a JSON-RPC request (`tool`
//!   and `argumentsHash` only for `tools/call`), `(HTTP method, path without query)` otherwise.
//!   The *n*-th request with a key gets the *n*-th captured line with that key (in `seq`
//!   order); past the last one the last is served again, and the journal says so.
//! - A request with no captured line gets the kitchen's own answer for `initialize`,
//!   `notifications/*`, `tools/list` (the tools seen in the capture) and `ping`; anything else a
//!   JSON-RPC `-32601` naming the missing key.
//! - The captured status, headers (hop-by-hop ones dropped, `Content-Length` recomputed) and
//!   body are sent with the response's JSON-RPC `id` rewritten to the new request's id when it
//!   equals the captured `expectId` (a different one, a wrong-id failure, stays). The body goes
//!   out in the captured chunks at their `atMs` offsets (divided by [`ReplayOptions::speed`]),
//!   after `headMs`; an `end` of `upstream_closed` (or `client_cancelled`, or a body cut by the
//!   capture's size limit) closes the connection after the last chunk without the final chunk
//!   of a chunked body, as the upstream did; `timeout` keeps the stream open until the client
//!   gives up; `no_response` with status 502 (the upstream answered nothing) drops the
//!   connection without a response, with 504 or 408 sends that status (the proxy's answer).
//!
//! The line is read with the capture format's one reader (`mcp_triage_wire::capture::LineRead`,
//! the proxy writes `CaptureLine` from the same module), so its member names and `end` words
//! (`BodyEnd`) have one home; the `argumentsHash` of a request is the wire crate's too.
//!
//! Every request is journaled as `/mcp` requests are, as a [`crate::journal::JournalEntry`]
//! (the fields `judge` grades: `httpMethod`, `method`, `id`, `tool`, `era`, `session`, `status`,
//! `retry`, `issued`, headers; `executed` is `null`, no tool runs here), plus `replay`: which
//! captured line was served (`seq`, `nth` of `of`, `pastEnd`), or `unmatched` with the key and
//! what the kitchen answered instead.
//!
//! The parts, in the order a capture and then a request meet them: `options` (load limits,
//! speed and their flags), `capture` (the file; `line` parses each line into an `exchange`,
//! keyed by `key`), `lookup` (the index: which line the *n*-th request with a key gets); per
//! request, `endpoint` (router, Host/Origin and body limits, the journal entry), `answer` (a
//! captured line or the kitchen's own answer), `serve` (status, headers, the timed body) and
//! `rewrite` (the new request's id in the captured body). No part imports this one, so the
//! public paths below are all it adds.

mod answer;
mod capture;
mod endpoint;
mod exchange;
mod key;
mod line;
mod lookup;
mod options;
mod rewrite;
mod serve;

pub use capture::{response_message, Capture, CaptureError};
pub use endpoint::{router, start_replay};
pub use exchange::CapturedExchange;
pub use key::{capture_arguments_hash, rpc_key, ReplayKey};
pub use line::LineError;
pub use lookup::Replay;
pub use options::{
    parse_max_delay, parse_speed, CaptureLimits, ReplayFlagError, ReplayOptions,
    DEFAULT_MAX_BODY_BYTES, DEFAULT_MAX_CAPTURE_BYTES, DEFAULT_MAX_CHUNKS, DEFAULT_MAX_DELAY_MS,
    DEFAULT_MAX_LINES,
};
pub use serve::REPLAY_SCENARIO;
