//! The MCP endpoint: both eras on one URL.
//!
//! Order of work for a POST (as Cakewalk's middleware chain): Host/Origin check → body
//! size/time limits → counters → the scenario's wire hook → protocol validation → the
//! catalogue. Counting happens before validation on purpose: Cakewalk's
//! `http_status_sequence` counts every POST, including `initialize`, notifications and
//! bodies the MCP layer would reject.
//!
//! The parts, in the order a request meets them: [`receive`](self) (limits, counters, the
//! wire hook), the era handlers (`legacy`, `modern`), method `dispatch`, `tools_call`, and
//! the notification `streams`; `record` journals each exchange.

use std::sync::Arc;

use axum::body::Body;
use axum::http::{HeaderMap, Method, Response};
use mcp_triage_core::RequestKind;

use crate::answer::{self, Observed};
use crate::journal;
use crate::sse::{self};
use crate::state::Shared;
use crate::trace::Trace;

use self::receive::handle_inner;
use self::record::{Pending, Record};
use self::respond::set_header;

mod capabilities;
mod coding;
mod dispatch;
mod legacy;
mod modern;
mod query;
mod receive;
mod record;
mod request;
mod respond;
mod streams;
mod tools_call;

pub use query::{parse_query, QueryError};
pub(crate) use respond::body_over_limit;

/// Which instance a URL addresses.
pub enum Target {
    /// `/mcp`: the stored selection (or the instance pinned by the legacy session).
    Stored,
    /// `/s/{scenario}/mcp?…`: an instance of its own.
    Url {
        /// Scenario id from the path.
        scenario: String,
        /// Raw query string.
        query: Option<String>,
    },
}

/// Header carrying the scenario id on every response.
pub const SCENARIO_HEADER: &str = "x-kitchen-scenario";

/// Percent-encoding for a value put into a query; the kitchen's authorization server and
/// `judge`'s case URLs use it.
pub use mcp_triage_wire::percent::encode as percent_encode;

/// Entry point for every HTTP method on an MCP endpoint.
pub async fn handle(
    shared: Arc<Shared>,
    target: Target,
    method: Method,
    headers: HeaderMap,
    body: Body,
) -> Response<Body> {
    let mut pending = Pending {
        shared,
        received: journal::now_ms(),
        method,
        headers,
        trace: Arc::new(Trace::default()),
        rec: Record::default(),
        done: false,
    };
    let (mut resp, scenario_id) = handle_inner(
        &pending.shared,
        target,
        &pending.method,
        &pending.headers,
        body,
        &pending.trace,
        &mut pending.rec,
    )
    .await;
    set_header(&mut resp, SCENARIO_HEADER, &scenario_id);
    let aborted = resp.extensions().get::<sse::AbortConnection>().is_some();
    let expected = match resp.extensions().get::<answer::ResumedRequest>() {
        Some(answer::ResumedRequest(id)) => Some(id.clone()),
        None if answer::is_answered(pending.rec.method.as_deref()) => pending.rec.id.clone(),
        None => None,
    };
    let kind = RequestKind::from_method(pending.rec.method.as_deref().unwrap_or("tools/call"));
    let (resp, observed) = match expected.as_ref().and_then(answer::request_id) {
        Some(_) if aborted => (resp, Some(Observed::Whole(journal::Answer::no_response()))),
        Some(id) => {
            let (r, o) = answer::observe(resp, id, kind).await;
            (r, Some(o))
        }
        None => (resp, None),
    };
    let (answer_now, watch) = match observed {
        Some(Observed::Whole(a)) => (Some(a), None),
        Some(Observed::Streaming(w)) => (None, Some(w)),
        None => (None, None),
    };
    // Compressed after the tap, so the journal's answer is read from the plain bytes, and
    // before the entry, so its headers show the coding.
    let resp = match pending.rec.coding {
        Some(c) if !aborted && pending.method == Method::POST => c.apply(resp),
        _ => resp,
    };
    let head = (!aborted).then_some(&resp);
    let mut entry = pending.entry(scenario_id, head);
    entry.answer = answer_now;
    let has_tool = entry.tool.is_some();
    let ticket = pending.shared.journal.push(entry);
    pending.done = true;
    if let Some(watch) = watch {
        // What the scenario noted, ran or issued while the stream went out is part of the
        // entry too (a cut is noted when it happens, after the head was sent).
        let (shared, trace) = (pending.shared.clone(), pending.trace.clone());
        watch.on_end(move |a| {
            shared.journal.amend(ticket, |e| {
                e.answer = Some(a);
                e.injected = trace.joined();
                e.executed = has_tool.then(|| trace.executed());
                e.issued = journal::issued_of(trace.issued());
                e.deduplicated = trace.deduplicated();
            })
        });
    }
    resp
}

pub use crate::plugin::reply::CUT_STREAM_PREFIX;
