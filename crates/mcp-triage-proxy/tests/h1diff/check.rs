//! The invariants of one case, from what the client got and what the upstream read; and the
//! records against both.

use std::collections::HashMap;

use mcp_triage_proxy::Record;

use super::client::{ClientSide, End};
use super::gen::{Case, Class};
use super::upstream::CaseLog;

/// Which figure a failure counts in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Kind {
    /// The client got an answer to another request, bytes it never asked for, or none.
    Desync,
    /// The upstream read a request the client did not frame (or not there, or twice).
    ExtraRequest,
    /// The proxy did what RFC 9112/9110 forbid (forwarded what it must refuse, or malformed).
    Rfc,
    /// Bodies, statuses or records that disagree with what the client got.
    Disagree,
    /// nginx takes or refuses a message the other way where the RFC leaves no choice.
    Nginx,
}

#[derive(Debug, Clone)]
pub struct Failure {
    pub index: u64,
    pub family: String,
    pub kind: Kind,
    pub what: String,
}

/// What happened to one request, for the records and for nginx.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// Forwarded whole and answered by the upstream: the client's status and body length.
    Forwarded(u16, usize),
    /// Answered by the proxy itself.
    Own(u16),
    /// No answer (the connection closed, or stalled).
    None,
}

impl Verdict {
    /// Accepted or refused, as nginx and the proxy are compared.
    pub fn word(&self) -> String {
        match self {
            Verdict::Forwarded(..) => "forwarded".into(),
            Verdict::Own(s) => format!("refused {s}"),
            Verdict::None => "closed".into(),
        }
    }
}

/// One request's outcome, for the records check.
#[derive(Debug, Clone)]
pub struct Seen {
    pub index: u64,
    pub tag: String,
    /// The family a failure about it is filed under ([`cause`]).
    pub family: String,
    /// The family a failure about the request itself is filed under (request first).
    pub req_family: String,
    pub upstream: bool,
    /// The upstream read it whole (its body's end too).
    pub complete: bool,
    pub verdict: Verdict,
}

struct Ctx<'a> {
    case: &'a Case,
    out: Vec<Failure>,
}

impl Ctx<'_> {
    fn fail(&mut self, j: usize, kind: Kind, what: String) {
        self.fail_from(j, j, kind, what);
    }

    /// A failure at request `j` that follows from request `root` (which had to end the
    /// connection): filed under `root`'s family.
    fn fail_from(&mut self, _j: usize, root: usize, kind: Kind, what: String) {
        // What reached the upstream is the requests' doing; what the client read, the answers'.
        let answer_first = matches!(kind, Kind::Desync | Kind::Disagree) && root == _j;
        let family = cause(self.case, root, answer_first);
        self.out.push(Failure {
            index: self.case.index,
            family,
            kind,
            what,
        });
    }
}

/// The family a failure at request `j` is put under: the nearest hostile request or answer at
/// or before it (what follows a desync fails because of it), else `j`'s own; at one request,
/// the answer first when `answer_first` and the request was one a server may take.
pub fn cause(case: &Case, j: usize, answer_first: bool) -> String {
    let j = j.min(case.reqs.len().saturating_sub(1));
    for i in (0..=j).rev() {
        let (q, r) = (&case.reqs[i], &case.resps[i]);
        let hostile_answer = !r.family.starts_with("valid") && r.family != "HEAD answer";
        if (q.class == Class::Valid || answer_first && q.class == Class::Choice) && hostile_answer {
            return format!("answer: {}", r.family);
        }
        if q.class != Class::Valid || !q.family.starts_with("valid") {
            return q.family.to_string();
        }
        if hostile_answer {
            return format!("answer: {}", r.family);
        }
    }
    case.reqs[j].family.to_string()
}

/// The statuses a proxy may refuse a request with.
fn refusal(status: u16) -> bool {
    matches!(
        status,
        400 | 403 | 405 | 408 | 411 | 413 | 414 | 417 | 431 | 501 | 505
    )
}

