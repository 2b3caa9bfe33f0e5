//! The kitchen plan: for every kitchen scenario, how to call it and what mcp-triage's own client
//! (`mcp-triage-client`) must end with, derived from the scenario's documentation (its registry
//! `docs`/`summary` and the tool catalogue's annotations) and from the client's documented
//! behaviour — never from running it. `mcp-triage demo` runs the plan and prints it as a matrix;
//! this crate's tests run it too.
//!
//! It lives with the judge, not the client: it is the expected outcome of a client against the
//! kitchen's scenarios, the same knowledge the judge's cases encode for any client, and the
//! client itself needs neither the kitchen nor its scenarios.
//!
//! The client's request sequence matters for scenarios that count POSTs, so it is stated once:
//! - modern (2026-07-28): `tools/list` (only when `list` is set), then `tools/call`;
//! - legacy (2025-11-25): `initialize`, `notifications/initialized`, `tools/list` (when `list`),
//!   then `tools/call`.
//!
//! `run_configured_test_scenario` has no annotations (`catalogue.rs`), so the retry policy never
//! resends it after the request may have run; `read_counter` is `readOnlyHint` and trusted on a
//! loopback server, so it is resent after transient failures.

use mcp_triage_core::Outcome;
use mcp_triage_wire::percent::encode;

/// Which era a row forces.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PlanEra {
    /// `--protocol-version 2026-07-28`.
    Modern,
    /// `--protocol-version 2025-11-25`.
    Legacy,
}

impl PlanEra {
    /// `modern` or `legacy`.
    pub fn as_str(self) -> &'static str {
        match self {
            PlanEra::Modern => "modern",
            PlanEra::Legacy => "legacy",
        }
    }
}

/// One call of the plan.
#[derive(Debug, Clone)]
pub struct PlanRow {
    /// The kitchen scenario id.
    pub scenario: &'static str,
    /// A short label for variants of the same scenario (empty for the default call).
    pub variant: &'static str,
    /// Query parameters for `/s/{scenario}/mcp?…` (scenario parameters), without `?`.
    pub query: &'static str,
    /// The era.
    pub era: PlanEra,
    /// The tool to call.
    pub tool: &'static str,
    /// Its arguments, JSON.
    pub args: &'static str,
    /// Call `tools/list` first.
    pub list: bool,
    /// `--answer KEY=JSON` pairs.
    pub answers: &'static [&'static str],
    /// `--bearer`.
    pub bearer: Option<&'static str>,
    /// `--safe-tool` names.
    pub safe_tools: &'static [&'static str],
    /// Ask for a task-augmented call and poll it.
    pub tasks: bool,
    /// Per-attempt timeout in ms (the client default otherwise).
    pub timeout_ms: Option<u64>,
    /// The draft proposals the client reads (`--draft`); none for most rows.
    pub drafts: mcp_triage_core::Drafts,
    /// The final outcome the client must report.
    pub expect: Outcome,
    /// How many attempts the record must list (None: not checked).
    pub attempts: Option<usize>,
    /// Why, from the scenario's documentation.
    pub why: &'static str,
}

const fn row(scenario: &'static str, era: PlanEra, expect: Outcome, why: &'static str) -> PlanRow {
    PlanRow {
        scenario,
        variant: "",
        query: "",
        era,
        tool: "run_configured_test_scenario",
        args: "{}",
        list: false,
        answers: &[],
        bearer: None,
        safe_tools: &[],
        tasks: false,
        timeout_ms: None,
        drafts: NO_DRAFTS,
        expect,
        attempts: Some(1),
        why,
    }
}

/// No draft read: the client as it is without `--draft`.
const NO_DRAFTS: mcp_triage_core::Drafts = mcp_triage_core::Drafts {
    tool_failure: false,
    sep_2145: false,
};

/// `--draft tool-failure`.
const TOOL_FAILURE: mcp_triage_core::Drafts = mcp_triage_core::Drafts {
    tool_failure: true,
    sep_2145: false,
};

use PlanEra::{Legacy as L, Modern as M};

