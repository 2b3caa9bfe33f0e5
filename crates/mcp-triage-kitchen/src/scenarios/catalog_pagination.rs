//! `catalog.pagination`: paged `resources/list` / `prompts/list`, optionally broken.

use serde_json::{json, Value};

use crate::instance_state::{PROMPTS_LIST, RESOURCES_LIST};
use crate::plugin::WireCx;
use crate::plugin::{
    MethodReply, Origin, Outcome, ParamKind, ParamSpec, Params, Scenario, ScenarioInfo,
};

/// `catalog.pagination`.
pub struct Pagination;

static INFO: ScenarioInfo = ScenarioInfo {
    id: "catalog.pagination",
    summary: "The chosen facet's list is served in pages of synthetic items, with an optional pagination fault.",
    docs: "Items `test://resource/{i}` or `prompt_{i}`. Page index = list count − 1 (counters `resources_list` / `prompts_list`; \
           the cursor value is ignored, as in Cakewalk). Cursors are `page-N`. Faults: `cursor_loop` (nextCursor always `loop`), \
           `duplicate_page` (page 2 repeats page 1 and ends), `error_after_page_n` (pages after `faultAtPage` get JSON-RPC -32603). \
           Outcome shown is the tool call's (the run tool is unaffected).",
    params: &[
        ParamSpec { name: "totalItems", kind: ParamKind::Integer, default: "10", choices: &[], doc: "Items in the facet." },
        ParamSpec { name: "pageSize", kind: ParamKind::Integer, default: "3", choices: &[], doc: "Items per page (>= 1)." },
        ParamSpec { name: "facet", kind: ParamKind::String, default: "\"resources\"", choices: &["resources", "prompts"], doc: "Which list." },
        ParamSpec { name: "fault", kind: ParamKind::String, default: "\"none\"", choices: &["none", "cursor_loop", "duplicate_page", "error_after_page_n"], doc: "Fault." },
        ParamSpec { name: "faultAtPage", kind: ParamKind::Integer, default: "2", choices: &[], doc: "Page number for error_after_page_n." },
    ],
    outcome: Outcome::ToolSuccess,
    origin: Origin::Cakewalk,
};

impl Scenario for Pagination {
    fn info(&self) -> &'static ScenarioInfo {
        &INFO
    }
    fn validate(&self, p: &Params) -> Result<(), crate::plugin::ParamsError> {
        if p.i64("pageSize") < 1 || p.i64("totalItems") < 0 {
            return Err(crate::plugin::ParamsError::Rule {
                name: "pageSize",
                rule: "be >= 1 and totalItems >= 0",
            });
        }
        Ok(())
    }
    fn handle_method(&self, cx: &WireCx<'_>) -> Option<MethodReply> {
        let p = cx.p();
        let facet = p.str("facet");
        let (method, key) = if facet == "prompts" {
            ("prompts/list", PROMPTS_LIST)
        } else {
            ("resources/list", RESOURCES_LIST)
        };
        if cx.method != Some(method) {
            return None;
        }
        let page = cx.count(key).saturating_sub(1);
        let fault = p.str("fault");
        if fault == "error_after_page_n" && page + 1 > p.u64("faultAtPage") {
            return Some(MethodReply::Error(
                -32603,
                "Internal error after page".into(),
            ));
        }
        let size = p.u64("pageSize").max(1);
        let total = p.u64("totalItems");
        let shown = if fault == "duplicate_page" && page == 1 {
            0
        } else {
            page
        };
        let start = shown * size;
        let end = (start + size).min(total);
        let items: Vec<Value> = (start..end)
            .map(|i| {
                if facet == "prompts" {
                    json!({ "name": format!("prompt_{i}"), "description": format!("Synthetic prompt {i}") })
                } else {
                    json!({ "uri": format!("test://resource/{i}"), "name": format!("resource_{i}"), "mimeType": "text/plain" })
                }
            })
            .collect();
        let next = match fault {
            "cursor_loop" => Some("loop".to_string()),
            "duplicate_page" if page >= 1 => None,
            _ if end < total => Some(format!("page-{}", page + 2)),
            _ => None,
        };
        let mut r = json!({ facet: items });
        if let Some(n) = next {
            r["nextCursor"] = json!(n);
        }
        Some(MethodReply::Result(r))
    }
}
