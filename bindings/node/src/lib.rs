//! The native half of the `mcp-triage` npm package: a thin napi-rs layer over `mcp-triage-core`.
//!
//! `index.js` beside this crate is the package's public face: it checks argument types (throwing
//! `TypeError`), turns option objects into the flat arguments below, and parses the JSON these
//! functions return. Here, values are converted into the core's types (bad values throw an
//! `Error` naming the argument), the core decides, and its serde output is returned as JSON
//! text — the very bytes `mcp-triage classify --format json` prints for the same response. No
//! classification or retry rule lives here.

use std::sync::Arc;
use std::time::{Duration, SystemTime};

use mcp_triage_core::retry::{self, Delivery, RetryAction, RetryInput, RetryOptions, ToolHints};
use mcp_triage_core::{
    CallContext, Interruption, Limits, OutputSchema as CoreSchema, ProtocolVersion, RequestId,
    RequestKind, ResponseClassifier, ResponseHead, Verdict,
};
use napi::bindgen_prelude::*;
use napi_derive::napi;
use serde::Deserialize;

fn invalid(msg: impl Into<String>) -> Error {
    Error::new(Status::InvalidArg, msg.into())
}

fn head_of(status: u32, headers: Vec<String>) -> Result<ResponseHead> {
    let status = u16::try_from(status)
        .ok()
        .filter(|s| (100..=999).contains(s))
        .ok_or_else(|| {
            invalid(format!(
                "status must be an HTTP status 100-999, got {status}"
            ))
        })?;
    if !headers.len().is_multiple_of(2) {
        return Err(invalid("headers must come as name, value pairs"));
    }
    let mut head = ResponseHead::new(status);
    let mut it = headers.into_iter();
    while let (Some(name), Some(value)) = (it.next(), it.next()) {
        head = head.header(name, value);
    }
    Ok(head)
}

/// The head and context both `classifyJson` and `NativeStreamClassifier` take.
#[allow(clippy::too_many_arguments)]
fn head_and_context(
    status: u32,
    headers: Vec<String>,
    expect_id: Either3<i64, String, BigInt>,
    protocol_version: String,
    output_schema: Option<&OutputSchema>,
    now_ms: f64,
    limits_json: Option<String>,
    method: String,
) -> Result<(ResponseHead, CallContext)> {
    let head = head_of(status, headers)?;
    let ctx = context_of(
        expect_id,
        protocol_version,
        output_schema,
        now_ms,
        limits_json,
    )?
    .with_request_kind(RequestKind::from_method(&method));
    Ok((head, ctx))
}

fn context_of(
    expect_id: Either3<i64, String, BigInt>,
    protocol_version: String,
    output_schema: Option<&OutputSchema>,
    now_ms: f64,
    limits_json: Option<String>,
) -> Result<CallContext> {
    let version = ProtocolVersion::parse(&protocol_version).ok_or_else(|| {
        let known: Vec<&str> = ProtocolVersion::KNOWN.iter().map(|v| v.as_str()).collect();
        invalid(format!(
            "protocolVersion {protocol_version:?} is not a known revision ({}, or \"unknown\" to be lenient)",
            known.join(", ")
        ))
    })?;
    let id = match expect_id {
        Either3::A(n) => RequestId::Number(n),
        Either3::B(s) => RequestId::String(s),
        // Ids beyond 2^53 cannot be JavaScript numbers; they come as BigInt.
        Either3::C(big) => match big.get_i64() {
            (n, true) => RequestId::Number(n),
            _ => return Err(invalid("expectId must fit in a signed 64-bit integer")),
        },
    };
    if !now_ms.is_finite() || now_ms < 0.0 {
        return Err(invalid(format!(
            "now must be a time at or after 1970-01-01, got {now_ms} ms"
        )));
    }
    let limits = match limits_json {
        None => Limits::DEFAULT,
        Some(text) => parse_limits(&text)?,
    };
    let mut ctx = CallContext::new(id)
        .with_protocol_version(version)
        .with_now(SystemTime::UNIX_EPOCH + Duration::from_secs_f64(now_ms / 1000.0))
        .with_limits(limits);
    if let Some(schema) = output_schema {
        ctx = ctx.with_output_schema(schema.0.clone());
    }
    Ok(ctx)
}

fn parse_limits(text: &str) -> Result<Limits> {
    serde_json::from_str(text).map_err(|e| invalid(format!("limits: {e}")))
}

fn verdict_json(v: &Verdict) -> String {
    serde_json::to_string(v).expect("a verdict serialises")
}

/// Classifies one complete response; returns the verdict as JSON text.
// Flat arguments: index.js spreads the checked options object into them (one N-API call).
#[allow(clippy::too_many_arguments)]
#[napi(js_name = "classifyJson")]
pub fn classify_json(
    status: u32,
    headers: Vec<String>,
    body: &[u8],
    expect_id: Either3<i64, String, BigInt>,
    protocol_version: String,
    output_schema: Option<&OutputSchema>,
    now_ms: f64,
    limits_json: Option<String>,
    method: String,
) -> Result<String> {
    let (head, ctx) = head_and_context(
        status,
        headers,
        expect_id,
        protocol_version,
        output_schema,
        now_ms,
        limits_json,
        method,
    )?;
    Ok(verdict_json(&mcp_triage_core::classify(&head, body, &ctx)))
}

/// A tool's outputSchema compiled once (from its JSON text).
#[napi]
pub struct OutputSchema(Arc<CoreSchema>);

