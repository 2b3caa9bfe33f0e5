//! `--capture` and its limits, shared by `mcp-triage proxy` and `mcp-triage wrap` (the file
//! format is docs/capture-format.md; the writer is `mcp_triage_proxy::capture`).

use std::path::PathBuf;
use std::sync::Arc;

use clap::Args;
use mcp_triage_proxy::capture::{
    self, Capture, CaptureError, CaptureOptions, CaptureWriter, DEFAULT_KEEP, DEFAULT_MAX_BODY,
    DEFAULT_MAX_BYTES,
};
use mcp_triage_proxy::WriterStats;

#[derive(Args)]
#[command(next_help_heading = "Capture")]
pub struct CaptureArgs {
    /// Also write every exchange to this file, one JSON line each: an exchange-file line that
    /// `classify --batch` reads and `kitchen --replay` serves, with the request, the response
    /// head's delay and the body's chunk timing (docs/capture-format.md). Left out: the headers
    /// Authorization, Proxy-Authorization, Cookie, Set-Cookie, X-Api-Key, Api-Key, X-Auth-Token,
    /// X-Access-Token, X-Amz-Security-Token, X-Goog-Api-Key, X-Csrf-Token, Private-Token,
    /// Ocp-Apim-Subscription-Key, X-Functions-Key and --redact-header names; the values of the
    /// query parameters access_token, refresh_token, id_token, token, code, code_verifier,
    /// client_secret, key, api_key, apikey, api-key, password, passwd, secret, signature, sig,
    /// auth, X-Amz-Signature, X-Amz-Security-Token, X-Goog-Signature and --redact-query-param
    /// names; OAuth tokens, codes and secrets in bodies; bodies of requests that are not
    /// JSON-RPC. KEPT: everything else, including tool arguments (replay matches on them; see
    /// --capture-hash-arguments) and tool results. Off by default.
    #[arg(long, value_name = "FILE.jsonl")]
    capture: Option<PathBuf>,
    /// Bytes per capture file; past it the file becomes FILE.1 (older ones FILE.2, …) and a new
    /// one begins.
    #[arg(long, value_name = "BYTES", default_value_t = DEFAULT_MAX_BYTES, requires = "capture",
          value_parser = clap::value_parser!(u64).range(1..))]
    capture_max_bytes: u64,
    /// Rotated capture files kept (0: none).
    #[arg(long, value_name = "N", default_value_t = DEFAULT_KEEP, requires = "capture")]
    capture_keep: u32,
    /// Bytes of each request and response body kept in the capture (bodyTruncated past it;
    /// chunks still cover the whole body).
    #[arg(long, value_name = "BYTES", default_value_t = DEFAULT_MAX_BODY, requires = "capture")]
    capture_max_body: u64,
    /// Replace the value of each tool argument in captured tools/call requests by
    /// "sha256:<hex>" of its canonical JSON, so arguments never reach the file; `kitchen
    /// --replay` then answers such a line to any call of its tool, whatever the arguments.
    #[arg(long, requires = "capture")]
    capture_hash_arguments: bool,
}

impl CaptureArgs {
    /// Opens the capture file and starts its writer, when --capture is given (the writer's
    /// [`CaptureError`] as it is: its messages already name the flags).
    pub fn start(
        &self,
        redact_headers: &[String],
        redact_query_params: &[String],
    ) -> Result<Option<(Arc<Capture>, CaptureWriter)>, CaptureError> {
        let Some(path) = &self.capture else {
            return Ok(None);
        };
        let mut options = CaptureOptions::new(path);
        options.max_bytes = self.capture_max_bytes;
        options.keep = self.capture_keep;
        options.max_body = self.capture_max_body;
        options.hash_arguments = self.capture_hash_arguments;
        options.redact_headers = redact_headers.to_vec();
        options.redact_query_params = redact_query_params.to_vec();
        capture::start(options).map(Some)
    }
}

/// Says how many capture lines were written; a loss is a failure (exit status 1), as for records.
pub fn report_capture(who: &str, stats: &WriterStats) -> bool {
    if stats.write_errors == 0 {
        eprintln!("{who}: {} exchange(s) captured", stats.records);
        return true;
    }
    eprintln!(
        "{who}: {} exchange(s) captured, {} lost: {} write(s) to the capture file failed",
        stats.records, stats.lost, stats.write_errors
    );
    false
}
