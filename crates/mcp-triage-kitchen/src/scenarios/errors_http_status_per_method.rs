//! `errors.http_status_per_method`: a status per JSON-RPC method.

use crate::plugin::WireCx;
use crate::plugin::{Origin, Outcome, ParamKind, ParamSpec, Params, Scenario, ScenarioInfo, Wire};

/// `errors.http_status_per_method`.
pub struct HttpStatusPerMethod;

static INFO: ScenarioInfo = ScenarioInfo {
    id: "errors.http_status_per_method",
    summary: "Every request whose method has a rule gets that status (empty body); 2xx passes.",
    docs: "No counter: every matching request. `rules` maps a JSON-RPC method to a status.",
    params: &[ParamSpec {
        name: "rules",
        kind: ParamKind::Object,
        default: r#"{"tools/call":401,"initialize":200}"#,
        choices: &[],
        doc: "Method → HTTP status.",
    }],
    outcome: Outcome::HttpError,
    origin: Origin::Cakewalk,
};

impl Scenario for HttpStatusPerMethod {
    fn info(&self) -> &'static ScenarioInfo {
        &INFO
    }
    fn validate(&self, p: &Params) -> Result<(), crate::plugin::ParamsError> {
        let ok = p.get("rules").as_object().is_some_and(|m| {
            m.values()
                .all(|v| v.as_u64().is_some_and(|c| (100..=599).contains(&c)))
        });
        if ok {
            Ok(())
        } else {
            Err(crate::plugin::ParamsError::Rule {
                name: "rules",
                rule: "map methods to HTTP status codes",
            })
        }
    }
    fn on_request(&self, cx: &WireCx<'_>) -> Wire {
        let Some(m) = cx.method else {
            return Wire::Continue;
        };
        match cx.p().get("rules").get(m).and_then(|v| v.as_u64()) {
            Some(code) if !(200..300).contains(&code) => Wire::Status(code as u16),
            _ => Wire::Continue,
        }
    }
}
