//! mcp-triage inside Envoy: an HTTP filter for Envoy's dynamic modules
//! (`envoy.extensions.filters.http.dynamic_modules.v3.DynamicModuleFilter`), over the ABI of
//! Envoy 1.40, with the classifier of `mcp-triage-core` through the same C ABI the nginx module
//! calls (`mcp-triage-ffi`), so that Envoy, nginx and `mcp-triage proxy` give one exchange one
//! verdict and one JSON line.
//!
//! Per stream: the request body is copied once, up to `maxBodyBytes`, for `mcpt_request_parse`;
//! the response head makes a classifier; each response body chunk is fed as Envoy passes it on
//! (the filter never stops, buffers or changes anything, so SSE streams); `stream_complete`, which
//! Envoy calls for every stream (an upstream reset, a timeout and the client's abort included)
//! before it writes the access log, takes the verdict (`finish`, or `interrupted` when the body
//! did not end) and sets the `mcp_triage` dynamic metadata, the JSON line included, and counts
//! the metrics in Envoy's stats. See integrations/envoy/README.md.

pub mod abi;
pub mod config;
pub mod ends;
mod filter;
mod finish;
pub mod hooks;
