//! `mcp_triage`: the mcp-triage classifier and retry policy for Python.
//!
//! A thin layer over `mcp-triage-core`: it converts Python arguments into the core's types,
//! calls the core, and returns the core's serde output as plain Python objects (a verdict is the
//! dict form of the verdict JSON, key for key). No classification or retry rule lives here, so a
//! verdict from Python is the verdict the CLI, the client and the proxy give for the same bytes.
//!
//! Bad arguments raise `TypeError` (wrong type) or `ValueError` (right type, bad value) naming the
//! argument; bytes never raise: any body gives a verdict.

use std::sync::Arc;
use std::time::{Duration, SystemTime};

use mcp_triage_core::exchange::Exchange;
use mcp_triage_core::record_outcome::RecordOutcome;
use mcp_triage_core::retry::{self, Delivery, RetryAction, RetryInput, RetryOptions, ToolHints};
use mcp_triage_core::{
    CallContext, Interruption, Limits, OutputSchema as CoreSchema, ProtocolVersion, RequestId,
    RequestKind, ResponseClassifier, ResponseHead, Verdict,
};
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyByteArray, PyBytes, PyDict, PyFloat, PyInt, PyMemoryView, PyString};
use pythonize::{depythonize, pythonize};

/// Bodies at least this long are classified with the GIL released, so that other Python threads
/// run meanwhile; below it, releasing and re-taking the GIL costs more than it frees.
const DETACH_BODY_BYTES: usize = 64 << 10;

fn type_error(what: &str, want: &str, got: &Bound<'_, PyAny>) -> PyErr {
    let ty = got
        .get_type()
        .name()
        .map(|n| n.to_string())
        .unwrap_or_else(|_| "?".to_string());
    PyTypeError::new_err(format!("{what} must be {want}, not {ty}"))
}

/// The body as bytes: `bytes` is borrowed, `bytearray` and `memoryview` are copied (they may
/// change while the GIL is released).
enum Body<'py> {
    Borrowed(Bound<'py, PyBytes>),
    Owned(Vec<u8>),
}

impl Body<'_> {
    fn as_slice(&self) -> &[u8] {
        match self {
            Body::Borrowed(b) => b.as_bytes(),
            Body::Owned(v) => v,
        }
    }
}

fn body_arg<'py>(what: &str, obj: &Bound<'py, PyAny>) -> PyResult<Body<'py>> {
    if let Ok(b) = obj.cast::<PyBytes>() {
        return Ok(Body::Borrowed(b.clone()));
    }
    if let Ok(b) = obj.cast::<PyByteArray>() {
        return Ok(Body::Owned(b.to_vec()));
    }
    if obj.is_instance_of::<PyMemoryView>() {
        let bytes = obj.call_method0("tobytes")?;
        let bytes = bytes.cast::<PyBytes>()?;
        return Ok(Body::Owned(bytes.as_bytes().to_vec()));
    }
    if obj.is_instance_of::<PyString>() {
        return Err(PyTypeError::new_err(format!(
            "{what} must be bytes, bytearray or memoryview, not str (encode it first, e.g. body.encode())"
        )));
    }
    Err(type_error(what, "bytes, bytearray or memoryview", obj))
}

fn header_text(what: &str, obj: &Bound<'_, PyAny>) -> PyResult<String> {
    if let Ok(s) = obj.cast::<PyString>() {
        return s.extract::<String>();
    }
    if let Ok(b) = obj.cast::<PyBytes>() {
        // Raw ASGI headers are bytes; HTTP field values are octets, shown here as UTF-8.
        return Ok(String::from_utf8_lossy(b.as_bytes()).into_owned());
    }
    Err(type_error(what, "str or bytes", obj))
}