/// Checks one case; the failures and what happened to each request.
pub fn case(case: &Case, client: &ClientSide, up: &CaseLog) -> (Vec<Failure>, Vec<Seen>) {
    let mut cx = Ctx {
        case,
        out: Vec::new(),
    };
    upstream_order(&mut cx, up);
    let mut seen = Vec::new();
    let mut stop: Option<usize> = None;
    for (j, q) in case.reqs.iter().enumerate() {
        let upq = up.reqs.iter().find(|u| u.tag == q.tag);
        let g = client.got.get(j);
        seen.push(Seen {
            index: case.index,
            tag: q.tag.clone(),
            family: cause(case, j, true),
            req_family: cause(case, j, false),
            upstream: upq.is_some(),
            complete: upq.is_some_and(|u| u.complete),
            verdict: match g {
                Some(g) if g.marker.is_some() => Verdict::Forwarded(g.status, g.body.len()),
                Some(g) => Verdict::Own(g.status),
                None => Verdict::None,
            },
        });
        match stop {
            Some(s) => after_end(&mut cx, j, s, upq.is_some(), g.is_some()),
            None => stop = request(&mut cx, j, client, upq),
        }
    }
    if let End::Garbage(e) = &client.end {
        garbage(&mut cx, client, e);
    }
    if !client.extra.is_empty() {
        let j = case.reqs.len() - 1;
        let what = format!(
            "bytes after the last answer: {:?}",
            super::upstream::show(&client.extra)
        );
        cx.fail_from(j, stop.unwrap_or(j), Kind::Desync, what);
    }
    (cx.out, seen)
}

/// Request `j` came after request `s` had to end the connection: nothing of it may reach the
/// upstream, and no answer to it may come.
fn after_end(cx: &mut Ctx<'_>, j: usize, s: usize, reached: bool, answered: bool) {
    let tag = cx.case.reqs[j].tag.clone();
    if reached {
        let what =
            format!("{tag} reached the upstream after the connection had to end at request {s}");
        cx.fail_from(j, s, Kind::ExtraRequest, what);
    }
    if answered {
        let what = format!("an answer for {tag} after the connection had to end at request {s}");
        cx.fail_from(j, s, Kind::Desync, what);
    }
}

/// Request `j` against what the client got for it; `Some(j)` when the connection had to end
/// with it.
fn request(
    cx: &mut Ctx<'_>,
    j: usize,
    client: &ClientSide,
    upq: Option<&super::upstream::UpReq>,
) -> Option<usize> {
    let case = cx.case;
    let (q, resp) = (&case.reqs[j], &case.resps[j]);
    match client.got.get(j) {
        Some(g) if g.marker.as_deref() == Some(q.tag.as_str()) => {
            forwarded(cx, j, g, upq);
            if q.must_close && client.end != End::Closed {
                let what = format!(
                    "the connection stayed open after {} (RFC 9112 §6.1: close after CL+TE)",
                    q.tag
                );
                cx.fail(j, Kind::Rfc, what);
            }
            (q.must_close || matches!(q.class, Class::Refuse { body: true })).then_some(j)
        }
        Some(g) if g.marker.is_some() => {
            let first = g.head.lines().next().unwrap_or("");
            let what = format!(
                "{} got the answer written for {:?}: {first}",
                q.tag, g.marker
            );
            cx.fail(j, Kind::Desync, what);
            Some(j)
        }
        Some(g) => {
            own(cx, j, g, upq.map(|u| u.complete), client);
            let closed_here = client.end == End::Closed && client.got.len() == j + 1;
            (refusal(g.status) || closed_here).then_some(j)
        }
        None => {
            // A server may end a connection after an answer that ended it upstream (early,
            // or with a close) or whose body ran to the close: the client reconnects.
            let prev_ended = j > 0
                && (client.got.get(j - 1).is_some_and(|g| g.until_close)
                    || case.resps[j - 1].close_after
                    || case.resps[j - 1].early);
            let allowed = resp.may_fail || resp.must_fail || q.class != Class::Valid || prev_ended;
            if client.end == End::Stalled {
                let what = format!(
                    "no answer to {} and the connection still open ({} of {} requests sent)",
                    q.tag,
                    client.sent,
                    case.reqs.len()
                );
                cx.fail(j, Kind::Desync, what);
            } else if !allowed && j < client.sent {
                let what = format!(
                    "the connection closed without an answer to {} ({:?})",
                    q.tag, client.end
                );
                cx.fail(j, Kind::Disagree, what);
            }
            Some(j)
        }
    }
}

/// The client met bytes that are no strict answer.
fn garbage(cx: &mut Ctx<'_>, client: &ClientSide, e: &str) {
    let case = cx.case;
    let j = client.got.len().min(case.reqs.len().saturating_sub(1));
    // A head whose framing contradicts itself is the proxy's RFC fault before it is a
    // desync (which then usually follows, and is reported on its own).
    let kind = if e.starts_with("Content-Length is not") || e.starts_with("a response with both") {
        Kind::Rfc
    } else {
        Kind::Desync
    };
    let after = match client.got.len().checked_sub(1) {
        Some(p) => format!(
            " (after the answer to {} [{}])",
            case.reqs[p].tag, case.resps[p].family
        ),
        None => String::new(),
    };
    let what = format!(
        "the client could not read answer {}{after}: {e}",
        client.got.len()
    );
    // Leftovers of the answer before are the usual cause, when that answer was a hostile one.
    match j.checked_sub(1).map(|p| case.resps[p].family) {
        Some(f) if kind == Kind::Desync && !f.starts_with("valid") && f != "HEAD answer" => {
            let family = format!("answer: {f}");
            cx.out.push(Failure {
                index: case.index,
                family,
                kind,
                what,
            });
        }
        _ => cx.fail(j, kind, what),
    }
}

