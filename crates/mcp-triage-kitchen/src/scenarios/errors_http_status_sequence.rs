//! `errors.http_status_sequence`: HTTP statuses by POST number.

use crate::instance_state::HTTP_REQUEST;
use crate::plugin::WireCx;
use crate::plugin::{Origin, Outcome, ParamKind, ParamSpec, Scenario, ScenarioInfo, Wire};

/// `errors.http_status_sequence`.
pub struct HttpStatusSequence;

static INFO: ScenarioInfo = ScenarioInfo {
    id: "errors.http_status_sequence",
    summary: "The Nth POST gets statusCodes[min(N-1, len-1)]: the last code repeats.",
    docs: "Counts `http_request`: every POST of the instance, including initialize and notifications. A 2xx code lets the real server answer \
           (the code itself is not sent); any other code is sent with an empty body. An empty array injects nothing.",
    params: &[ParamSpec {
        name: "statusCodes",
        kind: ParamKind::IntegerArray,
        default: "[503,200]",
        choices: &[],
        doc: "Status per POST number; the last one repeats forever.",
    }],
    outcome: Outcome::HttpError,
    origin: Origin::Cakewalk,
};

impl Scenario for HttpStatusSequence {
    fn info(&self) -> &'static ScenarioInfo {
        &INFO
    }
    fn validate(&self, p: &crate::plugin::Params) -> Result<(), crate::plugin::ParamsError> {
        let ok = p.get("statusCodes").as_array().is_some_and(|a| {
            a.iter()
                .all(|c| c.as_u64().is_some_and(|c| (100..=599).contains(&c)))
        });
        if ok {
            Ok(())
        } else {
            Err(crate::plugin::ParamsError::Rule {
                name: "statusCodes",
                rule: "be HTTP status codes (100-599)",
            })
        }
    }
    fn on_request(&self, cx: &WireCx<'_>) -> Wire {
        let codes: Vec<u64> = cx
            .p()
            .get("statusCodes")
            .as_array()
            .map(|a| a.iter().filter_map(|c| c.as_u64()).collect())
            .unwrap_or_default();
        if codes.is_empty() {
            return Wire::Continue;
        }
        let n = cx.count(HTTP_REQUEST).max(1) as usize;
        let code = codes[(n - 1).min(codes.len() - 1)] as u16;
        if (200..300).contains(&code) {
            Wire::Continue
        } else {
            Wire::Status(code)
        }
    }
}
