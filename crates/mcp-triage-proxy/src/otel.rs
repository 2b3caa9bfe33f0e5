//! OpenTelemetry export: one span per request record and the `mcp.client.operation.duration`
//! histogram, per the MCP semantic conventions, over OTLP/HTTP (protobuf).
//!
//! It is a [`RecordConsumer`]: it runs on the record writer's thread and sees exactly the records
//! the log gets, after redaction. The SDK's batch span processor and periodic metric reader
//! export from their own threads with a blocking HTTP client, so forwarding never waits on the
//! collector. The proxy keeps no shared state for this: a fleet of proxies reports to one
//! collector, which aggregates.

use std::time::{Duration, SystemTime};

use opentelemetry::metrics::{Histogram, MeterProvider as _};
use opentelemetry::trace::{Span as _, SpanKind, Status, Tracer as _, TracerProvider as _};
use opentelemetry::KeyValue;
use opentelemetry_otlp::{Protocol, WithExportConfig, WithHttpConfig};
use opentelemetry_sdk::metrics::{PeriodicReader, SdkMeterProvider};
use opentelemetry_sdk::trace::{SdkTracer, SdkTracerProvider};
use opentelemetry_sdk::Resource;

use tokio_rustls::rustls::pki_types::CertificateDer;

use crate::log::RecordConsumer;
use crate::record::{Record, RecordKind};

/// How long one export to the collector may take.
const EXPORT_TIMEOUT: Duration = Duration::from_secs(5);

/// Where the upstream is, for `server.address` / `server.port`.
#[derive(Debug, Clone, Default)]
pub struct Peer {
    /// Host name or address.
    pub address: Option<String>,
    /// Port.
    pub port: Option<u16>,
}

/// Exports records to an OTLP/HTTP collector.
pub struct OtlpConsumer {
    tracer_provider: SdkTracerProvider,
    meter_provider: SdkMeterProvider,
    tracer: SdkTracer,
    duration: Histogram<f64>,
    peer: Peer,
}

/// Why the exporter could not be set up.
#[derive(Debug, thiserror::Error)]
#[error("--otlp {0:?}: {1}")]
pub struct OtlpError(String, String);

