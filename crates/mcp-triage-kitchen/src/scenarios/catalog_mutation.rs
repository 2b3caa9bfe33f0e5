//! `catalog.mutation`: the tool list changes over time, announced with
//! `notifications/tools/list_changed`.
//!
//! Cakewalk keeps the mutation state on its ScenarioSession and starts one timer per
//! mutation when the session is configured. The kitchen computes the list from the elapsed
//! time instead (the list at time t is the initial list with every mutation whose `afterMs`
//! has passed applied in order), so `tools/list` and `tools/call` agree exactly with the
//! notifications, and only the notifications need timers. The timeline starts per legacy
//! session at `initialize` (each session sees its own timeline and hears its notifications
//! on its standalone GET stream), and, in the 2026 era (no sessions), at the instance's first
//! modern request (heard on `subscriptions/listen` streams with `toolsListChanged`).
//!
//! Two points where the kitchen states Cakewalk's intent rather than copying an accident of
//! its implementation (`CatalogMutationState.cs` at the pinned commit):
//! - Initial list: the scenario summary says "starts with an empty tool list"; the code creates
//!   an empty collection and adds `run_configured_test_scenario` to it, so that tool is listed
//!   (the kitchen does the same).
//! - `listChangedNotifications` N: Cakewalk produces the extra N−1 by adding and removing
//!   transient `{name}_burst_{i}` tools, each add and remove being a collection change (so up to
//!   2N−1 notifications, and transient tools a fast `tools/list` could see). The kitchen sends
//!   exactly N notifications and no transient tools.

use std::time::Duration;

use futures_util::future::BoxFuture;
use serde_json::{json, Value};

use crate::instance_state::{CatalogClock, InstanceState};
use crate::plugin::ToolCx;
use crate::plugin::{
    Origin, Outcome, ParamKind, ParamSpec, Params, ParamsError, Scenario, ScenarioInfo, ToolReply,
};

/// `catalog.mutation`.
pub struct Mutation;

/// Most mutations one instance accepts (an explicit bound on timers and list work).
pub const MAX_MUTATIONS: usize = 256;
/// Most notifications one mutation may send.
pub const MAX_NOTIFICATIONS: u32 = 100;

static INFO: ScenarioInfo = ScenarioInfo {
    id: "catalog.mutation",
    summary: "Tools are added, removed or renamed after configured delays, each change announced with tools/list_changed.",
    docs: "The tool list starts as Cakewalk's: only `run_configured_test_scenario` (with `includeCatalogue: true`, the kitchen's \
           side-effect and reference tools follow it), and the server declares `tools.listChanged`. Each entry of `mutations` \
           `{action: add|remove|rename, toolName (\"extra_tool\"), afterMs (0), newName, listChangedNotifications (1)}` applies \
           `afterMs` after the start of the client's timeline: a legacy session's `initialize`, or the instance's first 2026 \
           request. Mutations apply in `afterMs` order (ties in list order). `add` lists a stub tool `toolName` (its call returns \
           `{\"tool\",\"message\":\"Stub tool executed.\"}`), `remove` unlists it, `rename` replaces `toolName` by a stub named \
           `newName`. A mutation that changes the list sends `listChangedNotifications` (at least 1) notifications: legacy on \
           the session's standalone GET stream, 2026 on `subscriptions/listen` streams that asked for `toolsListChanged`. One \
           that changes nothing (adding a listed name, removing or renaming an unlisted one) sends none. Only listed tools can \
           be called; a removed or renamed tool answers -32602 Unknown tool. Limits: 256 mutations, 100 notifications each.",
    params: &[
        ParamSpec { name: "mutations", kind: ParamKind::ObjectArray, default: "[]", choices: &[], doc: "Timed changes: `{action, toolName, afterMs, newName, listChangedNotifications}` (defaults add, extra_tool, 0, none, 1)." },
        ParamSpec { name: "includeCatalogue", kind: ParamKind::Boolean, default: "false", choices: &[], doc: "Kitchen extension: also list the side-effect and reference tools (they can then be removed or renamed too)." },
    ],
    outcome: Outcome::ToolSuccess,
    origin: Origin::Cakewalk,
};

/// One mutation with Cakewalk's defaults applied.
#[derive(Clone, Debug, PartialEq)]
struct Entry {
    action: Action,
    tool: String,
    after: Duration,
    new_name: Option<String>,
    notifications: u32,
}

#[derive(Clone, Copy, Debug, PartialEq)]
enum Action {
    Add,
    Remove,
    Rename,
}

