//! The knobs of a replay: the limits a capture file is loaded within, the speed it is
//! served at, and the parsers of their command-line flags.
//!
//! They come first in the flow because both binaries (`kitchen --replay`, `judge --replay`)
//! take them from their flags before a file is read; the limits are checked at load so that
//! an oversized or malformed line is named there, not met as a misbehaving replay later.

/// A replay flag's value that does not parse (clap prints it after the flag's name).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ReplayFlagError {
    /// `--replay-speed` is not a positive, finite number.
    #[error("{given:?} is not a positive number")]
    Speed {
        /// The value as given.
        given: String,
    },
    /// `--replay-max-delay` is not a non-negative duration.
    #[error("{given:?} is not a duration (e.g. 60s, 1500ms, 2m, or seconds)")]
    MaxDelay {
        /// The value as given.
        given: String,
    },
}

/// Parses `--replay-speed` (the kitchen's and the judge's): a positive, finite number.
pub fn parse_speed(s: &str) -> Result<f64, ReplayFlagError> {
    match s.parse::<f64>() {
        Ok(v) if v.is_finite() && v > 0.0 => Ok(v),
        _ => Err(ReplayFlagError::Speed {
            given: s.to_string(),
        }),
    }
}

/// Default bound on a capture file read for replay (the capture's own default file size).
pub const DEFAULT_MAX_CAPTURE_BYTES: u64 = 256 * 1024 * 1024;

/// Default bound on one captured delay (`headMs`, a chunk's `atMs`), in milliseconds: a line
/// asking for more is refused at load, so that a capture cannot hold a connection for a day.
pub const DEFAULT_MAX_DELAY_MS: f64 = 60_000.0;

/// Default bound on the exchanges of one capture file (`--replay-max-lines`).
pub const DEFAULT_MAX_LINES: usize = 1_000_000;

/// Default bound on the `chunks` entries of one line (`--replay-max-chunks`): the capture's
/// own cap (it folds later frames into the last entry), so any capture it wrote loads.
pub const DEFAULT_MAX_CHUNKS: usize = 65_536;

/// Default bound on one line's decoded response body (`--replay-max-body`).
pub const DEFAULT_MAX_BODY_BYTES: usize = 64 * 1024 * 1024;

/// Parses `--replay-max-delay`: a duration such as `60s`, `1500ms`, `2m` or plain seconds.
pub fn parse_max_delay(s: &str) -> Result<f64, ReplayFlagError> {
    let t = s.trim();
    let (num, scale) = if let Some(n) = t.strip_suffix("ms") {
        (n, 1.0)
    } else if let Some(n) = t.strip_suffix('s') {
        (n, 1000.0)
    } else if let Some(n) = t.strip_suffix('m') {
        (n, 60_000.0)
    } else {
        (t, 1000.0)
    };
    match num.trim().parse::<f64>() {
        Ok(v) if v.is_finite() && v >= 0.0 => Ok(v * scale),
        _ => Err(ReplayFlagError::MaxDelay {
            given: s.to_string(),
        }),
    }
}

/// What a capture file may hold, checked at load so that a bad line is named there and not
/// met as a misbehaving replay later.
#[derive(Clone, Copy, Debug)]
pub struct CaptureLimits {
    /// The largest file read, in bytes (`--replay-max-bytes`).
    pub max_bytes: u64,
    /// The largest captured delay, `headMs` or a chunk's `atMs`, in milliseconds
    /// (`--replay-max-delay`).
    pub max_delay_ms: f64,
    /// The most exchanges (non-blank lines) in the file (`--replay-max-lines`).
    pub max_lines: usize,
    /// The most `chunks` entries on one line (`--replay-max-chunks`): each is kept and turned
    /// into a piece of the body per request, so a line of millions would cost that per reader.
    pub max_chunks: usize,
    /// The largest response body of one line, decoded, in bytes (`--replay-max-body`).
    pub max_body_bytes: usize,
    /// Keep what only readers of a capture use: each line's text
    /// ([`super::CapturedExchange::text`], which the judge classifies) and the request's JSON
    /// ([`super::CapturedExchange::request`], whose arguments the judge sends). A server that
    /// only replays (`kitchen --replay`) sets it false: then `text` is empty and `request`
    /// `None`, and a capture takes about half the memory (the text is a second copy of the
    /// file, and a request's JSON tree several times its text). Default true.
    pub keep_for_readers: bool,
}

impl Default for CaptureLimits {
    fn default() -> Self {
        CaptureLimits {
            max_bytes: DEFAULT_MAX_CAPTURE_BYTES,
            max_delay_ms: DEFAULT_MAX_DELAY_MS,
            max_lines: DEFAULT_MAX_LINES,
            max_chunks: DEFAULT_MAX_CHUNKS,
            max_body_bytes: DEFAULT_MAX_BODY_BYTES,
            keep_for_readers: true,
        }
    }
}

/// How a replay runs.
#[derive(Clone, Debug)]
pub struct ReplayOptions {
    /// Divides every captured delay (`headMs`, chunk `atMs`): 2 replays twice as fast, 0.5 at
    /// half speed. Must be positive and finite.
    pub speed: f64,
}

impl Default for ReplayOptions {
    fn default() -> Self {
        ReplayOptions { speed: 1.0 }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bad_flags_say_which_and_what_was_given() {
        let e = parse_speed("0").unwrap_err();
        assert!(matches!(&e, ReplayFlagError::Speed { given } if given == "0"));
        assert_eq!(e.to_string(), "\"0\" is not a positive number");
        let e = parse_max_delay("soon").unwrap_err();
        assert!(matches!(&e, ReplayFlagError::MaxDelay { given } if given == "soon"));
        assert_eq!(
            e.to_string(),
            "\"soon\" is not a duration (e.g. 60s, 1500ms, 2m, or seconds)"
        );
        assert_eq!(parse_max_delay("1500ms").unwrap(), 1500.0);
        assert_eq!(parse_speed("2").unwrap(), 2.0);
    }
}