impl OtlpConsumer {
    /// Exporters to `base` (`http://host:4318` or `https://host:4318`; `/v1/traces` and
    /// `/v1/metrics` are appended), metrics every `interval`. An https collector is verified
    /// against Mozilla's roots plus `extra_ca`. Headers a collector wants (an API key) come from
    /// the standard `OTEL_EXPORTER_OTLP_HEADERS` variable (`key=value,key=value`). Call it outside
    /// an async context (the blocking HTTP client must not be created or dropped on a runtime
    /// thread).
    pub fn new(
        base: &str,
        peer: Peer,
        interval: Duration,
        extra_ca: &[CertificateDer<'static>],
    ) -> Result<OtlpConsumer, OtlpError> {
        let bad = |e: &dyn std::fmt::Display| OtlpError(base.to_string(), e.to_string());
        let uri: http::Uri = base.parse().map_err(|e| bad(&e))?;
        if !matches!(uri.scheme_str(), Some("http" | "https")) || uri.authority().is_none() {
            return Err(bad(
                &"give the collector's origin, http://host:port or https://host:port (OTLP/HTTP)",
            ));
        }
        // Built here rather than by the exporter, so that https collectors get the proxy's TLS
        // settings (this reqwest has no crypto provider of its own: it is always handed one,
        // also for http, where it stays unused); one client serves both exporters.
        let tls = crate::tls::client_config(extra_ca, &[b"http/1.1"])
            .map_err(|e| bad(&format!("--otlp-ca: {e}")))?;
        let client = reqwest_otlp::blocking::Client::builder()
            .timeout(EXPORT_TIMEOUT)
            .tls_backend_preconfigured(tls)
            .build()
            .map_err(|e| bad(&crate::http::error_chain(&e)))?;
        let base = base.trim_end_matches('/');
        let spans = opentelemetry_otlp::SpanExporter::builder()
            .with_http()
            .with_http_client(client.clone())
            .with_protocol(Protocol::HttpBinary)
            .with_endpoint(format!("{base}/v1/traces"))
            .with_timeout(EXPORT_TIMEOUT)
            .build()
            .map_err(|e| bad(&e))?;
        let metrics = opentelemetry_otlp::MetricExporter::builder()
            .with_http()
            .with_http_client(client)
            .with_protocol(Protocol::HttpBinary)
            .with_endpoint(format!("{base}/v1/metrics"))
            .with_timeout(EXPORT_TIMEOUT)
            .build()
            .map_err(|e| bad(&e))?;
        let resource = Resource::builder()
            .with_service_name("mcp-triage-proxy")
            .build();
        let tracer_provider = SdkTracerProvider::builder()
            .with_batch_exporter(spans)
            .with_resource(resource.clone())
            .build();
        let reader = PeriodicReader::builder(metrics)
            .with_interval(interval)
            .build();
        let meter_provider = SdkMeterProvider::builder()
            .with_reader(reader)
            .with_resource(resource)
            .build();
        let tracer = tracer_provider.tracer("mcp-triage-proxy");
        let duration = meter_provider
            .meter("mcp-triage-proxy")
            .f64_histogram("mcp.client.operation.duration")
            .with_unit("s")
            .with_description("Duration of an MCP request as the proxy observed it")
            .build();
        Ok(OtlpConsumer {
            tracer_provider,
            meter_provider,
            tracer,
            duration,
            peer,
        })
    }
}

/// `error.type` per the conventions: the JSON-RPC error code as a string, `tool_error`, or the
/// transport/protocol class (the outcome in lower case); none for a success.
pub fn error_type(r: &Record) -> Option<String> {
    let v = r.verdict.as_ref();
    match r.outcome.as_str() {
        "TOOL_SUCCESS" | "RESULT" | "ACCEPTED" | "INPUT_REQUIRED" | "TASK_CREATED" => None,
        "TOOL_ERROR" => Some("tool_error".into()),
        "JSONRPC_ERROR" => v.and_then(|v| v.code).map(|c| c.to_string()),
        other => Some(
            v.and_then(|v| v.code)
                .map(|c| c.to_string())
                .unwrap_or_else(|| other.to_ascii_lowercase()),
        ),
    }
}

/// The span and metric attributes of a record.
pub fn attributes(r: &Record, peer: &Peer) -> Vec<KeyValue> {
    let mut a = Vec::with_capacity(12);
    if let Some(m) = &r.method {
        a.push(KeyValue::new("mcp.method.name", m.clone()));
    }
    if let Some(t) = &r.tool {
        a.push(KeyValue::new("gen_ai.tool.name", t.clone()));
    }
    if let Some(id) = &r.id {
        let id = match id {
            serde_json::Value::String(s) => s.clone(),
            other => other.to_string(),
        };
        a.push(KeyValue::new("jsonrpc.request.id", id));
    }
    if let Some(v) = &r.protocol_version {
        a.push(KeyValue::new("mcp.protocol.version", v.clone()));
    }
    // Already dropped from the record when the header name is redacted.
    if let Some(s) = &r.session_id {
        a.push(KeyValue::new("mcp.session.id", s.clone()));
    }
    if let Some(e) = error_type(r) {
        a.push(KeyValue::new("error.type", e));
    }
    if let Some(code) = r.verdict.as_ref().and_then(|v| v.code) {
        a.push(KeyValue::new("rpc.response.status_code", code.to_string()));
    }
    if let Some(s) = r.http_statuses.first() {
        a.push(KeyValue::new("http.response.status_code", i64::from(*s)));
    }
    a.push(KeyValue::new(
        "network.transport",
        if r.transport == "stdio" {
            "pipe"
        } else {
            "tcp"
        },
    ));
    if let Some(h) = &peer.address {
        a.push(KeyValue::new("server.address", h.clone()));
    }
    if let Some(p) = peer.port {
        a.push(KeyValue::new("server.port", i64::from(p)));
    }
    if let Some(l) = &r.layer {
        a.push(KeyValue::new("mcp_triage.layer", l.as_str()));
    }
    a.push(KeyValue::new("mcp_triage.outcome", r.outcome.as_str()));
    a
}

impl RecordConsumer for OtlpConsumer {
    fn consume(&mut self, r: &Record) {
        if r.kind != RecordKind::Request {
            return;
        }
        let attrs = attributes(r, &self.peer);
        let method = r.method.clone().unwrap_or_default();
        let name = match &r.tool {
            Some(t) => format!("{method} {t}"),
            None => method,
        };
        let end = SystemTime::now();
        let took = Duration::from_secs_f64(r.duration_ms.max(0.0) / 1000.0);
        let start = end.checked_sub(took).unwrap_or(end);
        let mut span = self
            .tracer
            .span_builder(name)
            .with_kind(SpanKind::Client)
            .with_start_time(start)
            .with_attributes(attrs.clone())
            .start(&self.tracer);
        if let Some(e) = error_type(r) {
            span.set_status(Status::error(e));
        }
        span.end_with_timestamp(end);
        // The histogram keeps low-cardinality attributes only (no ids).
        let metric_attrs: Vec<KeyValue> = attrs
            .into_iter()
            .filter(|kv| !matches!(kv.key.as_str(), "jsonrpc.request.id" | "mcp.session.id"))
            .collect();
        self.duration.record(took.as_secs_f64(), &metric_attrs);
    }

    fn close(&mut self) {
        let _ = self.tracer_provider.force_flush();
        let _ = self.meter_provider.force_flush();
        let _ = self.tracer_provider.shutdown();
        let _ = self.meter_provider.shutdown();
    }
}