fn parse(p: &Params) -> Result<Vec<Entry>, ParamsError> {
    let list = p.get("mutations").as_array().cloned().unwrap_or_default();
    if list.len() > MAX_MUTATIONS {
        return Err(ParamsError::TooManyMutations { max: MAX_MUTATIONS });
    }
    let mut out = Vec::with_capacity(list.len());
    for (i, m) in list.iter().enumerate() {
        let field = |k: &str| {
            m.as_object()
                .and_then(|o| o.iter().find(|(n, _)| n.eq_ignore_ascii_case(k)))
                .map(|(_, v)| v)
        };
        let bad = |member: &'static str, rule: &'static str| ParamsError::Mutation {
            index: i,
            member,
            rule,
        };
        let action = match field("action").map(|v| v.as_str()) {
            None => Action::Add,
            Some(Some("add")) => Action::Add,
            Some(Some("remove")) => Action::Remove,
            Some(Some("rename")) => Action::Rename,
            Some(_) => return Err(bad("action", "be \"add\", \"remove\" or \"rename\"")),
        };
        let tool = match field("toolName") {
            None => "extra_tool".to_string(),
            Some(Value::String(s)) if !s.trim().is_empty() => s.clone(),
            Some(_) => return Err(bad("toolName", "be a non-empty string")),
        };
        // Cakewalk clamps a negative delay to 0 (`Math.Max(0, afterMs)`).
        let after = match field("afterMs") {
            None => 0,
            Some(v) if v.is_i64() => v.as_i64().unwrap_or(0).max(0) as u64,
            Some(v) if v.is_u64() => v.as_u64().unwrap_or(0),
            Some(_) => return Err(bad("afterMs", "be an integer")),
        };
        let new_name = match field("newName") {
            None | Some(Value::Null) => None,
            Some(Value::String(s)) if !s.trim().is_empty() => Some(s.clone()),
            Some(_) => return Err(bad("newName", "be a non-empty string")),
        };
        if action == Action::Rename && new_name.is_none() {
            return Err(ParamsError::RenameWithoutNewName { index: i });
        }
        // Cakewalk sends at least one (`Math.Max(1, n)`).
        let notifications = match field("listChangedNotifications") {
            None => 1,
            Some(v) if v.is_i64() || v.is_u64() => {
                v.as_i64().unwrap_or(1).clamp(1, i64::from(u32::MAX)) as u32
            }
            Some(_) => return Err(bad("listChangedNotifications", "be an integer")),
        };
        if notifications > MAX_NOTIFICATIONS {
            return Err(ParamsError::TooManyNotifications {
                index: i,
                max: MAX_NOTIFICATIONS,
            });
        }
        out.push(Entry {
            action,
            tool,
            after: Duration::from_millis(after),
            new_name,
            notifications,
        });
    }
    // Stable: equal delays keep list order.
    out.sort_by_key(|e| e.after);
    Ok(out)
}

fn stub(name: &str, description: String) -> Value {
    json!({ "name": name, "description": description, "inputSchema": { "type": "object", "properties": {} } })
}

/// Apply `e` to `list`; true when the list changed.
fn apply(list: &mut Vec<Value>, e: &Entry) -> bool {
    let pos = |list: &Vec<Value>, n: &str| list.iter().position(|t| t["name"] == n);
    match e.action {
        Action::Add => {
            if pos(list, &e.tool).is_some() {
                return false;
            }
            list.push(stub(&e.tool, format!("Catalog mutation tool {}", e.tool)));
            true
        }
        Action::Remove => match pos(list, &e.tool) {
            Some(i) => {
                list.remove(i);
                true
            }
            None => false,
        },
        Action::Rename => {
            let (Some(i), Some(new)) = (pos(list, &e.tool), e.new_name.as_deref()) else {
                return false;
            };
            list.remove(i);
            if pos(list, new).is_none() {
                list.push(stub(new, format!("Renamed from {}", e.tool)));
            }
            true
        }
    }
}

fn initial(instance: &InstanceState) -> Vec<Value> {
    let mut v = vec![crate::catalogue::run_tool_definition()];
    if instance.params.bool("includeCatalogue") {
        v.extend(crate::catalogue::static_tools().iter().cloned());
    }
    v
}

/// The tool list after the mutations due by `elapsed`.
fn list_at(instance: &InstanceState, elapsed: Duration) -> Vec<Value> {
    let mut list = initial(instance);
    for e in parse(&instance.params).unwrap_or_default() {
        if e.after > elapsed {
            break;
        }
        apply(&mut list, &e);
    }
    list
}

