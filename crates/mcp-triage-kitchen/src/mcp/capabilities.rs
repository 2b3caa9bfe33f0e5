//! What the kitchen says about itself: server capabilities, server info and instructions
//! (per era, with the tasks capability of scenarios that serve tasks).
//!
//! Both eras announce the same server, one in `initialize` (`legacy`), the other in
//! `server/discover` (`dispatch`); keeping the text here means the two cannot drift apart,
//! and a scenario's tasks capability is added in one place.

use serde_json::{json, Value};

use crate::instance::Instance;
use crate::protocol::Era;

/// Capabilities by era. Legacy change notifications go on the session's GET stream; 2026
/// ones on `subscriptions/listen` streams. What can change: the tool list (`catalog.mutation`,
/// `test_trigger_tool_change`), the prompt list (`test_trigger_prompt_change`) and the counter
/// resource (`increment_counter`); the resource list never changes, so the 2026 era (where a
/// listen stream acknowledges only what the server honours) does not claim
/// `resources.listChanged`.
pub(super) fn server_capabilities(era: Era) -> Value {
    match era {
        Era::Legacy => json!({
            "tools": { "listChanged": true },
            "resources": { "subscribe": true, "listChanged": true },
            "prompts": { "listChanged": true },
            "completions": {},
            "logging": {},
        }),
        Era::Modern => json!({
            "tools": { "listChanged": true },
            "resources": { "subscribe": true },
            "prompts": { "listChanged": true },
            "completions": {},
        }),
    }
}

/// Add the tasks capability (2025-11-25) for scenarios that serve legacy tasks, or the tasks
/// extension (2026), which every instance serves (its fixture tools are in every catalogue).
pub(super) fn with_tasks(mut caps: Value, instance: &Instance, era: Era) -> Value {
    match era {
        Era::Legacy if instance.scenario.supports_tasks() => {
            caps["tasks"] =
                json!({ "list": {}, "cancel": {}, "requests": { "tools": { "call": {} } } })
        }
        Era::Legacy => {}
        Era::Modern => caps["extensions"] = json!({ crate::tasks::EXTENSION: {} }),
    }
    if instance
        .scenario
        .honours_idempotency_keys(&instance.state.params)
    {
        // SEP-3182's shape (a closed draft): say so, so a client may rely on it.
        caps["tools"]["idempotency"] = json!({});
    }
    caps
}

/// `serverInfo` of `initialize` (the legacy era).
pub(super) fn server_info() -> Value {
    json!({ "name": "mcp-triage-kitchen", "title": "mcp-triage kitchen (fault-injection MCP server)", "version": env!("CARGO_PKG_VERSION") })
}

/// `instructions`: which scenario the client is talking to, and how to exercise it.
pub(super) fn instructions(instance: &Instance) -> String {
    format!(
        "mcp-triage kitchen, scenario `{}`: {} Call `run_configured_test_scenario` to exercise it.",
        instance.scenario.info().id,
        instance.scenario.info().summary
    )
}