/// `headers`: a mapping (its `items()`), or an iterable of `(name, value)` pairs, which is how a
/// repeated header such as `WWW-Authenticate` is given; `None` is no headers.
fn head_arg(
    status: &Bound<'_, PyAny>,
    headers: Option<&Bound<'_, PyAny>>,
) -> PyResult<ResponseHead> {
    if status.is_instance_of::<pyo3::types::PyBool>() || !status.is_instance_of::<PyInt>() {
        return Err(type_error("status", "an int", status));
    }
    let status: i64 = status.extract()?;
    let status = u16::try_from(status)
        .ok()
        .filter(|s| (100..=999).contains(s))
        .ok_or_else(|| {
            PyValueError::new_err(format!(
                "status must be an HTTP status 100-999, got {status}"
            ))
        })?;
    let mut head = ResponseHead::new(status);
    let Some(headers) = headers.filter(|h| !h.is_none()) else {
        return Ok(head);
    };
    let pairs = if headers.hasattr("items")? {
        headers.call_method0("items")?
    } else if headers.is_instance_of::<PyString>() || headers.is_instance_of::<PyBytes>() {
        return Err(type_error(
            "headers",
            "a mapping or an iterable of (name, value) pairs",
            headers,
        ));
    } else {
        headers.clone()
    };
    let iter = pairs.try_iter().map_err(|_| {
        type_error(
            "headers",
            "a mapping or an iterable of (name, value) pairs",
            headers,
        )
    })?;
    for (i, pair) in iter.enumerate() {
        let pair = pair?;
        let (name, value): (Bound<'_, PyAny>, Bound<'_, PyAny>) = pair
            .extract()
            .map_err(|_| type_error(&format!("headers[{i}]"), "a (name, value) pair", &pair))?;
        head = head.header(
            header_text(&format!("headers[{i}] name"), &name)?,
            header_text(&format!("headers[{i}] value"), &value)?,
        );
    }
    Ok(head)
}

fn expect_id_arg(obj: &Bound<'_, PyAny>) -> PyResult<RequestId> {
    if obj.is_instance_of::<pyo3::types::PyBool>() {
        return Err(type_error("expect_id", "an int or a str", obj));
    }
    if let Ok(s) = obj.cast::<PyString>() {
        return Ok(RequestId::String(s.extract::<String>()?));
    }
    if obj.is_instance_of::<PyInt>() {
        let n: i64 = obj
            .extract()
            .map_err(|_| PyValueError::new_err("expect_id must fit in a signed 64-bit integer"))?;
        return Ok(RequestId::Number(n));
    }
    Err(type_error("expect_id", "an int or a str", obj))
}

fn now_arg(obj: Option<&Bound<'_, PyAny>>) -> PyResult<SystemTime> {
    let Some(obj) = obj.filter(|o| !o.is_none()) else {
        // The core reads no clock; an embedder classifying live traffic means "now".
        return Ok(SystemTime::now());
    };
    let secs: f64 = if obj.is_instance_of::<PyInt>() && !obj.is_instance_of::<pyo3::types::PyBool>()
        || obj.is_instance_of::<PyFloat>()
    {
        obj.extract()?
    } else if obj.hasattr("timestamp")? {
        // datetime.datetime (a naive one is taken as local time, as datetime.timestamp() does)
        obj.call_method0("timestamp")?.extract()?
    } else {
        return Err(type_error(
            "now",
            "Unix seconds (int or float) or a datetime",
            obj,
        ));
    };
    if !secs.is_finite() || secs < 0.0 {
        return Err(PyValueError::new_err(format!(
            "now must be a time at or after 1970-01-01, got {secs} seconds"
        )));
    }
    Ok(SystemTime::UNIX_EPOCH + Duration::from_secs_f64(secs))
}

fn schema_arg(obj: Option<&Bound<'_, PyAny>>) -> PyResult<Option<Arc<CoreSchema>>> {
    let Some(obj) = obj.filter(|o| !o.is_none()) else {
        return Ok(None);
    };
    if let Ok(compiled) = obj.cast::<OutputSchema>() {
        return Ok(Some(compiled.get().0.clone()));
    }
    Ok(Some(Arc::new(compile_schema(obj)?)))
}

