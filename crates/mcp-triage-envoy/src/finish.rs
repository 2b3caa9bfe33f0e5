//! The end of an exchange (`on_http_filter_stream_complete`, which Envoy calls for every stream,
//! reset or not, before the access log is written): the verdict, the dynamic metadata under
//! `mcp_triage`, the JSON line and the metrics.

use std::ffi::CString;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::OnceLock;
use std::time::{Instant, UNIX_EPOCH};

use mcp_triage_ffi as ffi;

use crate::abi::{self, EnvoyBuffer, FilterEnvoyPtr, ModuleBuffer};
use crate::ends;
use crate::filter::{abi_error, Filter};

/// The first size of a worker's line buffer (a line is about 600-900 bytes; longer ones grow it).
const RECORD_CAP: usize = 2048;

thread_local! {
    static RECORD_BUF: std::cell::RefCell<Vec<u8>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// The dynamic metadata namespace (`%DYNAMIC_METADATA(mcp_triage:outcome)%` and the rest).
pub const NAMESPACE: &[u8] = b"mcp_triage";

/// A verdict owned by this function's caller, freed on drop.
struct Verdict(*mut ffi::McptVerdict);

impl Drop for Verdict {
    fn drop(&mut self) {
        // SAFETY: NULL or a verdict from the library, freed once
        unsafe { ffi::mcpt_verdict_free(self.0) }
    }
}

impl Filter {
    /// Everything Envoy logs about a classified exchange; nothing for other streams.
    pub fn complete(&mut self, envoy: FilterEnvoyPtr) {
        if self.idle || self.req.is_null() {
            return;
        }
        // how the stream ended matters only when the body did not end (Envoy formats its flags
        // into a new string for each ask, so a finished exchange does not ask)
        let (details, flags) = if self.eof && !self.classifier.is_null() {
            (String::new(), String::new())
        } else {
            (
                attribute(envoy, abi::ATTRIBUTE_RESPONSE_CODE_DETAILS),
                attribute(envoy, abi::ATTRIBUTE_RESPONSE_FLAGS),
            )
        };
        let verdict = match self.verdict(&details, &flags) {
            Ok(v) => v,
            Err(rc) => return abi_error("verdict", rc),
        };
        let duration_ms = self.started_at.elapsed().as_secs_f64() * 1000.0;
        let cancelled =
            !self.eof && self.no_head.is_none() && ends::client_hung_up(&details, &flags);
        // the line is written into a buffer of the worker thread's, kept from one exchange to the
        // next (Envoy copies the line into the metadata)
        RECORD_BUF.with_borrow_mut(|buf| {
            let record = self.record(&verdict, duration_ms, cancelled, buf);
            self.metadata(envoy, &verdict, record);
        });
        self.observe(envoy, &verdict, duration_ms);
        // the classifier and the request are freed with the filter (`Drop`)
    }

    fn verdict(&mut self, details: &str, flags: &str) -> Result<Verdict, i32> {
        let mut v: *mut ffi::McptVerdict = std::ptr::null_mut();
        let rc = if self.classifier.is_null() {
            let (kind, reason) = match &self.no_head {
                Some(n) => (n.kind, n.reason.clone()),
                // the stream ended before any response head: the client closed first
                None => (
                    ffi::MCPT_INTERRUPT_CONNECTION_LOST,
                    "the client closed the connection before a response head".to_string(),
                ),
            };
            let reason = CString::new(reason).unwrap_or_default();
            // SAFETY: `reason` is NUL-terminated; `v` is writable
            unsafe { ffi::mcpt_verdict_no_response(kind, reason.as_ptr(), &mut v) }
        } else if self.eof {
            // SAFETY: the classifier is live; `v` is writable
            unsafe { ffi::mcpt_classifier_finish(self.classifier, &mut v) }
        } else {
            // the body did not end: the upstream's reset, a timeout or the client's abort
            let silent = Instant::now().duration_since(self.last_chunk).as_millis() as u64;
            let kind =
                ends::interruption(details, flags, silent, self.shared.options.read_timeout_ms);
            let reason = CString::new(format!(
                "response body ended before its end (Envoy: {details})"
            ))
            .unwrap_or_default();
            // SAFETY: as above; `reason` is NUL-terminated
            unsafe {
                ffi::mcpt_classifier_interrupted(self.classifier, kind, reason.as_ptr(), &mut v)
            }
        };
        if rc == ffi::MCPT_OK {
            Ok(Verdict(v))
        } else {
            Err(rc)
        }
    }

    /// The JSON line (`mcpt_record_write`: the proxy record's field names, query secrets
    /// redacted).
    fn record<'b>(
        &self,
        v: &Verdict,
        duration_ms: f64,
        cancelled: bool,
        buf: &'b mut Vec<u8>,
    ) -> Option<&'b [u8]> {
        let own_id;
        let rid: &[u8] = match &self.request_id {
            Some(id) => id,
            None => {
                own_id = record_id();
                &own_id
            }
        };
        let start = self
            .started
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_secs_f64())
            .unwrap_or(0.0);
        let f = ffi::McptRecordFields {
            record_id: rid.as_ptr(),
            record_id_len: rid.len(),
            start_unix_s: start,
            duration_ms: (duration_ms * 1000.0).round() / 1000.0,
            path: self.path.as_ptr(),
            path_len: self.path.len(),
            session_id: self
                .session
                .as_ref()
                .map_or(std::ptr::null(), |s| s.as_ptr()),
            session_id_len: self.session.as_ref().map_or(0, |s| s.len()),
            protocol_version: self
                .protocol
                .as_ref()
                .map_or(std::ptr::null(), |s| s.as_ptr()),
            protocol_version_len: self.protocol.as_ref().map_or(0, |s| s.len()),
            http_status: self.client_status(),
            request_bytes: self.request_bytes,
            response_bytes: self.response_bytes,
            cancelled: cancelled as i32,
        };
        if buf.len() < RECORD_CAP {
            buf.resize(RECORD_CAP, 0);
        }
        let mut len = 0usize;
        // SAFETY: request and verdict are live; `buf` has `cap` writable bytes
        let mut rc = unsafe {
            ffi::mcpt_record_write(self.req, v.0, &f, buf.as_mut_ptr(), buf.len(), &mut len)
        };
        if rc == ffi::MCPT_ERR_INVALID_ARGUMENT && len > buf.len() {
            buf.resize(len, 0);
            // SAFETY: as above, with the size the library asked for
            rc = unsafe {
                ffi::mcpt_record_write(self.req, v.0, &f, buf.as_mut_ptr(), buf.len(), &mut len)
            };
        }
        if rc != ffi::MCPT_OK {
            abi_error("record_write", rc);
            return None;
        }
        Some(&buf[..len])
    }

    /// `mcp_triage` dynamic metadata: `layer`, `outcome`, `method`, `tool`, `jsonrpc_code`,
    /// `retry_after_ms` and `record` (the JSON line), for the access log's format.
    fn metadata(&self, envoy: FilterEnvoyPtr, v: &Verdict, record: Option<&[u8]>) {
        let Some(api) = abi::api() else { return };
        let ns = ModuleBuffer::of(NAMESPACE);
        let put_number = |key: &[u8], value: f64| {
            // SAFETY: every buffer is read during the call
            unsafe { (api.set_metadata_number)(envoy, ns, ModuleBuffer::of(key), value) }
        };
        // SAFETY: the verdict is live; the names are static NUL-terminated strings
        let (layer, outcome) = unsafe {
            (
                std::ffi::CStr::from_ptr(ffi::mcpt_layer_name(ffi::mcpt_verdict_layer(v.0))),
                std::ffi::CStr::from_ptr(ffi::mcpt_outcome_name(ffi::mcpt_verdict_outcome(v.0))),
            )
        };
        let entry = |key: &'static [u8], value: &[u8]| abi::KeyValue {
            key: ModuleBuffer::of(key),
            value: ModuleBuffer::of(value),
        };
        let mut entries = [entry(b"layer", layer.to_bytes()); 5];
        let mut n = 1;
        let mut push = |e: abi::KeyValue| {
            entries[n] = e;
            n += 1;
        };
        push(entry(b"outcome", outcome.to_bytes()));
        push(entry(b"method", b"tools/call"));
        if let Some(tool) = self.tool() {
            push(entry(b"tool", tool));
        }
        if let Some(line) = record {
            push(entry(b"record", line));
        }
        // the string members in one call: Envoy merges each call into the stream's metadata
        // struct, about 2,500 instructions a call
        // SAFETY: the entries' buffers are read during the call
        unsafe { (api.set_metadata_string_batch)(envoy, ns, entries.as_ptr(), n) };
        let mut code = 0i64;
        // SAFETY: the verdict is live; `code` is writable
        if unsafe { ffi::mcpt_verdict_jsonrpc_code(v.0, &mut code) } == 1 {
            put_number(b"jsonrpc_code", code as f64);
        }
        let mut ms = 0u64;
        // SAFETY: as above
        if unsafe { ffi::mcpt_verdict_retry_after_ms(v.0, &mut ms) } == 1 {
            put_number(b"retry_after_ms", ms as f64);
        }
    }

    /// `mcp_triage_calls_total{server,tool,layer,outcome}` and the duration histogram, in
    /// Envoy's own stats (served by the admin's `/stats/prometheus`).
    fn observe(&self, envoy: FilterEnvoyPtr, v: &Verdict, duration_ms: f64) {
        let (Some(api), Some(ids)) = (abi::api(), self.shared.metrics) else {
            return;
        };
        let tool = self.shared.tool_label(self.tool());
        // SAFETY: the verdict is live; the names are static
        let (layer, outcome) = unsafe {
            (
                std::ffi::CStr::from_ptr(ffi::mcpt_layer_name(ffi::mcpt_verdict_layer(v.0)))
                    .to_bytes(),
                std::ffi::CStr::from_ptr(ffi::mcpt_outcome_name(ffi::mcpt_verdict_outcome(v.0)))
                    .to_bytes(),
            )
        };
        let server = self.shared.options.server.as_bytes();
        let labels = [
            ModuleBuffer::of(server),
            ModuleBuffer::of(tool),
            ModuleBuffer::of(layer),
            ModuleBuffer::of(outcome),
        ];
        // SAFETY: the label buffers are read during the calls; the ids are this config's
        unsafe {
            (api.increment_counter)(envoy, ids.calls, labels.as_ptr(), 4, 1);
            (api.record_histogram)(
                envoy,
                ids.duration,
                labels.as_ptr(),
                2,
                duration_ms.round() as u64,
            );
        }
    }

    /// The status the client got: the response's, or Envoy's own answer to a lost upstream (as
    /// nginx's 502/504 in the nginx module's line), none when the client's stream was reset.
    fn client_status(&self) -> u16 {
        if !self.classifier.is_null() {
            return self.status;
        }
        match &self.no_head {
            Some(n) if !(n.reset_client && self.shared.options.close_on_upstream_loss) => n.code,
            _ => 0,
        }
    }

    fn tool(&self) -> Option<&[u8]> {
        let mut len = 0usize;
        // SAFETY: the request is live; the bytes are the request's, valid while it is
        let p = unsafe { ffi::mcpt_request_tool(self.req, &mut len) };
        if p.is_null() {
            None
        } else {
            // SAFETY: `len` bytes at `p`, owned by the request
            Some(unsafe { std::slice::from_raw_parts(p, len) })
        }
    }
}

/// A string attribute of the stream (Envoy's response code details, response flags), "" when
/// Envoy has none.
fn attribute(envoy: FilterEnvoyPtr, id: u32) -> String {
    let Some(api) = abi::api() else {
        return String::new();
    };
    let mut out = EnvoyBuffer::EMPTY;
    // SAFETY: `out` is writable; Envoy's bytes are valid during this hook
    if unsafe { (api.get_attribute_string)(envoy, id, &mut out) } {
        // SAFETY: Envoy's buffer
        String::from_utf8_lossy(unsafe { out.bytes() }).into_owned()
    } else {
        String::new()
    }
}

/// Record ids unique per Envoy when the request has no `x-request-id`: the module's load time
/// and pid, and a counter (as the nginx module's).
fn record_id() -> Vec<u8> {
    static PREFIX: OnceLock<String> = OnceLock::new();
    static COUNT: AtomicU64 = AtomicU64::new(0);
    let prefix = PREFIX.get_or_init(|| {
        let ms = std::time::SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_millis())
            .unwrap_or(0);
        format!("{ms:x}{:x}", std::process::id())
    });
    format!("{prefix}{:08x}", COUNT.fetch_add(1, Ordering::Relaxed) + 1).into_bytes()
}
