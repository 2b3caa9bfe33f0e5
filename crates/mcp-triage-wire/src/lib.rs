//! The small formats every mcp-triage crate that reads or writes a file or a URL shares, each
//! implemented once.
//!
//! Place in the flow: below the client, the proxy, the kitchen and the binary, beside the core
//! (`mcp-triage-core` decides verdicts; this crate only spells things). No I/O, no classifier
//! rules. Why a crate of its own: the same arguments digest, timestamp and percent-coding were
//! written three times (the client, the proxy and the kitchen), one of them relying on
//! serde_json's key order, so a feature switched on by any dependency could have made a
//! proxy record's `argumentsHash` differ from the kitchen journal's for the same call, and
//! nothing would have said so.
//!
//! - [`capture`]: the capture line (`proxy --capture`): [`capture::CaptureLine`], the proxy's
//!   writer, [`capture::LineRead`], the kitchen's reader, and [`capture::BodyEnd`], the `end`
//!   words the core's exchange-file reader reads too.
//! - [`canonical`]: canonical JSON text and [`canonical::ArgumentsDigest`], the `argumentsHash`
//!   of records, captures and the kitchen's journal.
//! - [`time`]: RFC 3339 UTC timestamps with milliseconds, the `time` of records and journals.
//! - [`percent`]: percent-encoding and form decoding for query strings.
//! - [`meta`]: the `_meta` member names the client writes and the kitchen and the proxy read.
//! - [`redact`]: the query parameters whose values never reach a record, and their redaction.

#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod canonical;
pub mod capture;
pub mod meta;
pub mod percent;
pub mod redact;
pub mod time;