fn compile_schema(obj: &Bound<'_, PyAny>) -> PyResult<CoreSchema> {
    if !obj.is_instance_of::<PyDict>() && !obj.is_instance_of::<pyo3::types::PyBool>() {
        return Err(type_error(
            "output_schema",
            "a dict (a JSON Schema), a bool or an OutputSchema",
            obj,
        ));
    }
    let value: serde_json::Value = depythonize(obj)
        .map_err(|e| PyValueError::new_err(format!("output_schema is not JSON: {e}")))?;
    CoreSchema::compile(&value).map_err(|e| PyValueError::new_err(e.to_string()))
}

fn limits_arg(obj: Option<&Bound<'_, PyAny>>) -> PyResult<Limits> {
    let Some(obj) = obj.filter(|o| !o.is_none()) else {
        return Ok(Limits::DEFAULT);
    };
    if !obj.is_instance_of::<PyDict>() {
        return Err(type_error("limits", "a dict", obj));
    }
    depythonize(obj).map_err(|e| PyValueError::new_err(format!("limits: {e}")))
}

fn context_arg(
    expect_id: &Bound<'_, PyAny>,
    protocol_version: &str,
    output_schema: Option<&Bound<'_, PyAny>>,
    now: Option<&Bound<'_, PyAny>>,
    limits: Option<&Bound<'_, PyAny>>,
) -> PyResult<CallContext> {
    let version = ProtocolVersion::parse(protocol_version).ok_or_else(|| {
        let known: Vec<&str> = ProtocolVersion::KNOWN.iter().map(|v| v.as_str()).collect();
        PyValueError::new_err(format!(
            "protocol_version {protocol_version:?} is not a known revision ({}, or \"unknown\" to be lenient)",
            known.join(", ")
        ))
    })?;
    let mut ctx = CallContext::new(expect_id_arg(expect_id)?)
        .with_protocol_version(version)
        .with_now(now_arg(now)?)
        .with_limits(limits_arg(limits)?);
    if let Some(schema) = schema_arg(output_schema)? {
        ctx = ctx.with_output_schema(schema);
    }
    Ok(ctx)
}

/// The head and context both `classify` and `StreamClassifier` take (`expect_id` defaults to 1).
#[allow(clippy::too_many_arguments)]
fn head_and_context<'py>(
    py: Python<'py>,
    status: &Bound<'py, PyAny>,
    headers: Option<&Bound<'py, PyAny>>,
    expect_id: Option<&Bound<'py, PyAny>>,
    protocol_version: &str,
    output_schema: Option<&Bound<'py, PyAny>>,
    now: Option<&Bound<'py, PyAny>>,
    limits: Option<&Bound<'py, PyAny>>,
) -> PyResult<(ResponseHead, CallContext)> {
    let head = head_arg(status, headers)?;
    let one = 1i64.into_pyobject(py)?.into_any();
    let ctx = context_arg(
        expect_id.unwrap_or(&one),
        protocol_version,
        output_schema,
        now,
        limits,
    )?;
    Ok((head, ctx))
}

fn verdict_out<'py>(py: Python<'py>, v: &Verdict) -> PyResult<Bound<'py, PyAny>> {
    pythonize(py, v).map_err(PyErr::from)
}

