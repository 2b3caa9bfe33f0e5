//! Scenario instances: a scenario with its parameters and its own counters.
//!
//! Counters belong to an instance, not to an MCP session, because Cakewalk counts per
//! caller and the kitchen's per-URL instances (`/s/{scenario}/mcp?…`) must keep parallel
//! tests apart. An instance is reused while (scenario, params, instance tag) stay the
//! same, so counters survive reconnects exactly as Cakewalk's do.

use std::collections::{BTreeMap, HashMap};
use std::sync::Mutex;

use serde_json::{json, Map, Value};

use crate::scenarios::{Params, Scenario};

/// Counter key: every POST to the MCP endpoint of the instance.
pub const HTTP_REQUEST: &str = "http_request";
/// Counter key: every `tools/call`, whatever the tool.
pub const TOOLS_CALL: &str = "tools_call";
/// Counter key: every `resources/list`.
pub const RESOURCES_LIST: &str = "resources_list";
/// Counter key: every `prompts/list`.
pub const PROMPTS_LIST: &str = "prompts_list";

/// A state record of a deferred (task) call.
#[derive(Clone, Debug)]
pub struct TaskRecord {
    /// The final JSON-RPC result of the underlying call.
    pub result: Value,
    /// When it becomes `completed` (milliseconds since the Unix epoch).
    pub ready_at_ms: u64,
    /// When it was created.
    pub created_ms: u64,
    /// Lifetime after creation, in ms.
    pub ttl_ms: u64,
    /// Suggested polling interval, in ms.
    pub poll_ms: u64,
    /// Set by `tasks/cancel` before the task completed.
    pub cancelled: bool,
}

/// One scenario instance.
pub struct Instance {
    /// Key: `{scenario}` plus canonical params plus the optional instance tag.
    pub key: String,
    /// The scenario.
    pub scenario: &'static dyn Scenario,
    /// Parameters as given (for display).
    pub given_params: Value,
    /// Parameters merged over defaults.
    pub params: Params,
    counts: Mutex<BTreeMap<String, u64>>,
    side: Mutex<SideEffects>,
    /// Free-form scenario state (e.g. chaos PRNG position).
    pub bag: Mutex<Map<String, Value>>,
    /// Deferred calls by task id.
    pub tasks: Mutex<HashMap<String, TaskRecord>>,
}

/// State changed by the side-effect tools (`increment_counter`, `set_value`).
#[derive(Default, Debug)]
struct SideEffects {
    counter: i64,
    values: BTreeMap<String, Value>,
}

impl Instance {
    /// A fresh instance with counters at zero.
    pub fn new(key: String, scenario: &'static dyn Scenario, given_params: Value) -> Instance {
        let params = Params::resolve(scenario.info(), &given_params);
        Instance {
            key,
            scenario,
            given_params,
            params,
            counts: Mutex::new(BTreeMap::new()),
            side: Mutex::new(SideEffects::default()),
            bag: Mutex::new(Map::new()),
            tasks: Mutex::new(HashMap::new()),
        }
    }

    /// Increment a counter and return the new, 1-based value.
    pub fn bump(&self, key: &str) -> u64 {
        let mut c = self.counts.lock().expect("counter lock");
        let v = c.entry(key.to_string()).or_insert(0);
        *v += 1;
        *v
    }

    /// Current value of a counter.
    pub fn count(&self, key: &str) -> u64 {
        self.counts
            .lock()
            .expect("counter lock")
            .get(key)
            .copied()
            .unwrap_or(0)
    }

    /// Counters and side-effect state as JSON.
    pub fn snapshot(&self) -> Value {
        let counts = self.counts.lock().expect("counter lock").clone();
        let side = self.side.lock().expect("side lock");
        json!({
            "instance": self.key,
            "scenario": self.scenario.info().id,
            "params": self.given_params,
            "counters": counts,
            "state": { "counter": side.counter, "values": side.values },
        })
    }

    /// Counters and side effects back to zero (scenario bag and tasks too).
    pub fn reset(&self) {
        self.counts.lock().expect("counter lock").clear();
        *self.side.lock().expect("side lock") = SideEffects::default();
        self.bag.lock().expect("bag lock").clear();
        self.tasks.lock().expect("tasks lock").clear();
    }

    /// `read_counter`.
    pub fn read_counter(&self) -> i64 {
        self.side.lock().expect("side lock").counter
    }

    /// `increment_counter`: adds `by` and returns the new value.
    pub fn increment_counter(&self, by: i64) -> i64 {
        let mut s = self.side.lock().expect("side lock");
        s.counter = s.counter.saturating_add(by);
        s.counter
    }

    /// `set_value`: returns the previous value.
    pub fn set_value(&self, key: &str, value: Value) -> Option<Value> {
        self.side
            .lock()
            .expect("side lock")
            .values
            .insert(key.to_string(), value)
    }
}

/// Canonical text of a params object (keys sorted) for instance keys.
pub fn canonical(v: &Value) -> String {
    match v {
        Value::Object(m) => {
            let sorted: BTreeMap<&String, &Value> = m.iter().collect();
            let inner: Vec<String> = sorted
                .into_iter()
                .map(|(k, v)| format!("{}:{}", Value::String(k.clone()), canonical(v)))
                .collect();
            format!("{{{}}}", inner.join(","))
        }
        Value::Array(a) => format!(
            "[{}]",
            a.iter().map(canonical).collect::<Vec<_>>().join(",")
        ),
        other => other.to_string(),
    }
}
