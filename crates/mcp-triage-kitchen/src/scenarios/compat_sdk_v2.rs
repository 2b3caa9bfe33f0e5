//! `compat.sdk_v2`: the MCP C# SDK v2 compatibility tools (MRTR, negotiated version, header
//! promotion of parameters).

use futures_util::future::BoxFuture;
use serde_json::{json, Map, Value};

use crate::plugin::{Asked, ToolCx};
use crate::plugin::{Origin, Outcome, ParamKind, ParamSpec, Scenario, ScenarioInfo, ToolReply};
use crate::protocol::{self, Era};

/// `compat.sdk_v2`.
pub struct SdkV2;

static INFO: ScenarioInfo = ScenarioInfo {
    id: "compat.sdk_v2",
    summary: "Adds simulate_ticket_close_mrtr, show_negotiated_mcp_protocol and verify_order_region_param_header.",
    docs: "`run_configured_test_scenario` returns an index and the compat matrix. `simulate_ticket_close_mrtr(ticketId, closeReason?)` \
           returns `path` upfront | mrtr | cancelled | guidance; `show_negotiated_mcp_protocol` reports the version and headers; \
           `verify_order_region_param_header(region, orderId)` checks `Mcp-Param-Region` against the body (a mismatch is rejected by \
           the modern header check with -32020). Counts per tool.",
    params: &[
        ParamSpec { name: "defaultCloseReason", kind: ParamKind::String, default: "\"completed\"", choices: &[], doc: "Proposed close reason." },
        ParamSpec {
            name: "promptMessage",
            kind: ParamKind::String,
            default: "\"Close ticket '{ticketId}'? Please confirm the close reason.\"",
            choices: &[],
            doc: "Elicitation message; `{ticketId}` is substituted.",
        },
    ],
    outcome: Outcome::ToolSuccess,
    origin: Origin::Cakewalk,
};

fn is_mrtr(cx: &ToolCx) -> bool {
    cx.era == Era::Modern
}

fn compat_fields(cx: &ToolCx) -> Map<String, Value> {
    let mut m = Map::new();
    m.insert("isMrtrSupported".into(), json!(is_mrtr(cx)));
    m.insert(
        "negotiatedProtocolVersion".into(),
        json!(cx.protocol_version),
    );
    m.insert(
        "compatCell".into(),
        json!(format!(
            "{}/stateless/{}",
            cx.protocol_version,
            if is_mrtr(cx) { "native" } else { "unsupported" }
        )),
    );
    m
}

fn header(cx: &ToolCx, name: &str) -> Value {
    cx.headers
        .get(name)
        .and_then(|v| v.to_str().ok())
        .map(|s| json!(s))
        .unwrap_or(Value::Null)
}