/// Classifies one complete HTTP response to a `tools/call` and returns its verdict as a dict
/// (the verdict JSON: `layer`, `outcome`, and `status`, `code`, `detail`, `warnings`, ... when
/// they apply).
///
/// `headers` is a mapping or an iterable of `(name, value)` pairs (str or bytes); `body` is
/// bytes, bytearray or memoryview. `expect_id` is the request id the response must answer (int
/// or str: `1` and `"1"` differ). `protocol_version` is the negotiated revision
/// ("2025-06-18", ...) or "unknown". `output_schema` is the tool's outputSchema (a dict, or an
/// `OutputSchema` compiled once). `now` (Unix seconds or a datetime; default: the current time)
/// is the clock `Retry-After` dates are read against. `limits` overrides size limits by their
/// camelCase names (`maxBodyBytes`, `maxDepth`, ...).
#[pyfunction]
#[pyo3(
    signature = (status, headers, body, *, expect_id = None, protocol_version = "unknown", output_schema = None, now = None, limits = None, method = "tools/call"),
    text_signature = "(status, headers, body, *, expect_id=1, protocol_version='unknown', output_schema=None, now=None, limits=None, method='tools/call')"
)]
#[allow(clippy::too_many_arguments)]
fn classify<'py>(
    py: Python<'py>,
    status: &Bound<'py, PyAny>,
    headers: Option<&Bound<'py, PyAny>>,
    body: &Bound<'py, PyAny>,
    expect_id: Option<&Bound<'py, PyAny>>,
    protocol_version: &str,
    output_schema: Option<&Bound<'py, PyAny>>,
    now: Option<&Bound<'py, PyAny>>,
    limits: Option<&Bound<'py, PyAny>>,
    method: &str,
) -> PyResult<Bound<'py, PyAny>> {
    let (head, ctx) = head_and_context(
        py,
        status,
        headers,
        expect_id,
        protocol_version,
        output_schema,
        now,
        limits,
    )?;
    let ctx = ctx.with_request_kind(RequestKind::from_method(method));
    let body = body_arg("body", body)?;
    let bytes = body.as_slice();
    let v = if bytes.len() >= DETACH_BODY_BYTES {
        py.detach(|| mcp_triage_core::classify(&head, bytes, &ctx))
    } else {
        mcp_triage_core::classify(&head, bytes, &ctx)
    };
    verdict_out(py, &v)
}

/// Classifies one line of an exchange file or a capture file (`proxy --capture`,
/// docs/capture-format.md) exactly as `mcp-triage classify --batch` does: the line is read by
/// the core's own exchange reader (`status`, `contentType`, `headers`, `body` or `bodyBase64`,
/// `expectId`, `protocolVersion`, `outputSchema`, `now`, and a capture's `end`: a body that
/// broke off is judged broken off, `no_response` is the recorder's `TIMEOUT` or
/// `CONNECTION_ERROR`), so a Python job over capture archives never re-implements that mapping.
///
/// `line` is the line's bytes (bytes, bytearray, memoryview; a trailing newline is allowed) or a
/// str. `now` and `limits` are `classify`'s and apply unless the line says otherwise (a line's
/// `now`). Raises ValueError naming what is wrong when the line is not an exchange (the message
/// `classify --batch` reports for it).
#[pyfunction]
#[pyo3(
    signature = (line, *, now = None, limits = None),
    text_signature = "(line, *, now=None, limits=None)"
)]
fn classify_exchange_line<'py>(
    py: Python<'py>,
    line: &Bound<'py, PyAny>,
    now: Option<&Bound<'py, PyAny>>,
    limits: Option<&Bound<'py, PyAny>>,
) -> PyResult<Bound<'py, PyAny>> {
    let (v, _, _) = exchange_line(py, line, now, limits)?;
    verdict_out(py, &v)
}

/// `classify_exchange_line`, and what `classify --batch` counts the line as: a dict
/// `{"kind": ..., "counted": ..., "verdict": {...}}`. `kind` is the line's method
/// (`tools/call`, `initialize`, `notifications/initialized`, ...; `"(not JSON-RPC)"` for a
/// capture line without one: a GET stream), `counted` the verdict's outcome for a tool call, else
/// `RESULT` for a result to another method, `ACCEPTED` for a 2xx to a notification,
/// `FORWARDED` for a 2xx to a request that is not JSON-RPC, or the verdict's outcome (an
/// `HTTP_ERROR` is one for every kind). Counting by (`kind`, `counted`) over a capture gives
/// `classify --batch`'s `kinds`.
#[pyfunction]
#[pyo3(
    signature = (line, *, now = None, limits = None),
    text_signature = "(line, *, now=None, limits=None)"
)]
fn count_exchange_line<'py>(
    py: Python<'py>,
    line: &Bound<'py, PyAny>,
    now: Option<&Bound<'py, PyAny>>,
    limits: Option<&Bound<'py, PyAny>>,
) -> PyResult<Bound<'py, PyAny>> {
    let (v, kind, counted) = exchange_line(py, line, now, limits)?;
    let out = PyDict::new(py);
    out.set_item("kind", kind)?;
    out.set_item("counted", counted.as_str())?;
    out.set_item("verdict", verdict_out(py, &v)?)?;
    Ok(out.into_any())
}

