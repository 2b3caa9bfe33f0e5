//! What a scenario instance keeps: its parameters, counters, side effects, scenario state,
//! tasks and change events, without the scenario itself.
//!
//! This is the handle a scenario is given ([`crate::plugin::WireCx::instance`],
//! [`crate::plugin::ToolCx::instance`]); the instance that binds it to its scenario is
//! [`crate::instance::Instance`], above the plug-in API.
//!
//! Counters belong to an instance, not to an MCP session, because Cakewalk counts per
//! caller and the kitchen's per-URL instances (`/s/{scenario}/mcp?…`) must keep parallel
//! tests apart. An instance is reused while (scenario, params, instance tag) stay the
//! same, so counters survive reconnects exactly as Cakewalk's do.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{json, Map, Value};
use tokio::sync::broadcast;

use crate::plugin::spec::Params;

/// Counter key: every POST to the MCP endpoint of the instance.
pub const HTTP_REQUEST: &str = "http_request";
/// Counter key: every `tools/call`, whatever the tool.
pub const TOOLS_CALL: &str = "tools_call";
/// Counter key: every `resources/list`.
pub const RESOURCES_LIST: &str = "resources_list";
/// Counter key: every `prompts/list`.
pub const PROMPTS_LIST: &str = "prompts_list";

/// URI of the resource that shows the instance's side-effect counter. It changes whenever
/// `increment_counter` runs, so it is the catalogue's resource for `resources/subscribe`
/// (legacy) and `subscriptions/listen` `resourceSubscriptions` (2026) tests.
pub const COUNTER_RESOURCE_URI: &str = "kitchen://instance/counter";

/// Events buffered per instance for slow listeners; a listener that falls further behind
/// skips the oldest (a change notification only says "re-fetch", so a skipped duplicate
/// loses nothing a re-fetch does not recover).
const EVENT_BUFFER: usize = 256;

/// A change a listener may be told about.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ChangeKind {
    /// `notifications/tools/list_changed`.
    ToolsListChanged,
    /// `notifications/prompts/list_changed`.
    PromptsListChanged,
    /// `notifications/resources/updated` for this URI.
    ResourceUpdated(String),
}

/// Who should hear a change.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ChangeScope {
    /// Everyone listening on the instance (legacy GET streams and 2026 listen streams).
    Instance,
    /// Only 2026 `subscriptions/listen` streams: the instance's modern catalogue timeline
    /// (legacy sessions each have their own timeline and hear it on their GET stream).
    Modern,
}

/// One change event on an instance.
#[derive(Clone, Debug)]
pub struct Change {
    /// What changed.
    pub kind: ChangeKind,
    /// Who hears it.
    pub scope: ChangeScope,
}

/// Where a client's catalogue timeline started: a legacy session's start, or (2026, no
/// sessions) the instance's first modern request. Scenarios whose catalogue changes over
/// time (`catalog.mutation`) show the catalogue as of `started.elapsed()`.
#[derive(Clone, Copy, Debug, Default)]
pub struct CatalogClock {
    /// Start of the timeline (`None`: no timeline, time zero).
    pub started: Option<Instant>,
}

impl CatalogClock {
    /// Time since the timeline started (zero without a timeline).
    pub fn elapsed(&self) -> Duration {
        self.started.map(|s| s.elapsed()).unwrap_or_default()
    }
}

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

/// An instance's state: everything but the scenario it serves. Reset by `/kitchen/reset`.
pub struct InstanceState {
    /// Parameters merged over defaults.
    pub params: Params,
    counts: Mutex<BTreeMap<String, u64>>,
    side: Mutex<SideEffects>,
    /// Free-form scenario state (e.g. chaos PRNG position).
    pub bag: Mutex<Map<String, Value>>,
    /// Deferred calls by task id (`tasks.deferred`, 2025-11-25 tasks).
    pub tasks: Mutex<HashMap<String, TaskRecord>>,
    /// Tasks of the 2026 extension (`io.modelcontextprotocol/tasks`), shared with their jobs.
    pub ext_tasks: Arc<crate::tasks::TaskStore>,
    /// Results by idempotency key, for scenarios that honour keys (this instance's part of the
    /// kitchen's one bounded store).
    pub idempotency: crate::idempotency::Keys,
    /// Change events (list changes, resource updates) for listening streams.
    events: broadcast::Sender<Change>,
    /// Start of the modern-era catalogue timeline and its generation (bumped by reset, so a
    /// timer of an earlier timeline stops).
    modern_epoch: Mutex<(Option<Instant>, u64)>,
}

