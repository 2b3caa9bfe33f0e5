//! The capture limits of `--replay`, shared by `kitchen` and `judge` (one definition, so the
//! two commands take the same flags with the same defaults: `judge` once accepted only
//! `--replay-max-bytes` while its errors named `--replay-max-delay`).

use clap::Args;
use mcp_triage_kitchen::replay::{
    parse_max_delay, CaptureLimits, DEFAULT_MAX_BODY_BYTES, DEFAULT_MAX_CAPTURE_BYTES,
    DEFAULT_MAX_CHUNKS, DEFAULT_MAX_LINES,
};

/// `--replay-max-*`: what a capture file may hold.
#[derive(Args, Debug, Clone)]
pub struct ReplayLimitArgs {
    /// With --replay: the largest capture file read, in bytes.
    #[arg(long, value_name = "BYTES", default_value_t = DEFAULT_MAX_CAPTURE_BYTES, requires = "replay")]
    pub replay_max_bytes: u64,

    /// With --replay: the most exchanges (lines) in the capture file.
    #[arg(long, value_name = "N", default_value_t = DEFAULT_MAX_LINES, requires = "replay")]
    pub replay_max_lines: usize,

    /// With --replay: the most `chunks` entries on one line.
    #[arg(long, value_name = "N", default_value_t = DEFAULT_MAX_CHUNKS, requires = "replay")]
    pub replay_max_chunks: usize,

    /// With --replay: the largest response body of one line, in bytes.
    #[arg(long, value_name = "BYTES", default_value_t = DEFAULT_MAX_BODY_BYTES, requires = "replay")]
    pub replay_max_body: usize,

    /// With --replay: the longest captured delay (headMs, a chunk's atMs) a line may ask for,
    /// e.g. 60s, 1500ms, 2m.
    #[arg(long, value_name = "DURATION", default_value = "60s", requires = "replay", value_parser = parse_max_delay)]
    pub replay_max_delay: f64,
}

impl ReplayLimitArgs {
    /// The limits; `keep_for_readers` says whether the line texts and request trees are kept
    /// (the judge reads them, a kitchen that only serves does not).
    pub fn limits(&self, keep_for_readers: bool) -> CaptureLimits {
        CaptureLimits {
            max_bytes: self.replay_max_bytes,
            max_lines: self.replay_max_lines,
            max_chunks: self.replay_max_chunks,
            max_body_bytes: self.replay_max_body,
            max_delay_ms: self.replay_max_delay,
            keep_for_readers,
        }
    }
}