/// A line read and classified as `classify --batch` does: the verdict, the line's kind name
/// and what it counts as.
fn exchange_line<'py>(
    py: Python<'py>,
    line: &Bound<'py, PyAny>,
    now: Option<&Bound<'py, PyAny>>,
    limits: Option<&Bound<'py, PyAny>>,
) -> PyResult<(Verdict, String, RecordOutcome)> {
    let line = if let Ok(s) = line.cast::<PyString>() {
        Body::Owned(s.extract::<String>()?.into_bytes())
    } else {
        body_arg("line", line).map_err(|_| type_error("line", "bytes or str", line))?
    };
    let bytes = line.as_slice();
    let bytes = bytes.strip_suffix(b"\n").unwrap_or(bytes);
    let bytes = bytes.strip_suffix(b"\r").unwrap_or(bytes);
    let base = CallContext::new(RequestId::Number(1))
        .with_now(now_arg(now)?)
        .with_limits(limits_arg(limits)?);
    let run = || {
        Exchange::parse(bytes).map(|x| {
            let ctx = x.context(&base);
            let (v, counted) = x.classify_counted(&ctx);
            (v, x.kind().name().to_string(), counted)
        })
    };
    if bytes.len() >= DETACH_BODY_BYTES {
        py.detach(run)
    } else {
        run()
    }
    .map_err(|e| PyValueError::new_err(format!("not an exchange line: {e}")))
}

/// A tool's outputSchema compiled once, to pass as `output_schema=` to many calls.
///
/// Raises ValueError when the schema does not compile (JSON Schema 2020-12 unless it names
/// another draft in `$schema`; remote `$ref`s are not fetched).
#[pyclass(frozen, module = "mcp_triage")]
struct OutputSchema(Arc<CoreSchema>);

#[pymethods]
impl OutputSchema {
    #[new]
    fn new(schema: &Bound<'_, PyAny>) -> PyResult<Self> {
        Ok(OutputSchema(Arc::new(compile_schema(schema)?)))
    }

    fn __repr__(&self) -> String {
        format!("OutputSchema({})", self.0.source())
    }
}

/// The incremental classifier for a response read chunk by chunk: `feed(chunk)` each chunk as
/// it arrives, stop reading once `is_decided` is true (an SSE stream can be decided by its
/// response event before it ends), then `finish()` for the verdict dict; `interrupted(reason)`
/// instead when the connection broke or a deadline passed. Any split of the body into chunks
/// gives the verdict `classify` gives for the whole body. The arguments are `classify`'s.
#[pyclass(module = "mcp_triage")]
struct StreamClassifier {
    inner: Option<ResponseClassifier>,
}

impl StreamClassifier {
    fn take(&mut self) -> PyResult<ResponseClassifier> {
        self.inner.take().ok_or_else(finished_error)
    }
}

fn finished_error() -> PyErr {
    PyValueError::new_err(
        "this StreamClassifier already returned its verdict (finish or interrupted was called)",
    )
}