impl Scenario for Mutation {
    fn info(&self) -> &'static ScenarioInfo {
        &INFO
    }
    fn validate(&self, p: &Params) -> Result<(), ParamsError> {
        parse(p).map(|_| ())
    }
    fn tool_list(&self, instance: &InstanceState, clock: &CatalogClock) -> Option<Vec<Value>> {
        Some(list_at(instance, clock.elapsed()))
    }
    fn tool_list_changes(&self, p: &Params) -> Vec<(Duration, u32)> {
        // Simulate the timeline once with the catalogue-less initial list: whether a
        // mutation changes anything does not depend on the catalogue tools unless a mutation
        // names one, so simulate with them when `includeCatalogue` is set.
        let mut list = vec![crate::catalogue::run_tool_definition()];
        if p.bool("includeCatalogue") {
            list.extend(crate::catalogue::static_tools().iter().cloned());
        }
        parse(p)
            .unwrap_or_default()
            .iter()
            .filter_map(|e| apply(&mut list, e).then_some((e.after, e.notifications)))
            .collect()
    }
    fn call_extra_tool(&self, name: &str, _cx: ToolCx) -> Option<BoxFuture<'static, ToolReply>> {
        // Only reached for listed tools (the caller checked the list at this moment).
        let name = name.to_string();
        Some(Box::pin(async move {
            ToolReply::text(json!({ "tool": name, "message": "Stub tool executed." }).to_string())
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn params(v: Value) -> Params {
        Params::resolve(&INFO, &v)
    }

    /// A bad mutation is a typed [`ParamsError`] naming its index and member, with the text
    /// the admin API has always answered.
    #[test]
    fn bad_mutations_are_typed() {
        let e = parse(&params(
            json!({ "mutations": [{}, { "action": "explode" }] }),
        ))
        .unwrap_err();
        assert!(matches!(
            e,
            ParamsError::Mutation {
                index: 1,
                member: "action",
                ..
            }
        ));
        assert_eq!(
            e.to_string(),
            "mutations[1].action must be \"add\", \"remove\" or \"rename\""
        );
        let e = parse(&params(json!({ "mutations": [{ "action": "rename" }] }))).unwrap_err();
        assert!(matches!(e, ParamsError::RenameWithoutNewName { index: 0 }));
        assert_eq!(e.to_string(), "mutations[0]: rename needs newName");
        let e = parse(&params(
            json!({ "mutations": [{ "listChangedNotifications": 101 }] }),
        ))
        .unwrap_err();
        assert!(matches!(
            e,
            ParamsError::TooManyNotifications { index: 0, max: 100 }
        ));
        assert_eq!(
            e.to_string(),
            "mutations[0].listChangedNotifications must be at most 100"
        );
    }

    #[test]
    fn defaults_and_validation_follow_cakewalk() {
        let e = parse(&params(json!({ "mutations": [{}] }))).unwrap();
        assert_eq!(e[0].action, Action::Add);
        assert_eq!(e[0].tool, "extra_tool");
        assert_eq!(e[0].after, Duration::ZERO);
        assert_eq!(e[0].notifications, 1);
        let e = parse(&params(
            json!({ "mutations": [{ "afterMs": -5, "listChangedNotifications": 0 }] }),
        ))
        .unwrap();
        assert_eq!((e[0].after, e[0].notifications), (Duration::ZERO, 1));
        assert!(parse(&params(json!({ "mutations": [{ "action": "explode" }] }))).is_err());
        assert!(parse(&params(json!({ "mutations": [{ "action": "rename" }] }))).is_err());
        assert!(parse(&params(
            json!({ "mutations": [{ "listChangedNotifications": 1000 }] })
        ))
        .is_err());
        assert!(parse(&params(json!({}))).unwrap().is_empty());
    }

    #[test]
    fn timeline_applies_in_delay_order_and_skips_no_ops() {
        let p = params(json!({ "mutations": [
            { "action": "rename", "toolName": "a", "newName": "b", "afterMs": 200, "listChangedNotifications": 2 },
            { "action": "add", "toolName": "a", "afterMs": 100 },
            { "action": "remove", "toolName": "zzz", "afterMs": 150 },
            { "action": "add", "toolName": "a", "afterMs": 160 },
            { "action": "remove", "toolName": "b", "afterMs": 300 }
        ] }));
        assert_eq!(
            Mutation.tool_list_changes(&p),
            vec![
                (Duration::from_millis(100), 1),
                (Duration::from_millis(200), 2),
                (Duration::from_millis(300), 1)
            ]
        );
    }
}
