//! One HTTP stream: the request read once (bounded) for a `tools/call`, the response fed to the
//! core's incremental classifier chunk by chunk as Envoy passes it on (never buffered, never
//! changed), and the exchange's end (see `finish.rs`).

use std::sync::Arc;
use std::time::{Instant, SystemTime, UNIX_EPOCH};

use mcp_triage_ffi as ffi;

use crate::abi::{self, EnvoyBuffer, EnvoyHttpHeader, FilterEnvoyPtr};
use crate::config::Shared;
use crate::ends::NoHead;

/// The response headers the core reads (every line of each): the verdict is the same as with
/// all headers (`ResponseClassifier::new` in mcp-triage-core).
const CLASSIFIED_HEADERS: [&[u8]; 4] = [
    b"content-type",
    b"content-encoding",
    b"retry-after",
    b"www-authenticate",
];

/// Header values kept on the stack before the list spills to the heap.
const STACK_HEADERS: usize = 8;

/// The state of one stream. Raw handles of the C ABI are freed in `Drop`.
pub struct Filter {
    pub shared: Arc<Shared>,
    /// Not a `tools/call` (or too large, or already done): everything passes untouched.
    pub idle: bool,
    pub body: Vec<u8>,
    pub body_too_big: bool,
    pub request_bytes: u64,
    pub req: *mut ffi::McptRequest,
    pub classifier: *mut ffi::McptClassifier,
    pub decided: bool,
    pub eof: bool,
    pub status: u16,
    pub response_bytes: u64,
    pub started: SystemTime,
    pub started_at: Instant,
    pub last_chunk: Instant,
    pub path: Vec<u8>,
    pub session: Option<Vec<u8>>,
    pub protocol: Option<Vec<u8>>,
    pub request_id: Option<Vec<u8>>,
    pub no_head: Option<NoHead>,
    pub local_reply: bool,
}

// SAFETY: the raw handles are owned by this filter alone; Envoy calls one stream's hooks on one
// worker thread at a time.
unsafe impl Send for Filter {}

impl Filter {
    pub fn new(shared: Arc<Shared>) -> Filter {
        let now = Instant::now();
        Filter {
            shared,
            idle: true,
            body: Vec::new(),
            body_too_big: false,
            request_bytes: 0,
            req: std::ptr::null_mut(),
            classifier: std::ptr::null_mut(),
            decided: false,
            eof: false,
            status: 0,
            response_bytes: 0,
            started: SystemTime::now(),
            started_at: now,
            last_chunk: now,
            path: Vec::new(),
            session: None,
            protocol: None,
            request_id: None,
            no_head: None,
            local_reply: false,
        }
    }

    /// The request head: a body follows (else there is nothing to classify); the headers the
    /// record needs are copied (they are Envoy's only until the hook returns).
    pub fn request_headers(&mut self, envoy: FilterEnvoyPtr, end_of_stream: bool) {
        if end_of_stream {
            return;
        }
        self.idle = false;
        self.started = SystemTime::now();
        self.started_at = Instant::now();
        let (mut path, mut session, mut protocol, mut request_id) = (None, None, None, None);
        for_each_header(envoy, abi::HEADER_REQUEST, |name, value| {
            let slot = match name {
                b":path" => &mut path,
                b"mcp-session-id" => &mut session,
                b"mcp-protocol-version" => &mut protocol,
                b"x-request-id" => &mut request_id,
                _ => return,
            };
            // the first line of each counts, as a header lookup would give it
            if slot.is_none() {
                *slot = Some(value.to_vec());
            }
        });
        self.path = path.unwrap_or_default();
        self.session = session;
        self.protocol = protocol;
        self.request_id = request_id;
    }

    /// A piece of the request body: copied while the body stays within `max_body_bytes` (a
    /// larger body passes unclassified); at its end, `mcpt_request_parse` keeps a `tools/call`.
    pub fn request_body(&mut self, envoy: FilterEnvoyPtr, end_of_stream: bool) {
        if self.idle {
            return;
        }
        let max = self.shared.options.max_body_bytes;
        for_each_chunk(envoy, abi::BODY_RECEIVED_REQUEST, |chunk| {
            self.request_bytes += chunk.len() as u64;
            if !self.body_too_big && self.body.len() + chunk.len() <= max {
                self.body.extend_from_slice(chunk);
            } else {
                self.body_too_big = true;
            }
        });
        if self.body_too_big {
            self.body = Vec::new();
        }
        if end_of_stream {
            self.request_end();
        }
    }

    /// The request ended (its last body piece or its trailers).
    pub fn request_end(&mut self) {
        if self.idle || !self.req.is_null() {
            return;
        }
        let body = std::mem::take(&mut self.body);
        if self.body_too_big || body.is_empty() {
            self.idle = true;
            return;
        }
        // SAFETY: `body` is readable for its length; `self.req` is writable.
        let rc = unsafe { ffi::mcpt_request_parse(body.as_ptr(), body.len(), &mut self.req) };
        if rc != 1 {
            self.idle = true;
            self.req = std::ptr::null_mut();
            if rc < 0 {
                abi_error("request_parse", rc);
            }
        }
    }