#[pymethods]
impl StreamClassifier {
    #[new]
    #[pyo3(
        signature = (status, headers, *, expect_id = None, protocol_version = "unknown", output_schema = None, now = None, limits = None, method = "tools/call"),
        text_signature = "(status, headers, *, expect_id=1, protocol_version='unknown', output_schema=None, now=None, limits=None, method='tools/call')"
    )]
    #[allow(clippy::too_many_arguments)]
    fn new<'py>(
        py: Python<'py>,
        status: &Bound<'py, PyAny>,
        headers: Option<&Bound<'py, PyAny>>,
        expect_id: Option<&Bound<'py, PyAny>>,
        protocol_version: &str,
        output_schema: Option<&Bound<'py, PyAny>>,
        now: Option<&Bound<'py, PyAny>>,
        limits: Option<&Bound<'py, PyAny>>,
        method: &str,
    ) -> PyResult<Self> {
        let (head, ctx) = head_and_context(
            py,
            status,
            headers,
            expect_id,
            protocol_version,
            output_schema,
            now,
            limits,
        )?;
        let ctx = ctx.with_request_kind(RequestKind::from_method(method));
        Ok(StreamClassifier {
            inner: Some(ResponseClassifier::new(&head, ctx)),
        })
    }

    /// Feeds the next chunk of the body (bytes, bytearray or memoryview). Chunks after the
    /// verdict is decided are counted but change nothing.
    fn feed(&mut self, chunk: &Bound<'_, PyAny>) -> PyResult<()> {
        let body = body_arg("chunk", chunk)?;
        let inner = self.inner.as_mut().ok_or_else(finished_error)?;
        inner.feed(body.as_slice());
        Ok(())
    }

    /// True once the verdict is known: the caller may stop reading the body.
    #[getter]
    fn is_decided(&self) -> PyResult<bool> {
        Ok(self.inner.as_ref().ok_or_else(finished_error)?.is_decided())
    }

    /// The body ended: returns the verdict dict. The classifier is used up.
    fn finish<'py>(&mut self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let v = self.take()?.finish();
        verdict_out(py, &v)
    }

    /// The body broke off (`timed_out=False`: the connection was lost; `True`: a deadline
    /// passed); `reason` says how, in words. Returns the verdict dict: a non-2xx status is still
    /// `HTTP_ERROR`, an SSE stream without its response `TIMEOUT` or `CONNECTION_ERROR`.
    #[pyo3(signature = (reason, *, timed_out = false))]
    fn interrupted<'py>(
        &mut self,
        py: Python<'py>,
        reason: &str,
        timed_out: bool,
    ) -> PyResult<Bound<'py, PyAny>> {
        let why = if timed_out {
            Interruption::TimedOut(reason.to_string())
        } else {
            Interruption::ConnectionLost(reason.to_string())
        };
        let v = self.take()?.interrupted(why);
        verdict_out(py, &v)
    }
}

fn random_unit() -> PyResult<f64> {
    Python::attach(|py| {
        py.import("random")?
            .call_method0("random")?
            .extract::<f64>()
    })
}

