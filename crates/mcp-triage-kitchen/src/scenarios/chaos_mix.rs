//! `chaos.mix`: seeded random faults per request, for soak tests.

use std::time::Duration;

use super::errors_malformed_payload;
use crate::plugin::WireCx;
use crate::plugin::{
    Origin, Outcome, ParamKind, ParamSpec, Params, Scenario, ScenarioInfo, ToolFault, Wire,
};
use crate::protocol;

/// `chaos.mix`.
pub struct ChaosMix;

/// Fault names in the order their rates are applied. New faults go at the end, so that a
/// configuration that does not name them draws exactly as before.
pub const FAULTS: &[&str] = &[
    "http_503",
    "connection_close",
    "malformed_json",
    "jsonrpc_error",
    "delay",
    "sse_cut",
    "input_required",
    "gateway_503",
];

static INFO: ScenarioInfo = ScenarioInfo {
    id: "chaos.mix",
    summary: "Each request (except initialize) draws a fault at the given rates from a PRNG seeded by (seed, POST number).",
    docs: "Faults: `http_503` (empty 503), `connection_close` (no response), `malformed_json` (200 `{ not valid json`), `jsonrpc_error` \
           (200 JSON-RPC -32603), `delay` (`delayMs`, then normal), `sse_cut` (a `tools/call` — any tool, `increment_counter` too — is \
           EXECUTED, journaled with `executed: true`, and then its response is lost: always SSE, the stream either ends cleanly after a `: keepalive` \
           comment without the response or breaks after half of the response event, chosen by a second seeded bit; the client cannot know whether the \
           tool ran; other requests get `200 text/event-stream` with only that comment), `input_required` (one input round before a `tools/call` \
           runs: in 2026-07-28 an `input_required` result with a signed `requestState` and an `elicitation/create` form request under \
           the key `chaos_confirm`, whose retry carrying `inputResponses.chaos_confirm` runs the tool — whatever the draw of the retry's \
           POST; in legacy eras an `elicitation/create` request on the POST's SSE stream, the tool runs once the client answers; \
           skipped when the client lacks the `elicitation` capability, and other requests pass), `gateway_503` (a `tools/call` \
           is EXECUTED, journaled with `executed: true`, and its answer replaced by an empty 503, as a gateway past its own timeout \
           answers: a resend of a call with side effects runs it twice; other requests get an empty 503). The draw for POST number N depends only \
           on `seed` and N, so a run is reproducible. Rates add up to at most 1; the rest passes; `sse_cut`, `input_required` and `gateway_503` are \
           0 unless named. `initialize` and notifications always pass so sessions can form.",
    params: &[
        ParamSpec { name: "seed", kind: ParamKind::Integer, default: "1", choices: &[], doc: "PRNG seed." },
        ParamSpec {
            name: "rates",
            kind: ParamKind::Object,
            default: r#"{"http_503":0.1,"connection_close":0.05,"malformed_json":0.05,"jsonrpc_error":0.05,"delay":0.1}"#,
            choices: &[],
            doc: "Fault → probability.",
        },
        ParamSpec { name: "delayMs", kind: ParamKind::Integer, default: "200", choices: &[], doc: "Delay for the `delay` fault." },
        ParamSpec {
            name: "methods",
            kind: ParamKind::StringArray,
            default: "[]",
            choices: &[],
            doc: "JSON-RPC methods the faults apply to (`[\"tools/call\"]`: only calls); empty: every request but `initialize`.",
        },
        ParamSpec {
            name: "idempotencyKeys",
            kind: ParamKind::String,
            default: "\"ignore\"",
            choices: &["ignore", "honour"],
            doc: "`honour`: a `tools/call` repeating an idempotency key (`params.idempotencyKey`, a `_meta` key `…idempotencyKey`, or the `Idempotency-Key` header) is answered with the stored result without running the tool again, journaled `deduplicated: true`, and `tools.idempotency` is advertised; `ignore`: keys change nothing.",
        },
    ],
    outcome: Outcome::ToolSuccess,
    origin: Origin::Kitchen,
};

