//! Which cases a hop is judged on. Most are rows of the kitchen plan ([`crate::plan`]): our
//! own client's call of a scenario, whose expected outcome the plan already states; through a
//! hop they must end as the kitchen's journal says the kitchen answered. One row per failure
//! layer a hop can lose: transport 4xx/5xx (with and without `Retry-After`), a dropped
//! connection, a wrong content type, JSON-RPC errors, `isError`, SSE results, cut streams and
//! resumption, session expiry, input rounds. Two cases are not calls: the tool annotations of
//! `tools/list` and the time to the first SSE event.
//!
//! Left out on purpose: `auth.*` (a hop in front of OAuth is a configuration of its own),
//! `tasks.*` (polling outlives a per-case time limit worth having) and the `timeout.*` hangs
//! (they measure the client, not the hop).

use crate::plan::{plan, PlanEra, PlanRow};

/// What a hop case does.
#[derive(Clone, Debug)]
pub enum HopKind {
    /// Our client makes the row's call through the hop.
    Call(PlanRow),
    /// `tools/list` through the hop and directly; the annotations must match.
    Annotations,
    /// A streamed call (progress every `interval_ms` for `total_ms`), timed directly and
    /// through the hop to its first SSE event.
    FirstEvent {
        /// How long the kitchen streams.
        total_ms: u64,
        /// Gap between its progress events.
        interval_ms: u64,
    },
}

/// One case of `judge --hop`.
#[derive(Clone, Debug)]
pub struct HopCase {
    /// The case id (`errors.tool_error/modern`).
    pub id: String,
    /// The kitchen scenario it runs on.
    pub scenario: &'static str,
    /// What it does.
    pub kind: HopKind,
}

/// The plan rows a hop is judged on: (scenario, era, variant). A variant names a plan row's
/// `variant` exactly; "" is the scenario's default row.
const ROWS: &[(&str, PlanEra, &str)] = &[
    ("baseline", PlanEra::Modern, ""),
    ("baseline", PlanEra::Legacy, ""),
    ("errors.tool_error", PlanEra::Modern, ""),
    ("errors.tool_error", PlanEra::Legacy, ""),
    ("errors.jsonrpc_error", PlanEra::Modern, ""),
    ("errors.jsonrpc_error", PlanEra::Legacy, ""),
    ("errors.http_status_sequence", PlanEra::Modern, ""),
    ("errors.http_status_per_method", PlanEra::Modern, ""),
    ("errors.rate_limited", PlanEra::Modern, ""),
    ("errors.rate_limited", PlanEra::Legacy, ""),
    (
        "errors.rate_limited",
        PlanEra::Modern,
        "SEP-3304 -32023, unannotated tool",
    ),
    ("errors.content_type", PlanEra::Modern, ""),
    ("errors.malformed_payload", PlanEra::Modern, ""),
    ("errors.connection_close", PlanEra::Modern, ""),
    ("errors.accepted_for_request", PlanEra::Modern, ""),
    ("sse.keepalive", PlanEra::Modern, ""),
    ("sse.cut_before_response", PlanEra::Modern, ""),
    ("sse.cut_mid_event", PlanEra::Modern, ""),
    ("sse.cut_mid_event", PlanEra::Legacy, ""),
    ("sse.priming_then_close", PlanEra::Legacy, ""),
    ("sse.server_request", PlanEra::Modern, ""),
    ("sse.server_request", PlanEra::Legacy, ""),
    ("session.expire", PlanEra::Legacy, ""),
];

/// The id of a row's case: `scenario/era`, then the variant in words when it has one.
fn row_id(r: &PlanRow) -> String {
    let mut id = format!("{}/{}", r.scenario, r.era.as_str());
    if !r.variant.is_empty() {
        let v: String = r
            .variant
            .split(|c: char| !c.is_ascii_alphanumeric())
            .filter(|w| !w.is_empty())
            .collect::<Vec<_>>()
            .join("_")
            .to_ascii_lowercase();
        id.push('/');
        id.push_str(&v);
    }
    id
}

/// Every hop case, in the order they run.
pub fn all() -> Vec<HopCase> {
    let rows = plan();
    let mut out: Vec<HopCase> = ROWS
        .iter()
        .filter_map(|(scenario, era, variant)| {
            rows.iter()
                .find(|r| r.scenario == *scenario && r.era == *era && r.variant == *variant)
        })
        .map(|r| HopCase {
            id: row_id(r),
            scenario: r.scenario,
            kind: HopKind::Call(r.clone()),
        })
        .collect();
    out.push(HopCase {
        id: "tools_list.annotations".into(),
        scenario: "baseline",
        kind: HopKind::Annotations,
    });
    out.push(HopCase {
        id: "sse.first_event".into(),
        scenario: "timeout.progress_keepalive",
        kind: HopKind::FirstEvent {
            total_ms: 2000,
            interval_ms: 200,
        },
    });
    out
}

/// What a case checks, for `--list`.
pub fn describe(c: &HopCase) -> String {
    match &c.kind {
        HopKind::Call(r) => format!(
            "call {} ({}{}): {}",
            r.tool,
            r.era.as_str(),
            if r.query.is_empty() {
                String::new()
            } else {
                format!(", {}", r.query)
            },
            r.why
        ),
        HopKind::Annotations => {
            "tools/list: every tool's annotations as the kitchen sent them".into()
        }
        HopKind::FirstEvent {
            total_ms,
            interval_ms,
        } => format!(
            "a {total_ms} ms SSE stream (progress every {interval_ms} ms): the first event through the hop no later than directly + {} ms",
            super::stream::held_back_bound_ms(*total_ms)
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A renamed plan row must not silently drop a hop case.
    #[test]
    fn every_listed_row_is_in_the_plan_and_ids_are_unique() {
        let cases = all();
        assert_eq!(
            cases.len(),
            ROWS.len() + 2,
            "a ROWS entry names no plan row"
        );
        let mut ids: Vec<&str> = cases.iter().map(|c| c.id.as_str()).collect();
        ids.sort();
        ids.dedup();
        assert_eq!(ids.len(), cases.len());
        assert!(ids.contains(&"errors.rate_limited/modern/sep_3304_32023_unannotated_tool"));
    }
}