    /// The response head: a classifier with its status and the headers the core reads, unless
    /// the head is Envoy's own answer to a lost upstream (a local reply, see `ends::no_head`).
    pub fn response_headers(&mut self, envoy: FilterEnvoyPtr, end_of_stream: bool) {
        if self.idle || !self.classifier.is_null() || self.no_head.is_some() {
            return;
        }
        if self.req.is_null() {
            // the response began before the request ended: without the request's id there is
            // nothing to classify against, and the exchange is not logged
            self.idle = true;
            return;
        }
        let empty = || ffi::McptHeader {
            name: std::ptr::null(),
            name_len: 0,
            value: std::ptr::null(),
            value_len: 0,
        };
        let mut stack: [ffi::McptHeader; STACK_HEADERS] = std::array::from_fn(|_| empty());
        let mut heap: Vec<ffi::McptHeader> = Vec::new();
        let (mut n, mut status) = (0usize, 0u16);
        for_each_header(envoy, abi::HEADER_RESPONSE, |name, value| {
            if name == b":status" {
                status = std::str::from_utf8(value)
                    .ok()
                    .and_then(|s| s.parse().ok())
                    .unwrap_or(0);
                return;
            }
            if !CLASSIFIED_HEADERS.contains(&name) {
                return;
            }
            // the header's bytes are Envoy's, valid until this hook returns
            let h = ffi::McptHeader {
                name: name.as_ptr(),
                name_len: name.len(),
                value: value.as_ptr(),
                value_len: value.len(),
            };
            if n < STACK_HEADERS {
                stack[n] = h;
            } else {
                // more lines than the stack holds: all of them go to the heap
                if heap.is_empty() {
                    heap.extend(stack.iter_mut().map(|s| std::mem::replace(s, empty())));
                }
                heap.push(h);
            }
            n += 1;
        });
        if status == 0 {
            self.idle = true;
            return;
        }
        let headers: &[ffi::McptHeader] = if n > STACK_HEADERS {
            &heap
        } else {
            &stack[..n]
        };
        self.status = status;
        let rc = self.new_classifier(status, headers);
        if rc != ffi::MCPT_OK {
            abi_error("classifier_new", rc);
            self.idle = true;
            return;
        }
        self.last_chunk = Instant::now();
        if end_of_stream {
            self.eof = true;
        }
    }

    fn new_classifier(&mut self, status: u16, headers: &[ffi::McptHeader]) -> i32 {
        let now_ms = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_millis() as i64)
            .unwrap_or(0);
        // a version longer than any the core knows is passed as one it does not know
        // (NUL-terminated on the stack; one with a NUL inside is passed as "", unknown too)
        let mut version = [0u8; 64];
        let has_version = match &self.protocol {
            Some(p) if p.len() >= version.len() => {
                version[0] = b'?';
                true
            }
            Some(p) if !p.contains(&0) => {
                version[..p.len()].copy_from_slice(p);
                true
            }
            Some(_) => true,
            None => false,
        };
        let mut o = ffi::McptCallOptions {
            expect_id_kind: ffi::MCPT_ID_NUMBER,
            expect_id_number: 1,
            expect_id_string: std::ptr::null(),
            expect_id_string_len: 0,
            protocol_version: if has_version {
                version.as_ptr() as *const std::os::raw::c_char
            } else {
                std::ptr::null()
            },
            now_unix_ms: now_ms,
            limits_json: self
                .shared
                .limits_json
                .as_ref()
                .map_or(std::ptr::null(), |l| l.as_ptr()),
            output_schema_json: std::ptr::null(),
            // the filter classifies tools/call answers only (mcpt_request_parse reads no other)
            request_method: std::ptr::null(),
        };
        // SAFETY: `self.req` is live; `o` is writable; the headers point into Envoy's header map,
        // valid for this hook, and are copied by the library.
        unsafe {
            ffi::mcpt_request_expect_id(self.req, &mut o);
            let mut rc = ffi::mcpt_classifier_new(
                status,
                headers.as_ptr(),
                headers.len(),
                &o,
                &mut self.classifier,
            );
            if rc != ffi::MCPT_OK && !o.protocol_version.is_null() {
                // an unknown MCP-Protocol-Version is classified as "unknown" rather than not at all
                abi::log(
                    abi::LOG_WARN,
                    &format!(
                        "mcp_triage: MCP-Protocol-Version {}: {}; classified as version unknown",
                        String::from_utf8_lossy(self.protocol.as_deref().unwrap_or_default()),
                        last_error()
                    ),
                );
                o.protocol_version = std::ptr::null();
                rc = ffi::mcpt_classifier_new(
                    status,
                    headers.as_ptr(),
                    headers.len(),
                    &o,
                    &mut self.classifier,
                );
            }
            rc
        }
    }

    /// A piece of the response body, fed as it passes; once decided, only counted.
    pub fn response_body(&mut self, envoy: FilterEnvoyPtr, end_of_stream: bool) {
        if self.classifier.is_null() {
            return;
        }
        let c = self.classifier;
        let mut failed = false;
        let mut decided = self.decided;
        let mut bytes = 0u64;
        for_each_chunk(envoy, abi::BODY_RECEIVED_RESPONSE, |chunk| {
            bytes += chunk.len() as u64;
            if !decided && !failed && !chunk.is_empty() {
                // SAFETY: `c` is live; the chunk is Envoy's, readable during this hook.
                let rc = unsafe { ffi::mcpt_classifier_feed(c, chunk.as_ptr(), chunk.len()) };
                if rc != ffi::MCPT_OK {
                    abi_error("feed", rc);
                    failed = true;
                    return;
                }
                // SAFETY: as above
                decided = unsafe { ffi::mcpt_classifier_is_decided(c) } == 1;
            }
        });
        self.decided = decided;
        if bytes > 0 {
            self.response_bytes += bytes;
            self.last_chunk = Instant::now();
        }
        if failed {
            self.idle = true;
        }
        if end_of_stream {
            self.eof = true;
        }
    }
}

