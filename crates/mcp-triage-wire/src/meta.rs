//! The `_meta` member names that more than one crate writes or reads: the client sends them, the
//! kitchen answers them, the proxy records them. One home, so a name cannot drift between the
//! side that writes it and the side that looks for it.
//!
//! The `io.modelcontextprotocol/` names are the spec's (2026-07-28, per-request metadata of the
//! modern era, see `../shared/spec/mcp-spec-digest.md`); `mcp-triage/idempotencyKey` is this
//! project's own (`call --idempotency-key`), which the proxy's retry judgement trusts.

/// The request's protocol revision (modern era).
pub const PROTOCOL_VERSION: &str = "io.modelcontextprotocol/protocolVersion";
/// The client's capabilities, per request (modern era).
pub const CLIENT_CAPABILITIES: &str = "io.modelcontextprotocol/clientCapabilities";
/// The client's identity (`name`, `version`), per request (modern era).
pub const CLIENT_INFO: &str = "io.modelcontextprotocol/clientInfo";
/// The idempotency key a caller gives a `tools/call`: a resend carrying it may run the tool
/// twice only if the server ignores it, so the proxy does not warn `UNSAFE_RETRY` for it.
pub const IDEMPOTENCY_KEY: &str = "mcp-triage/idempotencyKey";