/// The upstream read only the case's requests, each once, in order, and nothing malformed.
fn upstream_order(cx: &mut Ctx<'_>, up: &CaseLog) {
    let mut last: Option<usize> = None;
    for u in &up.reqs {
        match cx.case.reqs.iter().position(|q| q.tag == u.tag) {
            None => cx.fail(
                last.unwrap_or(0),
                Kind::ExtraRequest,
                format!(
                    "the upstream read a request the client never framed: {:?}",
                    super::upstream::show(u.head.as_bytes())
                ),
            ),
            Some(i) if last.is_some_and(|l| l >= i) => cx.fail(
                i,
                Kind::ExtraRequest,
                format!("the upstream read {} again or out of order", u.tag),
            ),
            Some(i) => {
                last = Some(i);
                if u.complete {
                    same_body(cx, i, u);
                }
            }
        }
    }
    for e in &up.errors {
        // The refused bytes name their request, when they got that far.
        let at = e.find("h1d=").and_then(|i| {
            let t: String = e[i + 4..]
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '-')
                .collect();
            cx.case.reqs.iter().position(|q| q.tag == t)
        });
        cx.fail(
            at.or(last).unwrap_or(0),
            Kind::Rfc,
            format!("the proxy sent the upstream bytes a strict reader refuses: {e}"),
        );
    }
}

/// A request the upstream read whole carries the client's body (decoded) and its transfer
/// codings, whether or not its answer reached the client.
fn same_body(cx: &mut Ctx<'_>, i: usize, u: &super::upstream::UpReq) {
    let q = &cx.case.reqs[i];
    let tag = q.tag.clone();
    if u.body != q.body && !matches!(q.class, Class::Refuse { .. }) {
        let at = u.body.iter().zip(&q.body).position(|(a, b)| a != b);
        let at = at.unwrap_or(u.body.len().min(q.body.len()));
        let what = format!("{tag}: the upstream got a body of {} bytes, the client sent {} (first difference at {at})", u.body.len(), q.body.len());
        cx.fail(i, Kind::Disagree, what);
    }
    if u.codings != q.codings {
        let what = format!(
            "{tag}: transfer codings {:?} went upstream as {:?}",
            q.codings, u.codings
        );
        cx.fail(i, Kind::Rfc, what);
    }
}

/// The client got the upstream's answer to request `j`.
fn forwarded(
    cx: &mut Ctx<'_>,
    j: usize,
    g: &super::client::Got,
    upq: Option<&super::upstream::UpReq>,
) {
    let q = &cx.case.reqs[j];
    let resp = &cx.case.resps[j];
    let (class, tag) = (q.class, q.tag.clone());
    if matches!(class, Class::Refuse { body: false })
        || matches!(class, Class::Refuse { body: true }) && !resp.early
    {
        cx.fail(
            j,
            Kind::Rfc,
            format!(
                "{tag} ({}) was forwarded and answered; the RFC says refuse it",
                q.family
            ),
        );
    }
    match upq {
        Some(u) if u.complete => {}
        Some(_) if resp.early => {}
        Some(_) => cx.fail(
            j,
            Kind::Disagree,
            format!("{tag} was answered but its body never ended upstream"),
        ),
        None => cx.fail(
            j,
            Kind::Disagree,
            format!("{tag} was answered but the upstream has no such request"),
        ),
    }
    if resp.must_fail {
        cx.fail(
            j,
            Kind::Rfc,
            format!(
                "{tag}: a response with {} was forwarded; the RFC says 502",
                resp.family
            ),
        );
    }
    if g.status != resp.status {
        cx.fail(
            j,
            Kind::Disagree,
            format!(
                "{tag}: the client got status {}, the upstream sent {}",
                g.status, resp.status
            ),
        );
    }
    if g.body != resp.body {
        let kind = if g.body.windows(7).any(|w| w == b"planted") {
            Kind::Desync
        } else {
            Kind::Disagree
        };
        cx.fail(
            j,
            kind,
            format!(
                "{tag}: the client got a body of {} bytes {:?}, the upstream meant {} bytes",
                g.body.len(),
                super::upstream::show(&g.body),
                resp.body.len()
            ),
        );
    }
}