/// A row whose tool asks for input once and gets `answers`: two attempts in the 2026-07-28
/// era (the MRTR resend carries the answer), one in legacy (the answer goes back on the
/// same request's stream).
fn answered(
    scenario: &'static str,
    era: PlanEra,
    answers: &'static [&'static str],
    expect: Outcome,
    why: &'static str,
) -> PlanRow {
    PlanRow {
        answers,
        attempts: Some(if era == M { 2 } else { 1 }),
        ..row(scenario, era, expect, why)
    }
}

/// Both eras with the same expectation.
fn both(scenario: &'static str, expect: Outcome, why: &'static str) -> [PlanRow; 2] {
    [row(scenario, M, expect, why), row(scenario, L, expect, why)]
}

/// The scenario families of the plan, in the order [`plan`] lists them: each a scenario id
/// prefix (`auth` for `auth.*`, or the whole id) and the function that appends its rows.
type Family = (&'static str, fn(&mut Vec<PlanRow>));

/// Every family, in plan order.
const FAMILIES: &[Family] = &[
    ("baseline", baseline_rows),
    ("auth", auth_rows),
    ("catalog", catalog_rows),
    ("chaos", chaos_rows),
    ("compat", compat_rows),
    ("elicitation", elicitation_rows),
    ("errors", errors_rows),
    ("session", session_rows),
    ("sse", sse_rows),
    ("tasks", tasks_rows),
    ("timeout", timeout_rows),
];

/// The whole plan, every registered scenario at least once, both eras where they apply.
pub fn plan() -> Vec<PlanRow> {
    let mut p: Vec<PlanRow> = Vec::new();
    for (_, rows) in FAMILIES {
        rows(&mut p);
    }
    p
}

/// The answer accepting an `elicitation/create` (elicitation and `sse.server_request` rows).
const ACCEPT: &[&str] = &[r#"elicitation/create={"action":"accept","content":{"reason":"demo"}}"#];

/// `baseline`: the well-behaved server every other row is measured against; its own
/// family so the table starts from the plain success case.
fn baseline_rows(p: &mut Vec<PlanRow>) {
    use Outcome::*;
    p.extend(both(
        "baseline",
        ToolSuccess,
        "a well-behaved server: the tool succeeds",
    ));
    // An unlisted tool answered as draft SEP-2145 asks (the common unknownToolAs parameter):
    // a tool error, never resent, whether the client reads the draft or not.
    for (era, drafts, variant) in [
        (
            M,
            mcp_triage_core::Drafts::ALL,
            "unknown tool as isError, --draft all",
        ),
        (L, NO_DRAFTS, "unknown tool as isError"),
    ] {
        p.push(PlanRow {
            variant,
            query: "unknownToolAs=isError",
            tool: "no_such_tool",
            drafts,
            ..row(
                "baseline",
                era,
                ToolError,
                "unknownToolAs=isError: a tool the instance does not list gets an isError result (draft SEP-2145), an answer: not resent",
            )
        });
    }
}

/// `auth.*`: 401/403 challenges and a configured bearer token; a family of its own because
/// its rows differ by credentials, not by fault parameters.
fn auth_rows(p: &mut Vec<PlanRow>) {
    use Outcome::*;
    p.extend(both(
        "auth.insufficient_scope",
        HttpError,
        "tools/call gets 403 with a Bearer insufficient_scope challenge; 403 is never resent",
    ));
    p.extend(both(
        "auth.oauth_challenge",
        HttpError,
        "POSTs without the token get 401 + WWW-Authenticate (legacy: already initialize)",
    ));
    for era in [M, L] {
        p.push(PlanRow {
            variant: "with token",
            bearer: Some("kitchen-token"),
            ..row(
                "auth.oauth_challenge",
                era,
                ToolSuccess,
                "a request with the configured token passes",
            )
        });
    }
    p.extend(both(
        "auth.oauth_flow",
        HttpError,
        "without OAuth options the 401 challenge is only reported (tests/oauth.rs runs the OAuth client through every fault)",
    ));
    p.extend(both(
        "auth.token_lifecycle",
        HttpError,
        "POST 1 gets 401 (modern: the call; legacy: initialize); 401 is never resent",
    ));
}

/// `catalog.*`: list faults and tool-list mutations; its own family because its variants
/// change which tools exist rather than how a call is answered.
fn catalog_rows(p: &mut Vec<PlanRow>) {
    use Outcome::*;
    p.extend(both(
        "catalog.facet_unavailable",
        ToolSuccess,
        "only resources/list fails; the tool call is unaffected",
    ));
    p.extend(both(
        "catalog.mutation",
        ToolSuccess,
        "no mutations configured: the run tool is listed and succeeds",
    ));
    for era in [M, L] {
        p.push(PlanRow {
            variant: "extra_tool added at 0 ms",
            query: r#"mutations=[{"action":"add","toolName":"extra_tool","afterMs":0}]"#,
            tool: "extra_tool",
            ..row(
                "catalog.mutation",
                era,
                ToolSuccess,
                "an add at afterMs 0 lists the stub tool from the start of the timeline; its call succeeds",
            )
        });
        p.push(PlanRow {
            variant: "run tool removed at 0 ms",
            query: r#"mutations=[{"action":"remove","toolName":"run_configured_test_scenario","afterMs":0}]"#,
            ..row(
                "catalog.mutation",
                era,
                JsonrpcError,
                "a removed tool answers -32602 Unknown tool: a JSON-RPC error, never resent",
            )
        });
    }
    p.extend(both(
        "catalog.pagination",
        ToolSuccess,
        "the run tool is unaffected by list faults",
    ));
}

/// `chaos.*`: every request meets the same random fault (rate 1.0); its own family because
/// its variants test the retry policy per tool safety (safe, unsafe, answered).
fn chaos_rows(p: &mut Vec<PlanRow>) {
    use Outcome::*;
    for era in [M, L] {
        p.push(PlanRow {
            variant: "read_counter, all 503",
            query: r#"rates={"http_503":1.0}"#,
            tool: "read_counter",
            safe_tools: &["read_counter"],
            attempts: Some(3),
            ..row(
                "chaos.mix",
                era,
                HttpError,
                "every request but initialize gets 503; a safe tool is resent twice (max-retries 2), then given up",
            )
        });
        p.push(PlanRow {
            variant: "increment_counter, all sse_cut",
            query: r#"rates={"sse_cut":1.0}"#,
            tool: "increment_counter",
            args: r#"{"by":1}"#,
            // Legacy streams open with a priming event id: one GET resumption (not a resend),
            // which carries nothing, since the response was never written.
            attempts: Some(if matches!(era, M) { 1 } else { 2 }),
            ..row(
                "chaos.mix",
                era,
                StreamIncomplete,
                "sse_cut runs the tool, then the SSE stream ends (or breaks) without the response: it may have run and is not idempotent, so it is never resent",
            )
        });
        p.push(PlanRow {
            variant: "read_counter, all sse_cut",
            query: r#"rates={"sse_cut":1.0}"#,
            tool: "read_counter",
            safe_tools: &["read_counter"],
            // Legacy: each of the 3 calls is followed by one empty GET resumption.
            attempts: Some(if matches!(era, M) { 3 } else { 6 }),
            ..row(
                "chaos.mix",
                era,
                StreamIncomplete,
                "every stream is cut after the tool ran; a read-only tool is resent twice (max-retries 2), then given up",
            )
        });
        p.push(PlanRow {
            variant: "increment_counter, all input_required",
            query: r#"rates={"input_required":1.0}"#,
            tool: "increment_counter",
            args: r#"{"by":1}"#,
            answers: &[r#"elicitation/create={"action":"accept","content":{"confirm":true}}"#],
            // Modern: the input_required round, then the retry carrying the answer runs the
            // tool. Legacy: elicitation/create on the POST's stream, answered by POST.
            attempts: Some(if matches!(era, M) { 2 } else { 1 }),
            ..row(
                "chaos.mix",
                era,
                ToolSuccess,
                "input_required asks once (MRTR round, or elicitation/create on the legacy stream); answered, the call runs",
            )
        });
    }
}

/// `compat.*`: result shapes and SDK v2 features (output schemas, `x-mcp-header`, MRTR
/// guidance); its own family because these rows test reading results, not faults.
fn compat_rows(p: &mut Vec<PlanRow>) {
    use Outcome::*;
    p.extend(both(
        "compat.legacy_result",
        ToolSuccess,
        "resultType omitted: an absent resultType means complete",
    ));
    for era in [M, L] {
        p.push(PlanRow {
            list: true,
            ..row(
                "compat.output_schema_mismatch",
                era,
                InvalidToolResult,
                "structuredContent violates the declared outputSchema (read from tools/list)",
            )
        });
    }
    p.extend(both(
        "compat.sdk_v2",
        ToolSuccess,
        "the run tool returns the compat matrix",
    ));
    for era in [M, L] {
        p.push(PlanRow {
            variant: "x-mcp-header",
            tool: "verify_order_region_param_header",
            args: r#"{"region":"eu-west","orderId":"o-1"}"#,
            list: true,
            ..row(
                "compat.sdk_v2",
                era,
                ToolSuccess,
                "Mcp-Param-Region must equal the region argument (x-mcp-header from tools/list)",
            )
        });
    }
    p.push(PlanRow {
        variant: "MRTR round",
        tool: "simulate_ticket_close_mrtr",
        args: r#"{"ticketId":7}"#,
        answers: &[r#"closeReason={"action":"accept","content":{"closeReason":"completed"}}"#],
        attempts: Some(2),
        ..row(
            "compat.sdk_v2",
            M,
            ToolSuccess,
            "without closeReason the tool asks by MRTR; the answered round succeeds (path mrtr)",
        )
    });
    p.push(PlanRow {
        variant: "no MRTR (guidance)",
        tool: "simulate_ticket_close_mrtr",
        args: r#"{"ticketId":7}"#,
        ..row(
            "compat.sdk_v2",
            L,
            ToolSuccess,
            "legacy sessions have no MRTR: the tool answers with guidance",
        )
    });
}

/// `elicitation.*`: a tool that asks the user, answered or not; its own family because
/// its rows are defined by the `--answer` given and the era's way of asking.
fn elicitation_rows(p: &mut Vec<PlanRow>) {
    use Outcome::*;
    for era in [M, L] {
        p.push(PlanRow {
            variant: "answered",
            ..answered(
                "elicitation.approval",
                era,
                ACCEPT,
                ToolSuccess,
                "accept → success with elicitationOutcome accepted",
            )
        });
        p.push(PlanRow {
            variant: "unanswered",
            ..if era == M {
                row(
                    "elicitation.approval",
                    era,
                    InputRequired,
                    "the tool asks for approval by MRTR; without an answer the interaction is left open (the server waits for nothing)",
                )
            } else {
                row(
                    "elicitation.approval",
                    era,
                    ToolError,
                    "the tool asks on the open stream; without an answer the client declines, so the server finishes: isError, declined",
                )
            }
        });
        p.push(answered(
            "elicitation.decline",
            era,
            &[r#"elicitation/create={"action":"decline"}"#],
            ToolError,
            "decline → isError with the outcome",
        ));
        p.push(answered(
            "elicitation.url_mode",
            era,
            &[r#"elicitation/create={"action":"accept"}"#],
            ToolSuccess,
            "URL mode, accepted → success",
        ));
    }
}

/// `errors.*`: one injected HTTP or JSON-RPC fault per row; its own family because each
/// row states whether the fault may be resent. The multi-variant scenarios
/// (`http_status_sequence`, `rate_limited`) have their own functions to keep this readable.
fn errors_rows(p: &mut Vec<PlanRow>) {
    use Outcome::*;
    p.extend(both(
        "errors.accepted_for_request",
        MissingResponse,
        "tools/call 1 gets 202 with no body: the response never comes; not resent",
    ));
    p.extend(both(
        "errors.connection_close",
        ConnectionError,
        "tools/call 1 is dropped after sending; the unannotated tool may have run, so it is not resent",
    ));
    for era in [M, L] {
        p.push(PlanRow {
            variant: "read_counter",
            tool: "read_counter",
            list: true,
            attempts: Some(2),
            ..row(
                "errors.connection_close",
                era,
                ToolSuccess,
                "the first tools/call is dropped; read_counter is read-only (trusted on loopback), so it is resent",
            )
        });
    }
    p.extend(both(
        "errors.content_type",
        UnexpectedContentType,
        "tools/call 1 gets 200 text/html",
    ));
    p.extend(both(
        "errors.http_status_per_method",
        HttpError,
        "tools/call gets 401 by rule",
    ));
    http_status_sequence_rows(p);
    p.extend(both(
        "errors.jsonrpc_error",
        JsonrpcError,
        "tools/call 1 gets HTTP 200 with JSON-RPC -32602",
    ));
    p.extend(both(
        "errors.malformed_payload",
        MalformedJson,
        "tools/call 1 gets `{ not valid json`",
    ));
    p.push(row(
        "errors.non_compliant_envelope",
        M,
        HttpError,
        "POST 1 (the call) gets 400 with a success-looking body: transport wins",
    ));
    p.push(PlanRow {
        query: "onInvocation=3",
        ..row(
            "errors.non_compliant_envelope",
            L,
            HttpError,
            "POST 3 (the call after initialize, initialized) gets 400 with a result body",
        )
    });
    rate_limited_rows(p);
    p.extend(both(
        "errors.tool_error",
        ToolError,
        "invocation 1 returns isError: true; tool errors are never resent",
    ));
    tool_failure_rows(p);
}

/// `errors.tool_failure`: a tool error with a declared ToolFailure (draft SEP #3313) on a
/// read-only tool. Without `--draft` it is any tool error; with it, a declared non-retryable
/// failure is not resent though the tool is read-only, a retryable one is resent after its
/// `retryNotBefore` (invocation 2 succeeds); the wrong-but-valid forms read as their flag says.
fn tool_failure_rows(p: &mut Vec<PlanRow>) {
    use Outcome::*;
    let id = "errors.tool_failure";
    p.extend(both(
        id,
        ToolError,
        "invocation 1 fails with a declared reliability failure, retryable false; tool errors are never resent",
    ));
    p.push(PlanRow {
        variant: "declared non-retryable, --draft tool-failure",
        list: true,
        drafts: TOOL_FAILURE,
        ..row(id, L, ToolError, "retryable false on a read-only tool (trusted on loopback): the declared class wins, not resent")
    });
    p.push(PlanRow {
        variant: "declared retryable, --draft tool-failure",
        query: "retryable=true&retryNotBeforeMs=100",
        list: true,
        drafts: TOOL_FAILURE,
        attempts: Some(2),
        ..row(id, M, ToolSuccess, "a retryable reliability failure of a read-only tool: resent after its retryNotBefore; invocation 2 succeeds")
    });
    p.push(PlanRow {
        variant: "wrong but valid, isError with conforming data",
        query: "form=structured",
        list: true,
        ..row(id, M, ToolError, "isError: true with structuredContent that matches the outputSchema: a tool error, whatever the data")
    });
    p.push(PlanRow {
        variant: "wrong but valid, no isError",
        query: "form=unflagged",
        list: true,
        drafts: TOOL_FAILURE,
        ..row(id, L, ToolSuccess, "conforming data without isError: a success (the declared failure is only warned about; the draft puts it on error results)")
    });
}

/// `errors.http_status_sequence`: which POST meets the 503 depends on the era's request
/// sequence, so its four rows (unsafe and read-only, each era) are spelled out together.
fn http_status_sequence_rows(p: &mut Vec<PlanRow>) {
    use Outcome::*;
    p.push(row(
        "errors.http_status_sequence",
        M,
        HttpError,
        "POST 1 (the call) gets 503; the unannotated tool is not resent",
    ));
    p.push(row(
        "errors.http_status_sequence",
        L,
        HttpError,
        "POST 1 (initialize) gets 503",
    ));
    p.push(PlanRow {
        variant: "read_counter",
        query: "statusCodes=[200,503,200]",
        tool: "read_counter",
        list: true,
        attempts: Some(2),
        ..row(
            "errors.http_status_sequence",
            M,
            ToolSuccess,
            "POST 2 (the call, after tools/list) gets 503; read-only → resent, POST 3 passes",
        )
    });
    p.push(PlanRow {
        variant: "read_counter",
        query: "statusCodes=[200,200,200,503,200]",
        tool: "read_counter",
        list: true,
        attempts: Some(2),
        ..row(
            "errors.http_status_sequence",
            L,
            ToolSuccess,
            "POST 4 (the call after initialize, initialized, tools/list) gets 503; read-only → resent",
        )
    });
}

/// `errors.rate_limited`: a 429 on the unannotated tool (not resent), on a read-only tool
/// (resent after Retry-After) and SEP-3304's -32023 (not run, so resent); together because
/// all three test how a client honours a rate limit.
fn rate_limited_rows(p: &mut Vec<PlanRow>) {
    use Outcome::*;
    p.extend(both(
        "errors.rate_limited",
        HttpError,
        "tools/call 1 gets 429 + Retry-After; the unannotated tool is not resent",
    ));
    for era in [M, L] {
        p.push(PlanRow {
            variant: "read_counter, Retry-After 0",
            query: "retryAfter=0",
            tool: "read_counter",
            list: true,
            attempts: Some(2),
            ..row(
                "errors.rate_limited",
                era,
                ToolSuccess,
                "429 on a read-only tool: resent after Retry-After",
            )
        });
    }
    for era in [M, L] {
        p.push(PlanRow {
            variant: "SEP-3304 -32023, unannotated tool",
            query: "form=sep3304&retryAfterMs=100&retryAfter=",
            attempts: Some(2),
            ..row(
                "errors.rate_limited",
                era,
                ToolSuccess,
                "429 with -32023: the server did not run the call, resent after retryAfterMs",
            )
        });
    }
}

/// `session.*`: session expiry, which only legacy sessions have; its own family because
/// its rows count the POSTs a session survives.
fn session_rows(p: &mut Vec<PlanRow>) {
    use Outcome::*;
    p.push(PlanRow {
        query: "afterRequests=2",
        list: true,
        attempts: Some(2),
        ..row(
            "session.expire",
            L,
            ToolSuccess,
            "the session survives 2 POSTs (initialized, tools/list); the call gets 404 → re-initialize, resend once",
        )
    });
    p.push(row(
        "session.expire",
        M,
        ToolSuccess,
        "modern requests have no session and pass",
    ));
}

/// `sse.*`: streams cut, primed, kept alive or carrying server requests; its own family
/// because its attempt counts follow the era's resumption rules.
fn sse_rows(p: &mut Vec<PlanRow>) {
    use Outcome::*;
    for era in [M, L] {
        // 2025-11-25 streams start with a priming event that carries an id, so the client may
        // try one resumption; it finds nothing (or `410 Stream gone`) and the call stays
        // STREAM_INCOMPLETE.
        let attempts = if era == M { Some(1) } else { None };
        p.push(PlanRow {
            attempts,
            ..row(
                "sse.cut_before_response",
                era,
                StreamIncomplete,
                "the stream ends after notifications without the response",
            )
        });
    }
    p.push(PlanRow {
        attempts: Some(1),
        ..row(
            "sse.cut_mid_event",
            M,
            StreamIncomplete,
            "the connection breaks inside the response event",
        )
    });
    // The kitchen keeps a legacy stream for resumption: the resume after the priming event
    // gets the response as a whole event.
    p.push(PlanRow {
        attempts: Some(2),
        ..row(
            "sse.cut_mid_event",
            L,
            ToolSuccess,
            "the connection breaks inside the response event; the resumption delivers it",
        )
    });
    p.push(PlanRow {
        attempts: Some(2),
        ..row(
            "sse.priming_then_close",
            L,
            ToolSuccess,
            "2025-11-25 priming event with id and retry, then close: resumed by GET + Last-Event-ID",
        )
    });
    p.push(row(
        "sse.priming_then_close",
        M,
        MissingResponse,
        "2026-07-28 has no priming or resumption: the stream closes without any event, an empty 2xx body (rule 2)",
    ));
    p.extend(both(
        "sse.keepalive",
        ToolSuccess,
        "comment lines before the response are ignored",
    ));
    for era in [M, L] {
        p.push(answered(
            "sse.server_request",
            era,
            ACCEPT,
            ToolSuccess,
            "legacy: elicitation/create on the stream, answered by POST; modern: the MRTR equivalent",
        ));
    }
}

/// `tasks.*`: the tasks extension, called plainly and as a polled task; its own family
/// because its attempts count polls, not resends.
fn tasks_rows(p: &mut Vec<PlanRow>) {
    use Outcome::*;
    p.extend(both(
        "tasks.deferred",
        ToolSuccess,
        "without params.task (legacy) or the tasks extension (modern) the call completes synchronously",
    ));
    for era in [M, L] {
        p.push(PlanRow {
            variant: "as a task",
            // the first poll comes a pollIntervalMs after creation, past completeAfterMs: one
            // poll finds the task completed (each poll is an attempt; 2025-11-25 then fetches
            // the result with tasks/result, a third)
            query: "completeAfterMs=150&pollIntervalMs=200",
            tasks: true,
            attempts: Some(if era == M { 2 } else { 3 }),
            ..row(
                "tasks.deferred",
                era,
                ToolSuccess,
                "a task-augmented call gets a task (working); tasks/get reports completed after completeAfterMs, then the result",
            )
        });
    }
}

/// `timeout.*`: results or initialize delayed past a short client deadline; its own family
/// because every row sets `timeout_ms`.
fn timeout_rows(p: &mut Vec<PlanRow>) {
    use Outcome::*;
    for (id, query) in [
        ("timeout.uncooperative_hang", "hangDurationMs=1500"),
        ("timeout.cooperative_deadline", "delayMs=1500"),
        ("timeout.late_response", "delayMs=1500"),
    ] {
        for era in [M, L] {
            p.push(PlanRow {
                query,
                timeout_ms: Some(300),
                ..row(
                    id,
                    era,
                    Timeout,
                    "the result comes after the client's 300 ms deadline; not resent",
                )
            });
        }
    }
    // Progress every 100 ms for 1,500 ms keeps the call alive past the 600 ms deadline. The
    // deadline is six intervals, not three: on a loaded machine (three builds on two cores) a
    // 300 ms deadline was once passed between two progress notifications.
    for era in [M, L] {
        p.push(PlanRow {
            query: "totalMs=1500&intervalMs=100",
            timeout_ms: Some(600),
            ..row(
                "timeout.progress_keepalive",
                era,
                ToolSuccess,
                "progress for the call's token every 100 ms moves the client's 600 ms deadline until the result comes at 1,500 ms",
            )
        });
    }
    p.push(PlanRow {
        query: "initDelayMs=1500",
        timeout_ms: Some(300),
        ..row(
            "timeout.init_hang",
            L,
            Timeout,
            "initialize is delayed past the client's 300 ms deadline",
        )
    });
    p.push(PlanRow {
        query: "initDelayMs=1500",
        timeout_ms: Some(300),
        ..row(
            "timeout.init_hang",
            M,
            ToolSuccess,
            "modern requests have no initialize to delay",
        )
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bad_answer_in_a_row_is_a_typed_error() {
        let mut r = plan().remove(0);
        r.answers = &["no-equals-sign"];
        let e = row_options(&r, &mcp_triage_client::ClientOptions::default()).unwrap_err();
        assert!(matches!(
            e,
            mcp_triage_client::AnswersError::NotAPair { ref pair } if pair == "no-equals-sign"
        ));
        assert_eq!(e.to_string(), "--answer \"no-equals-sign\" is not KEY=JSON");
    }

    #[test]
    fn each_family_lists_only_its_own_scenarios() {
        let mut prefixes = std::collections::HashSet::new();
        for (prefix, rows) in FAMILIES {
            assert!(prefixes.insert(*prefix), "family {prefix} is listed twice");
            let mut p = Vec::new();
            rows(&mut p);
            assert!(!p.is_empty(), "family {prefix} has no rows");
            for r in &p {
                let family = r.scenario.split('.').next().unwrap_or_default();
                assert_eq!(family, *prefix, "{} is in {prefix}'s function", r.scenario);
            }
        }
    }

    #[test]
    fn rows_are_well_formed() {
        let p = plan();
        assert!(p.len() > 60);
        for r in &p {
            serde_json::from_str::<serde_json::Value>(r.args).expect("args are JSON");
            assert!(!r.why.is_empty());
            for a in r.answers {
                assert!(a.contains('='));
            }
        }
    }
}

/// What running one row gave.
#[derive(Debug, Clone)]
pub struct RowResult {
    /// The row.
    pub row: PlanRow,
    /// The call's record.
    pub record: mcp_triage_client::CallRecord,
    /// Whether outcome (and attempt count, when given) match.
    pub matches: bool,
}

/// The URL of a row's instance: `{base}/s/{scenario}/mcp?{query}&instance={tag}`, the query
/// values percent-encoded.
pub fn row_url(base: &str, row: &PlanRow, tag: &str) -> String {
    let mut q: Vec<String> = Vec::new();
    for pair in row.query.split('&').filter(|p| !p.is_empty()) {
        let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
        q.push(format!("{}={}", encode(k), encode(v)));
    }
    q.push(format!("instance={}", encode(tag)));
    format!("{base}/s/{}/mcp?{}", row.scenario, q.join("&"))
}

/// The client options a row asks for, on top of `base`.
pub fn row_options(
    row: &PlanRow,
    base: &mcp_triage_client::ClientOptions,
) -> Result<mcp_triage_client::ClientOptions, mcp_triage_client::AnswersError> {
    let mut o = base.clone();
    o.protocol = mcp_triage_client::VersionChoice::Fixed(match row.era {
        PlanEra::Modern => mcp_triage_core::ProtocolVersion::V2026_07_28,
        PlanEra::Legacy => mcp_triage_core::ProtocolVersion::V2025_11_25,
    });
    o.list_tools_first = row.list;
    o.bearer = row.bearer.map(str::to_string);
    o.retry.safe_tools = row.safe_tools.iter().map(|s| s.to_string()).collect();
    o.use_tasks = row.tasks;
    o.drafts = row.drafts;
    if let Some(ms) = row.timeout_ms {
        o.timeout = std::time::Duration::from_millis(ms);
    }
    o.answers = mcp_triage_client::Answers::default();
    for a in row.answers {
        o.answers.add_pair(a)?;
    }
    Ok(o)
}

/// Runs one row against a kitchen at `base` (`http://host:port`), in its own instance `tag`.
pub async fn run_row(
    base: &str,
    row: &PlanRow,
    tag: &str,
    options: &mcp_triage_client::ClientOptions,
) -> RowResult {
    let opts = match row_options(row, options) {
        Ok(o) => o,
        Err(e) => {
            let mut record =
                mcp_triage_client::CallRecord::new("mcp-triage", "streamable-http", "tools/call");
            record.message = Some(e.to_string());
            return RowResult {
                row: row.clone(),
                record,
                matches: false,
            };
        }
    };
    let url = row_url(base, row, tag);
    let args: serde_json::Value = serde_json::from_str(row.args).unwrap_or_default();
    let record = match mcp_triage_client::Target::url(&url) {
        Ok(target) => match mcp_triage_client::Client::connect(target, opts).await {
            Ok(c) => {
                let r = c
                    .call_tool(row.tool, args, mcp_triage_client::CallOptions::default())
                    .await;
                c.close().await;
                r
            }
            Err(e) => {
                let mut record = mcp_triage_client::CallRecord::new(
                    "mcp-triage",
                    "streamable-http",
                    "tools/call",
                );
                record.message = Some(e.to_string());
                record
            }
        },
        Err(e) => {
            let mut record =
                mcp_triage_client::CallRecord::new("mcp-triage", "streamable-http", "tools/call");
            record.message = Some(e.to_string());
            record
        }
    };
    let matches =
        record.outcome == row.expect && row.attempts.is_none_or(|n| record.attempts.len() == n);
    RowResult {
        row: row.clone(),
        record,
        matches,
    }
}