#[napi]
impl OutputSchema {
    /// Compiles a schema given as JSON text; throws when it is not JSON or does not compile.
    #[napi(constructor)]
    pub fn new(schema_json: String) -> Result<Self> {
        let value: serde_json::Value = serde_json::from_str(&schema_json)
            .map_err(|e| invalid(format!("outputSchema is not JSON: {e}")))?;
        let compiled = CoreSchema::compile(&value).map_err(|e| invalid(e.to_string()))?;
        Ok(OutputSchema(Arc::new(compiled)))
    }
}

/// The incremental classifier; see `StreamClassifier` in index.js.
#[napi]
pub struct NativeStreamClassifier {
    inner: Option<ResponseClassifier>,
}

fn finished() -> Error {
    Error::new(
        Status::GenericFailure,
        "this StreamClassifier already returned its verdict (finish or interrupted was called)",
    )
}

#[napi]
impl NativeStreamClassifier {
    /// Starts classifying a response with this head.
    // Flat arguments, as classifyJson's: index.js spreads the checked options into them.
    #[allow(clippy::too_many_arguments)]
    #[napi(constructor)]
    pub fn new(
        status: u32,
        headers: Vec<String>,
        expect_id: Either3<i64, String, BigInt>,
        protocol_version: String,
        output_schema: Option<&OutputSchema>,
        now_ms: f64,
        limits_json: Option<String>,
        method: String,
    ) -> Result<Self> {
        let (head, ctx) = head_and_context(
            status,
            headers,
            expect_id,
            protocol_version,
            output_schema,
            now_ms,
            limits_json,
            method,
        )?;
        Ok(NativeStreamClassifier {
            inner: Some(ResponseClassifier::new(&head, ctx)),
        })
    }

    /// Feeds the next chunk of the body.
    #[napi]
    pub fn feed(&mut self, chunk: &[u8]) -> Result<()> {
        self.inner.as_mut().ok_or_else(finished)?.feed(chunk);
        Ok(())
    }

    /// True once the verdict is known.
    #[napi(getter)]
    pub fn is_decided(&self) -> Result<bool> {
        Ok(self.inner.as_ref().ok_or_else(finished)?.is_decided())
    }

    /// The body ended: the verdict as JSON text.
    #[napi]
    pub fn finish(&mut self) -> Result<String> {
        let c = self.inner.take().ok_or_else(finished)?;
        Ok(verdict_json(&c.finish()))
    }

    /// The body broke off: the verdict as JSON text.
    #[napi]
    pub fn interrupted(&mut self, reason: String, timed_out: bool) -> Result<String> {
        let c = self.inner.take().ok_or_else(finished)?;
        let why = if timed_out {
            Interruption::TimedOut(reason)
        } else {
            Interruption::ConnectionLost(reason)
        };
        Ok(verdict_json(&c.interrupted(why)))
    }
}

/// What the caller knows about the call besides the verdict (the `call` argument of
/// `decideRetry`), camelCase as JavaScript writes it.
#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase", default, deny_unknown_fields)]
struct CallState {
    tool: String,
    resumes: u32,
    local_server: bool,
    legacy_session: bool,
    legacy_stream: bool,
    reinitialized: bool,
    relisted: bool,
}

fn parse_arg<T>(what: &str, json: Option<String>) -> Result<T>
where
    T: for<'de> Deserialize<'de> + Default,
{
    match json {
        None => Ok(T::default()),
        Some(text) => serde_json::from_str(&text).map_err(|e| invalid(format!("{what}: {e}"))),
    }
}

/// The retry policy after one attempt; returns the decision as JSON text.
#[napi(js_name = "decideRetryJson")]
pub fn decide_retry_json(
    verdict_json: String,
    hints_json: Option<String>,
    delivery: String,
    attempt: u32,
    options_json: Option<String>,
    call_json: Option<String>,
    jitter: f64,
) -> Result<String> {
    let verdict: Verdict = serde_json::from_str(&verdict_json)
        .map_err(|e| invalid(format!("verdict is not a verdict: {e}")))?;
    let hints: ToolHints = parse_arg("hints", hints_json)?;
    let delivery: Delivery = serde_json::from_value(serde_json::Value::String(delivery.clone()))
        .map_err(|_| {
            invalid(format!(
                "delivery must be \"never_sent\", \"sent\" or \"maybe_executed\", got {delivery:?}"
            ))
        })?;
    if attempt < 1 {
        return Err(invalid(format!(
            "attempt counts the sends so far (1 after the first), got {attempt}"
        )));
    }
    let options: RetryOptions = parse_arg("options", options_json)?;
    let call: CallState = parse_arg("call", call_json)?;
    if !(0.0..=1.0).contains(&jitter) {
        return Err(invalid(format!("jitter must be in [0, 1], got {jitter}")));
    }
    let input = RetryInput {
        verdict: &verdict,
        tool: &call.tool,
        hints,
        delivery,
        resends: attempt - 1,
        resumes: call.resumes,
        local_server: call.local_server,
        legacy_session: call.legacy_session,
        legacy_stream: call.legacy_stream,
        reinitialized: call.reinitialized,
        relisted: call.relisted,
        // this caller does not read -32022 refusals: the policy never resends for one
        revision_offered: None,
        revision_resent: false,
        // nor answers input or drives tasks: input_required and task_created are `done`
        input_rounds: None,
        drives_tasks: false,
    };
    let decision = retry::decide(&input, &options, &mut || jitter);
    let mut out = serde_json::to_value(decision.to_record()).expect("a decision serialises");
    if let RetryAction::Resume { last_event_id, .. } = &decision.action {
        out["lastEventId"] = serde_json::Value::String(last_event_id.clone());
    }
    Ok(out.to_string())
}