/// The client got an answer the proxy wrote itself.
fn own(
    cx: &mut Ctx<'_>,
    j: usize,
    g: &super::client::Got,
    up_complete: Option<bool>,
    client: &ClientSide,
) {
    let q = &cx.case.reqs[j];
    let resp = &cx.case.resps[j];
    let upstream_failed = matches!(g.status, 502 | 504) && (resp.may_fail || resp.must_fail);
    let ok = match q.class {
        Class::Valid => upstream_failed,
        _ => refusal(g.status) || upstream_failed,
    };
    let tag = q.tag.clone();
    if !ok {
        cx.fail(
            j,
            Kind::Disagree,
            format!(
                "{tag} ({}) got the proxy's own {}: {}",
                q.family,
                g.status,
                g.head.lines().next().unwrap_or("")
            ),
        );
    }
    if refusal(g.status) {
        if up_complete == Some(true) {
            cx.fail(
                j,
                Kind::Rfc,
                format!(
                    "{tag} was refused with {} but reached the upstream whole",
                    g.status
                ),
            );
        }
        if client.end != End::Closed || client.got.len() > j + 1 {
            cx.fail(
                j,
                Kind::Rfc,
                format!(
                    "{tag}: the connection stayed open after the refusal {}",
                    g.status
                ),
            );
        }
    }
}

/// The records agree with the client and the upstream: one per forwarded request, its
/// statuses and body bytes what the client got; one per refusal.
pub fn records(seen: &[Seen], records: &[Record]) -> Vec<Failure> {
    let mut by_tag: HashMap<String, Vec<&Record>> = HashMap::new();
    let mut untagged: Vec<&Record> = Vec::new();
    for r in records {
        match r.path.as_deref().and_then(|p| p.split_once("h1d=")) {
            Some((_, t)) => by_tag
                .entry(t.split('&').next().unwrap_or("").to_string())
                .or_default()
                .push(r),
            None => untagged.push(r),
        }
    }
    let mut out = Vec::new();
    let mut refusals = Vec::new();
    let mut fail = |s: &Seen, what: String| {
        out.push(Failure {
            index: s.index,
            family: s.family.clone(),
            kind: Kind::Disagree,
            what,
        })
    };
    for s in seen {
        let recs = by_tag.remove(&s.tag).unwrap_or_default();
        let want = match &s.verdict {
            Verdict::Forwarded(st, n) => Some((*st, Some(*n as u64))),
            Verdict::Own(st) => Some((*st, None)),
            Verdict::None => None,
        };
        match (recs.as_slice(), want) {
            ([], Some((st, None))) => {
                if let Some(i) = untagged
                    .iter()
                    .position(|r| r.http_statuses.last() == Some(&st))
                {
                    untagged.remove(i);
                } else {
                    let what = format!(
                        "{}: the proxy refused it with {st} and wrote no record",
                        s.tag
                    );
                    refusals.push(Failure {
                        index: s.index,
                        family: s.req_family.clone(),
                        kind: Kind::Disagree,
                        what,
                    });
                }
            }
            ([], _) if s.upstream => {
                // CONNECT and `OPTIONS *` carry their tag in a field only: their record has
                // no tagged path.
                let st = want.map(|w| w.0);
                match untagged
                    .iter()
                    .position(|r| st.is_none() || r.http_statuses.last() == st.as_ref())
                {
                    Some(i) => {
                        untagged.remove(i);
                    }
                    None => fail(s, format!("{}: forwarded, and no record", s.tag)),
                }
            }
            ([], _) => {}
            ([r], Some((st, bytes))) => {
                if r.http_statuses != [st] {
                    fail(
                        s,
                        format!(
                            "{}: the record says httpStatuses {:?}, the client got {st}",
                            s.tag, r.http_statuses
                        ),
                    );
                }
                if let Some(n) = bytes.filter(|&n| r.response_bytes != n) {
                    fail(
                        s,
                        format!(
                            "{}: the record says responseBytes {}, the client got {n}",
                            s.tag, r.response_bytes
                        ),
                    );
                }
            }
            ([_], None) => {}
            (many, _) => fail(s, format!("{}: {} records", s.tag, many.len())),
        }
    }
    out.extend(refusals);
    for (tag, recs) in by_tag {
        let index = tag
            .trim_start_matches(|c: char| c.is_ascii_alphabetic())
            .split('-')
            .next()
            .and_then(|i| i.parse().ok())
            .unwrap_or(0);
        out.push(Failure {
            index,
            family: "records".into(),
            kind: Kind::Disagree,
            what: format!(
                "{} record(s) for {tag}, which no client request was",
                recs.len()
            ),
        });
    }
    out
}