/// State changed by the side-effect tools (`increment_counter`, `set_value`).
#[derive(Default, Debug)]
struct SideEffects {
    counter: i64,
    values: BTreeMap<String, Value>,
}

impl InstanceState {
    /// Fresh state with counters at zero, its idempotency keys in `idempotency`.
    pub fn new(params: Params, idempotency: crate::idempotency::Keys) -> InstanceState {
        InstanceState {
            params,
            counts: Mutex::new(BTreeMap::new()),
            side: Mutex::new(SideEffects::default()),
            bag: Mutex::new(Map::new()),
            tasks: Mutex::new(HashMap::new()),
            ext_tasks: Arc::default(),
            idempotency,
            events: broadcast::channel(EVENT_BUFFER).0,
            modern_epoch: Mutex::new((None, 0)),
        }
    }

    /// Announce a change to everyone listening (nobody listening is fine).
    pub fn emit(&self, kind: ChangeKind, scope: ChangeScope) {
        let _ = self.events.send(Change { kind, scope });
    }

    /// Listen to this instance's changes from now on.
    pub fn listen(&self) -> broadcast::Receiver<Change> {
        self.events.subscribe()
    }

    /// The modern-era catalogue clock, started by the first call. Returns the clock, and
    /// `Some(generation)` when this call started it (the caller schedules the timeline).
    pub fn modern_clock(&self) -> (CatalogClock, Option<u64>) {
        let mut e = self.modern_epoch.lock().expect("epoch lock");
        match e.0 {
            Some(t) => (CatalogClock { started: Some(t) }, None),
            None => {
                let now = Instant::now();
                e.0 = Some(now);
                e.1 += 1;
                (CatalogClock { started: Some(now) }, Some(e.1))
            }
        }
    }

    /// Whether the modern timeline of generation `generation` is still the current one.
    pub fn modern_generation_is(&self, generation: u64) -> bool {
        let e = self.modern_epoch.lock().expect("epoch lock");
        e.0.is_some() && e.1 == generation
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

    /// Counters and side-effect state as JSON (the instance adds its key, scenario and given
    /// parameters).
    pub fn counters_json(&self) -> (Value, Value) {
        let counts = self.counts.lock().expect("counter lock").clone();
        let side = self.side.lock().expect("side lock");
        (
            json!(counts),
            json!({ "counter": side.counter, "values": side.values }),
        )
    }

    /// Counters and side effects back to zero (scenario bag and tasks too).
    pub fn reset(&self) {
        self.counts.lock().expect("counter lock").clear();
        *self.side.lock().expect("side lock") = SideEffects::default();
        self.bag.lock().expect("bag lock").clear();
        self.tasks.lock().expect("tasks lock").clear();
        self.ext_tasks.clear();
        self.modern_epoch.lock().expect("epoch lock").0 = None;
    }

    /// `read_counter`.
    pub fn read_counter(&self) -> i64 {
        self.side.lock().expect("side lock").counter
    }

    /// `increment_counter`: adds `by` and returns the new value.
    pub fn increment_counter(&self, by: i64) -> i64 {
        let (before, after) = {
            let mut s = self.side.lock().expect("side lock");
            let before = s.counter;
            s.counter = s.counter.saturating_add(by);
            (before, s.counter)
        };
        if before != after {
            self.emit(
                ChangeKind::ResourceUpdated(COUNTER_RESOURCE_URI.into()),
                ChangeScope::Instance,
            );
        }
        after
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
