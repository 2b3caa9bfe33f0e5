//! Scenario instances: a scenario bound to its parameters and its own state.
//!
//! The state a scenario may touch (counters, side effects, tasks, change events) is
//! [`InstanceState`], below the plug-in API; an [`Instance`] adds the scenario it serves and
//! the key the kitchen finds it by. An instance is reused while (scenario, params, instance
//! tag) stay the same, so counters survive reconnects exactly as Cakewalk's do.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use serde_json::{json, Value};

use crate::plugin::{Params, Scenario};

pub use crate::instance_state::{
    CatalogClock, Change, ChangeKind, ChangeScope, InstanceState, TaskRecord, COUNTER_RESOURCE_URI,
    HTTP_REQUEST, PROMPTS_LIST, RESOURCES_LIST, TOOLS_CALL,
};

/// One scenario instance.
pub struct Instance {
    /// Key: `{scenario}` plus canonical params plus the optional instance tag.
    pub key: String,
    /// The scenario.
    pub scenario: &'static dyn Scenario,
    /// Parameters as given (for display).
    pub given_params: Value,
    /// What the scenario sees: parameters merged over defaults, counters, side effects.
    pub state: Arc<InstanceState>,
    /// Recency stamp for LRU eviction of per-URL instances.
    pub(crate) last_used: AtomicU64,
}

impl Instance {
    /// A fresh instance with counters at zero, its idempotency keys in `idempotency`.
    pub fn new(
        key: String,
        scenario: &'static dyn Scenario,
        given_params: Value,
        idempotency: crate::idempotency::Keys,
    ) -> Instance {
        let params = Params::resolve(scenario.info(), &given_params);
        Instance {
            key,
            scenario,
            given_params,
            state: Arc::new(InstanceState::new(params, idempotency)),
            last_used: AtomicU64::new(0),
        }
    }

    /// Mark as used at recency stamp `tick`.
    pub(crate) fn touch(&self, tick: u64) {
        self.last_used.store(tick, Ordering::Relaxed);
    }

    /// Counters and side-effect state as JSON.
    pub fn snapshot(&self) -> Value {
        let (counters, state) = self.state.counters_json();
        json!({
            "instance": self.key,
            "scenario": self.scenario.info().id,
            "params": self.given_params,
            "counters": counters,
            "state": state,
        })
    }
}

/// Canonical text of a params object (keys sorted) for instance keys: the wire crate's
/// canonical JSON, the same text the arguments digest hashes.
pub use mcp_triage_wire::canonical::to_canonical_json as canonical;