/// SplitMix64: a small, well-mixed PRNG step.
fn splitmix(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// For an `sse_cut` at POST `n`: whether the stream breaks inside the response event
/// (true) or ends cleanly without it (false). A second seeded bit, independent of the draw.
pub fn cut_mid_event(p: &Params, n: u64) -> bool {
    splitmix(splitmix(p.u64("seed") ^ 0x5EED_C075) ^ n) & 1 == 1
}

/// The fault drawn for POST number `n` (None: pass).
pub fn draw(p: &Params, n: u64) -> Option<&'static str> {
    let x = splitmix(splitmix(p.u64("seed")) ^ n);
    let u = (x >> 11) as f64 / (1u64 << 53) as f64;
    let mut acc = 0.0;
    for f in FAULTS {
        acc += p
            .get("rates")
            .get(*f)
            .and_then(|v| v.as_f64())
            .unwrap_or(0.0);
        if u < acc {
            return Some(f);
        }
    }
    None
}

/// Whether the faults apply to a request of `method` (`methods`, empty: every method).
fn applies(p: &Params, method: Option<&str>) -> bool {
    let methods = p.get("methods").as_array().cloned().unwrap_or_default();
    methods.is_empty() || methods.iter().any(|m| m.as_str() == method)
}

impl Scenario for ChaosMix {
    fn honours_idempotency_keys(&self, p: &Params) -> bool {
        p.str("idempotencyKeys") == "honour"
    }
    fn info(&self) -> &'static ScenarioInfo {
        &INFO
    }
    fn validate(&self, p: &Params) -> Result<(), crate::plugin::ParamsError> {
        let Some(rates) = p.get("rates").as_object() else {
            return Err(crate::plugin::ParamsError::Rule {
                name: "rates",
                rule: "be an object",
            });
        };
        let mut sum = 0.0;
        for (k, v) in rates {
            if !FAULTS.contains(&k.as_str()) {
                return Err(crate::plugin::ParamsError::UnknownFault {
                    fault: k.clone(),
                    known: FAULTS,
                });
            }
            let r = v
                .as_f64()
                .filter(|r| (0.0..=1.0).contains(r))
                .ok_or_else(|| crate::plugin::ParamsError::RateOutOfRange { fault: k.clone() })?;
            sum += r;
        }
        if sum > 1.0 + 1e-9 {
            return Err(crate::plugin::ParamsError::RatesOverOne);
        }
        Ok(())
    }
    fn on_request(&self, cx: &WireCx<'_>) -> Wire {
        if !cx.is_request() || cx.method == Some("initialize") || !applies(cx.p(), cx.method) {
            return Wire::Continue;
        }
        match draw(cx.p(), cx.post) {
            Some("http_503") => Wire::Status(503),
            // A tools/call runs first and gets its 503 after (`tool_fault`).
            Some("gateway_503") if cx.method != Some("tools/call") => Wire::Status(503),
            // Not a tool call: nothing executes, the stream simply carries no response.
            Some("sse_cut") if cx.method != Some("tools/call") => Wire::Body {
                status: 200,
                content_type: "text/event-stream",
                headers: Vec::new(),
                body: bytes::Bytes::from_static(crate::plugin::reply::CUT_STREAM_PREFIX.as_bytes()),
            },
            Some("connection_close") => Wire::Close,
            Some("malformed_json") => Wire::Body {
                status: 200,
                content_type: "application/json",
                headers: Vec::new(),
                body: errors_malformed_payload::body("invalid_json", &cx.id_or_null()),
            },
            Some("jsonrpc_error") => Wire::json(
                200,
                &protocol::error_response(
                    cx.id,
                    protocol::INTERNAL_ERROR,
                    "Internal error (chaos)",
                    None,
                ),
            ),
            Some("delay") => Wire::Delay {
                duration: Duration::from_millis(cx.p().u64("delayMs")),
                honor_cancellation: true,
            },
            // `sse_cut` and `input_required` of a tools/call act around the tool body
            // (`tool_fault`).
            _ => Wire::Continue,
        }
    }
    fn tool_fault(&self, p: &Params, post: u64) -> ToolFault {
        if !applies(p, Some("tools/call")) {
            return ToolFault::None;
        }
        match draw(p, post) {
            Some("sse_cut") => ToolFault::CutAfterExecution {
                mid_event: cut_mid_event(p, post),
            },
            Some("input_required") => ToolFault::InputRound,
            Some("gateway_503") => ToolFault::StatusAfterExecution(503),
            _ => ToolFault::None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn draws_are_reproducible_and_follow_rates() {
        let p = Params::resolve(&INFO, &json!({ "seed": 7, "rates": { "http_503": 0.5 } }));
        let a: Vec<_> = (1..=200).map(|n| draw(&p, n)).collect();
        let b: Vec<_> = (1..=200).map(|n| draw(&p, n)).collect();
        assert_eq!(a, b);
        let hits = a.iter().filter(|d| d.is_some()).count();
        assert!(
            (70..=130).contains(&hits),
            "about half should fault, got {hits}"
        );
        let none = Params::resolve(&INFO, &json!({ "rates": {} }));
        assert!((1..=50).all(|n| draw(&none, n).is_none()));
    }

    #[test]
    fn new_faults_default_to_zero_and_old_draws_are_unchanged() {
        // The defaults never draw the faults added after Cakewalk's set.
        let d = Params::resolve(&INFO, &json!({}));
        assert!((1..=2000).all(|n| !matches!(draw(&d, n), Some("sse_cut" | "input_required"))));
        // Naming a new fault at rate 0 changes no draw of the old ones.
        let with = Params::resolve(
            &INFO,
            &json!({ "rates": { "http_503": 0.3, "sse_cut": 0.0, "input_required": 0.0 } }),
        );
        let without = Params::resolve(&INFO, &json!({ "rates": { "http_503": 0.3 } }));
        assert!((1..=500).all(|n| draw(&with, n) == draw(&without, n)));
    }

    /// `gateway_503` acts after the tool (a tool fault) on a tools/call, and is a plain 503
    /// only for what is no call: the call runs, then its answer is replaced.
    #[test]
    fn gateway_503_runs_the_call_then_answers_503() {
        let p = Params::resolve(&INFO, &json!({ "rates": { "gateway_503": 1.0 } }));
        assert!(
            (1..=50).all(|n| ChaosMix.tool_fault(&p, n) == ToolFault::StatusAfterExecution(503))
        );
        let old = Params::resolve(&INFO, &json!({ "rates": { "http_503": 0.5 } }));
        let with = Params::resolve(
            &INFO,
            &json!({ "rates": { "http_503": 0.5, "gateway_503": 0.0 } }),
        );
        assert!(
            (1..=500).all(|n| draw(&old, n) == draw(&with, n)),
            "appended last"
        );
    }

    #[test]
    fn sse_cut_and_input_required_act_around_the_tool() {
        let p = Params::resolve(
            &INFO,
            &json!({ "seed": 3, "rates": { "sse_cut": 0.5, "input_required": 0.5 } }),
        );
        let faults: Vec<ToolFault> = (1..=400).map(|n| ChaosMix.tool_fault(&p, n)).collect();
        let cuts = faults
            .iter()
            .filter(|f| matches!(f, ToolFault::CutAfterExecution { .. }))
            .count();
        let mid = faults
            .iter()
            .filter(|f| matches!(f, ToolFault::CutAfterExecution { mid_event: true }))
            .count();
        let rounds = faults
            .iter()
            .filter(|f| **f == ToolFault::InputRound)
            .count();
        assert_eq!(cuts + rounds, 400, "rates add up to 1: every POST faults");
        assert!((140..=260).contains(&cuts), "about half are cuts: {cuts}");
        assert!(
            mid > cuts / 4 && mid < cuts * 3 / 4,
            "both kinds of cut occur ({mid} of {cuts} mid-event)"
        );
        // The old faults are wire faults, never tool faults.
        let old = Params::resolve(&INFO, &json!({ "rates": { "http_503": 1.0 } }));
        assert!((1..=50).all(|n| ChaosMix.tool_fault(&old, n) == ToolFault::None));
    }

    #[test]
    fn validation_knows_the_new_faults() {
        let ok = Params::resolve(
            &INFO,
            &json!({ "rates": { "sse_cut": 0.2, "input_required": 0.1, "http_503": 0.7 } }),
        );
        assert!(ChaosMix.validate(&ok).is_ok());
        let over = Params::resolve(
            &INFO,
            &json!({ "rates": { "sse_cut": 0.6, "input_required": 0.5 } }),
        );
        let e = ChaosMix.validate(&over).unwrap_err();
        assert!(matches!(e, crate::plugin::ParamsError::RatesOverOne));
        assert!(e.to_string().contains("more than 1"));
        let typo = Params::resolve(&INFO, &json!({ "rates": { "sse_cutt": 0.1 } }));
        let e = ChaosMix.validate(&typo).unwrap_err();
        assert!(
            matches!(&e, crate::plugin::ParamsError::UnknownFault { fault, .. } if fault == "sse_cutt")
        );
        assert!(e.to_string().contains("unknown fault"));
    }
}
