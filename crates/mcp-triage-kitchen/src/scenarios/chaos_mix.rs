//! `chaos.mix`: seeded random faults per request, for soak tests.

use std::time::Duration;

use super::errors_malformed_payload;
use super::{Origin, Outcome, ParamKind, ParamSpec, Params, Scenario, ScenarioInfo, Wire};
use crate::context::WireCx;
use crate::instance::HTTP_REQUEST;
use crate::protocol;

/// `chaos.mix`.
pub struct ChaosMix;

/// Fault names in the order their rates are applied.
pub const FAULTS: &[&str] = &[
    "http_503",
    "connection_close",
    "malformed_json",
    "jsonrpc_error",
    "delay",
];

static INFO: ScenarioInfo = ScenarioInfo {
    id: "chaos.mix",
    summary: "Each request (except initialize) draws a fault at the given rates from a PRNG seeded by (seed, POST number).",
    docs: "Faults: `http_503` (empty 503), `connection_close` (no response), `malformed_json` (200 `{ not valid json`), `jsonrpc_error` \
           (200 JSON-RPC -32603), `delay` (`delayMs`, then normal). The draw for POST number N depends only on `seed` and N, so a run is \
           reproducible. Rates add up to at most 1; the rest passes. `initialize` and notifications always pass so sessions can form.",
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

impl Scenario for ChaosMix {
    fn info(&self) -> &'static ScenarioInfo {
        &INFO
    }
    fn validate(&self, p: &Params) -> Result<(), String> {
        let Some(rates) = p.get("rates").as_object() else {
            return Err("rates must be an object".into());
        };
        let mut sum = 0.0;
        for (k, v) in rates {
            if !FAULTS.contains(&k.as_str()) {
                return Err(format!("unknown fault {k:?}; known: {FAULTS:?}"));
            }
            let r = v
                .as_f64()
                .filter(|r| (0.0..=1.0).contains(r))
                .ok_or_else(|| format!("rate of {k} must be in [0,1]"))?;
            sum += r;
        }
        if sum > 1.0 + 1e-9 {
            return Err("rates add up to more than 1".into());
        }
        Ok(())
    }
    fn on_request(&self, cx: &WireCx<'_>) -> Wire {
        if !cx.is_request() || cx.method == Some("initialize") {
            return Wire::Continue;
        }
        match draw(cx.p(), cx.count(HTTP_REQUEST)) {
            Some("http_503") => Wire::Status(503),
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
            _ => Wire::Continue,
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
}