impl Scenario for SdkV2 {
    fn info(&self) -> &'static ScenarioInfo {
        &INFO
    }
    fn extra_tools(&self) -> Vec<Value> {
        vec![
            json!({ "name": "simulate_ticket_close_mrtr", "description": "Closes a ticket; asks for the close reason (MRTR) when it is missing.",
                "inputSchema": { "type": "object", "properties": { "ticketId": { "type": "integer" }, "closeReason": { "type": "string" } }, "required": ["ticketId"] } }),
            json!({ "name": "show_negotiated_mcp_protocol", "description": "Shows the negotiated protocol version and the MCP headers of this call.",
                "inputSchema": { "type": "object", "properties": {} } }),
            json!({ "name": "verify_order_region_param_header", "description": "Checks that the Mcp-Param-Region header equals the region argument (SEP-2243).",
                "inputSchema": { "type": "object", "properties": {
                    "region": { "type": "string", "x-mcp-header": "Region" }, "orderId": { "type": "string" } }, "required": ["region", "orderId"] } }),
        ]
    }
    fn run_tool(&self, cx: ToolCx) -> BoxFuture<'static, ToolReply> {
        Box::pin(async move {
            let mut m = Map::new();
            m.insert(
                "tools".into(),
                json!([
                    "simulate_ticket_close_mrtr",
                    "show_negotiated_mcp_protocol",
                    "verify_order_region_param_header"
                ]),
            );
            m.insert("compatMatrix".into(), json!([
                { "protocol": "2026-07-28", "session": "stateless", "mrtr": "native", "available": true },
                { "protocol": "2026-07-28", "session": "stateful", "mrtr": "native", "available": false },
                { "protocol": "2025-11-25", "session": "stateful", "mrtr": "sdk-bridge-to-elicitation/create", "available": false },
                { "protocol": "2025-11-25", "session": "stateless", "mrtr": "unsupported", "available": true }
            ]));
            m.extend(compat_fields(&cx));
            ToolReply::json_text(&cx.scenario_result(Some(m)), false)
        })
    }
    fn call_extra_tool(&self, name: &str, cx: ToolCx) -> Option<BoxFuture<'static, ToolReply>> {
        match name {
            "simulate_ticket_close_mrtr" => Some(Box::pin(ticket_close(cx))),
            "show_negotiated_mcp_protocol" => Some(Box::pin(async move {
                let mut m = compat_fields(&cx);
                m.insert(
                    "isJuly2026OrLater".into(),
                    json!(protocol::is_modern_version(&cx.protocol_version)),
                );
                m.insert("IsMrtrSupported".into(), json!(is_mrtr(&cx)));
                m.insert(
                    "sessionId".into(),
                    cx.session
                        .as_ref()
                        .map(|s| json!(s.id))
                        .unwrap_or(Value::Null),
                );
                m.insert(
                    "headers".into(),
                    json!({
                        "MCP-Protocol-Version": header(&cx, "mcp-protocol-version"),
                        "Mcp-Method": header(&cx, "mcp-method"),
                        "Mcp-Name": header(&cx, "mcp-name"),
                        "Mcp-Session-Id": header(&cx, "mcp-session-id"),
                    }),
                );
                ToolReply::json_text(&Value::Object(m), false)
            })),
            "verify_order_region_param_header" => Some(Box::pin(async move {
                let region = cx
                    .args
                    .get("region")
                    .and_then(Value::as_str)
                    .unwrap_or("")
                    .to_string();
                let got = cx
                    .headers
                    .get("mcp-param-region")
                    .and_then(|v| v.to_str().ok())
                    .and_then(protocol::decode_header_value);
                let matches = got.as_deref() == Some(region.as_str());
                let body = json!({ "region": region, "orderId": cx.args.get("orderId"), "headerRegion": got, "matches": matches });
                ToolReply::json_text(&body, !matches)
            })),
            _ => None,
        }
    }
}

async fn ticket_close(cx: ToolCx) -> ToolReply {
    let ticket = cx.args.get("ticketId").and_then(Value::as_i64);
    let Some(ticket) = ticket else {
        return ToolReply::error_text("ticketId (integer) is required");
    };
    let mut m = compat_fields(&cx);
    m.insert("ticketId".into(), json!(ticket));
    if let Some(reason) = cx.args.get("closeReason").and_then(Value::as_str) {
        m.insert("path".into(), json!("upfront"));
        m.insert("closeReason".into(), json!(reason));
        return ToolReply::json_text(&Value::Object(m), false);
    }
    if !is_mrtr(&cx) {
        m.insert("path".into(), json!("guidance"));
        m.insert(
            "guidance".into(),
            json!("MRTR is not available for this client: resend with `closeReason`."),
        );
        return ToolReply::json_text(&Value::Object(m), false);
    }
    let default = cx.p().str("defaultCloseReason").to_string();
    let message = cx
        .p()
        .str("promptMessage")
        .replace("{ticketId}", &ticket.to_string());
    let params = json!({ "mode": "form", "message": message, "requestedSchema": { "type": "object",
        "properties": { "closeReason": { "type": "string", "default": default } }, "required": ["closeReason"] } });
    let state_matches = cx
        .request_state
        .as_ref()
        .is_some_and(|s| s == &json!(ticket));
    let cx_ask = if state_matches {
        cx.clone()
    } else {
        ToolCx {
            input_responses: None,
            ..cx.clone()
        }
    };
    match cx_ask
        .ask(
            "closeReason",
            "elicitation/create",
            params,
            "elicitation",
            json!(ticket),
        )
        .await
    {
        Asked::Pending(reply) => reply,
        Asked::Failed(reason) => ToolReply::error_text(reason),
        Asked::Answer(r) => {
            if r["action"] == "accept" {
                m.insert("path".into(), json!("mrtr"));
                m.insert("closeReason".into(), r["content"]["closeReason"].clone());
                ToolReply::json_text(&Value::Object(m), false)
            } else {
                m.insert("path".into(), json!("cancelled"));
                ToolReply::json_text(&Value::Object(m), false)
            }
        }
    }
}