/// The retry policy after one attempt: returns `{"action", "delayMs"?, "reason",
/// "lastEventId"?}` with `action` one of `done`, `resend`, `resume`, `reinitialize`,
/// `relist_tools`, `give_up`.
///
/// `verdict` is the attempt's verdict dict (as `classify` returns it). `hints` is the tool's
/// `annotations` object from `tools/list` (`readOnlyHint`, `idempotentHint`; other members are
/// ignored) or None. `delivery` is what is known about the request: "never_sent", "sent" (a
/// response head came back) or "maybe_executed" (the exchange broke after sending). `attempt`
/// counts the sends of this request so far, the one just judged included (1 after the first).
/// `options` overrides the policy's defaults by camelCase name: `maxRetries` (2),
/// `maxResumes` (5), `backoffBaseMs` (200), `backoffFactor` (2), `maxWaitMs` (30000), `trust`
/// ("local_only", "trust", "distrust"), `safeTools` (names), `idempotencyKey` (bool).
/// The keywords describe the call: its `tool` name, stream `resumes` made, whether the server is
/// local (stdio or loopback), whether a legacy session or a resumable legacy stream was used,
/// whether the session was already re-initialised or the tools re-listed. `jitter` in [0, 1]
/// fixes the backoff jitter (default: `random.random()`).
#[pyfunction]
#[pyo3(
    signature = (verdict, hints = None, delivery = None, attempt = 1, options = None, *, tool = "", resumes = 0, local_server = false, legacy_session = false, legacy_stream = false, reinitialized = false, relisted = false, jitter = None),
    text_signature = "(verdict, hints=None, delivery='sent', attempt=1, options=None, *, tool='', resumes=0, local_server=False, legacy_session=False, legacy_stream=False, reinitialized=False, relisted=False, jitter=None)"
)]
#[allow(clippy::too_many_arguments)]
fn decide_retry<'py>(
    py: Python<'py>,
    verdict: &Bound<'py, PyAny>,
    hints: Option<&Bound<'py, PyAny>>,
    delivery: Option<&Bound<'py, PyAny>>,
    attempt: i64,
    options: Option<&Bound<'py, PyAny>>,
    tool: &str,
    resumes: u32,
    local_server: bool,
    legacy_session: bool,
    legacy_stream: bool,
    reinitialized: bool,
    relisted: bool,
    jitter: Option<f64>,
) -> PyResult<Bound<'py, PyAny>> {
    if !verdict.is_instance_of::<PyDict>() {
        return Err(type_error(
            "verdict",
            "a dict (a verdict from classify)",
            verdict,
        ));
    }
    let verdict: Verdict = depythonize(verdict)
        .map_err(|e| PyValueError::new_err(format!("verdict is not a verdict: {e}")))?;
    let hints: ToolHints = match hints.filter(|h| !h.is_none()) {
        None => ToolHints::default(),
        Some(h) if h.is_instance_of::<PyDict>() => {
            depythonize(h).map_err(|e| PyValueError::new_err(format!("hints: {e}")))?
        }
        Some(h) => {
            return Err(type_error(
                "hints",
                "a dict (the tool's annotations) or None",
                h,
            ))
        }
    };
    let delivery: Delivery = match delivery.filter(|d| !d.is_none()) {
        None => Delivery::Sent,
        Some(d) if d.is_instance_of::<PyString>() => depythonize(d).map_err(|_| {
            PyValueError::new_err(format!(
                "delivery must be \"never_sent\", \"sent\" or \"maybe_executed\", got {d}"
            ))
        })?,
        Some(d) => return Err(type_error("delivery", "a str", d)),
    };
    if attempt < 1 || attempt > i64::from(u32::MAX) {
        return Err(PyValueError::new_err(format!(
            "attempt counts the sends so far (1 after the first), got {attempt}"
        )));
    }
    let options: RetryOptions = match options.filter(|o| !o.is_none()) {
        None => RetryOptions::default(),
        Some(o) if o.is_instance_of::<PyDict>() => {
            depythonize(o).map_err(|e| PyValueError::new_err(format!("options: {e}")))?
        }
        Some(o) => return Err(type_error("options", "a dict or None", o)),
    };
    if let Some(j) = jitter {
        if !(0.0..=1.0).contains(&j) {
            return Err(PyValueError::new_err(format!(
                "jitter must be in [0, 1], got {j}"
            )));
        }
    }
    let input = RetryInput {
        verdict: &verdict,
        tool,
        hints,
        delivery,
        resends: (attempt - 1) as u32,
        resumes,
        local_server,
        legacy_session,
        legacy_stream,
        reinitialized,
        relisted,
        // this caller does not read -32022 refusals: the policy never resends for one
        revision_offered: None,
        revision_resent: false,
        // nor answers input or drives tasks: input_required and task_created are `done`
        input_rounds: None,
        drives_tasks: false,
    };
    let mut failure = None;
    let mut random = || match jitter {
        Some(j) => j,
        None => random_unit().unwrap_or_else(|e| {
            failure = Some(e);
            0.5
        }),
    };
    let decision = retry::decide(&input, &options, &mut random);
    if let Some(e) = failure {
        return Err(e);
    }
    let out = pythonize(py, &decision.to_record())?;
    if let RetryAction::Resume { last_event_id, .. } = &decision.action {
        out.set_item("lastEventId", last_event_id)?;
    }
    Ok(out)
}

/// The mcp-triage classifier: which layer of an MCP `tools/call` failed, and why.
#[pymodule]
fn mcp_triage(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(classify, m)?)?;
    m.add_function(wrap_pyfunction!(classify_exchange_line, m)?)?;
    m.add_function(wrap_pyfunction!(count_exchange_line, m)?)?;
    m.add_function(wrap_pyfunction!(decide_retry, m)?)?;
    m.add_class::<StreamClassifier>()?;
    m.add_class::<OutputSchema>()?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}
