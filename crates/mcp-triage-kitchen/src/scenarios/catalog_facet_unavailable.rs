//! `catalog.facet_unavailable`: `*/list` of some facets answers "Method not found".

use crate::plugin::WireCx;
use crate::plugin::{MethodReply, Origin, Outcome, ParamKind, ParamSpec, Scenario, ScenarioInfo};
use crate::protocol::METHOD_NOT_FOUND;

/// `catalog.facet_unavailable`.
pub struct FacetUnavailable;

static INFO: ScenarioInfo = ScenarioInfo {
    id: "catalog.facet_unavailable",
    summary: "`{facet}/list` for the listed facets gets HTTP 200 with JSON-RPC -32601.",
    docs: "Every matching list request; no counter. Facets: `tools`, `resources`, `prompts`. Outcome shown is the tool call's unless \
           `tools` is listed.",
    params: &[ParamSpec { name: "unavailableFacets", kind: ParamKind::StringArray, default: r#"["resources"]"#, choices: &[], doc: "Facets whose list fails." }],
    outcome: Outcome::ToolSuccess,
    origin: Origin::Cakewalk,
};

impl Scenario for FacetUnavailable {
    fn info(&self) -> &'static ScenarioInfo {
        &INFO
    }
    fn handle_method(&self, cx: &WireCx<'_>) -> Option<MethodReply> {
        let facet = cx.method?.strip_suffix("/list")?;
        let listed = cx
            .p()
            .get("unavailableFacets")
            .as_array()?
            .iter()
            .any(|f| f.as_str() == Some(facet));
        listed.then(|| MethodReply::Error(METHOD_NOT_FOUND, "Method not found".into()))
    }
}