impl Drop for Filter {
    fn drop(&mut self) {
        // SAFETY: each handle is NULL or owned by this filter, freed once here.
        unsafe {
            ffi::mcpt_classifier_free(self.classifier);
            ffi::mcpt_request_free(self.req);
        }
    }
}

/// Header lines kept on the stack per call before the list spills to the heap.
const STACK_LINES: usize = 32;

/// Calls `f(name, value)` for every line of the request or response head, in order, with one
/// crossing into Envoy (a lookup per name costs about a thousand instructions there); names are
/// lower case (HTTP/1 names are folded by Envoy's codec), the bytes valid until the hook returns.
fn for_each_header(envoy: FilterEnvoyPtr, kind: u32, mut f: impl FnMut(&[u8], &[u8])) {
    let Some(api) = abi::api() else { return };
    // SAFETY: plain query of the current hook's header map
    let n = unsafe { (api.get_headers_size)(envoy, kind) };
    if n == 0 {
        return;
    }
    let mut stack = [EnvoyHttpHeader::EMPTY; STACK_LINES];
    let mut heap = Vec::new();
    let lines: &mut [EnvoyHttpHeader] = if n <= STACK_LINES {
        &mut stack[..n]
    } else {
        heap.resize(n, EnvoyHttpHeader::EMPTY);
        &mut heap
    };
    // SAFETY: `lines` has room for the `n` headers Envoy reported
    if !unsafe { (api.get_headers)(envoy, kind, lines.as_mut_ptr()) } {
        return;
    }
    for h in lines.iter() {
        // SAFETY: Envoy's buffers, valid during this hook
        unsafe { f(h.key.bytes(), h.value.bytes()) }
    }
}

/// Calls `f` with each chunk of the body Envoy received in this hook (no copy).
fn for_each_chunk(envoy: FilterEnvoyPtr, kind: u32, mut f: impl FnMut(&[u8])) {
    let Some(api) = abi::api() else { return };
    // SAFETY: plain query of the current hook's body
    let n = unsafe { (api.get_body_chunks_size)(envoy, kind) };
    if n == 0 {
        return;
    }
    let mut stack = [EnvoyBuffer::EMPTY; 8];
    let mut heap = Vec::new();
    let chunks: &mut [EnvoyBuffer] = if n <= stack.len() {
        &mut stack[..n]
    } else {
        heap.resize(n, EnvoyBuffer::EMPTY);
        &mut heap
    };
    // SAFETY: `chunks` has room for the `n` buffers Envoy reported
    if !unsafe { (api.get_body_chunks)(envoy, kind, chunks.as_mut_ptr()) } {
        return;
    }
    for c in chunks.iter() {
        // SAFETY: Envoy's buffers, valid during this hook
        f(unsafe { c.bytes() });
    }
}

/// The library's message of its last error on this thread.
pub fn last_error() -> String {
    // SAFETY: a NUL-terminated string owned by the library
    unsafe { std::ffi::CStr::from_ptr(ffi::mcpt_last_error()) }
        .to_string_lossy()
        .into_owned()
}

/// An ABI error is logged and the stream goes on unclassified: the filter never breaks traffic.
pub fn abi_error(what: &str, rc: i32) {
    abi::log(
        abi::LOG_ERROR,
        &format!("mcp_triage: mcpt_{what} failed ({rc}): {}", last_error()),
    );
}
