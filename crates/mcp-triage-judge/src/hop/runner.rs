//! One hop case run: where its call goes, our client making it, the kitchen's journal read
//! back, the grade.
//!
//! Cases run one at a time against one kitchen and one hop process. Normally each case has
//! its own kitchen instance (`/s/SCENARIO/mcp?…&instance=hop-N`), so its journal entries are
//! told apart by the instance tag. With a fixed path (`--hop-fixed-path /mcp`) the hop only
//! forwards that path, so the kitchen's stored selection (what `/mcp` serves) is switched to
//! the case's scenario and the kitchen reset (counters, sessions, journal) before each case.
//! That was chosen over restarting the hop per case: the hop starts once (a gateway can take
//! seconds), it keeps its upstream connections as it would in production, and the reset still
//! gives each case a journal of its own.

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use mcp_triage_client::{CallOptions, CallRecord, Client, ClientOptions, Target};
use mcp_triage_kitchen::journal::JournalEntry;
use mcp_triage_kitchen::KitchenHandle;
use serde_json::Value;

use super::cases::{HopCase, HopKind};
use super::grade::{delivered_line, CallSeen, Finding, Front, Grade};
use super::stream::{held_back_bound_ms, time_first_event};
use super::HopResult;
use crate::plan::{row_options, PlanRow};
use crate::JudgeError;

/// Where a case runs.
pub struct At<'a> {
    /// The kitchen.
    pub kitchen: &'a KitchenHandle,
    /// Where the hop listens.
    pub listen: SocketAddr,
    /// `--hop-fixed-path`.
    pub fixed_path: Option<&'a str>,
    /// The case's instance tag (`hop-N`).
    pub tag: String,
    /// The case's time limit.
    pub limit: Duration,
}

/// The client options of a hop case: one attempt may take most of the case's time (so a
/// lost answer ends as the client's own `TIMEOUT`, inside the limit); fixed jitter.
fn client_options(limit: Duration) -> ClientOptions {
    ClientOptions {
        timeout: limit.mul_f64(0.6),
        connect_timeout: Duration::from_secs(5).min(limit),
        jitter_seed: Some(42),
        ..ClientOptions::default()
    }
}

/// Make the row's call at `url`; `None` when the case's time ran out first.
async fn call(url: &str, row: &PlanRow, limit: Duration) -> Option<CallRecord> {
    let opts = match row_options(row, &client_options(limit)) {
        Ok(o) => o,
        Err(e) => return Some(failed_record(e.to_string())),
    };
    let args: Value = serde_json::from_str(row.args).unwrap_or_default();
    let work = async {
        let target = match Target::url(url) {
            Ok(t) => t,
            Err(e) => return failed_record(e.to_string()),
        };
        match Client::connect(target, opts).await {
            Ok(c) => {
                let r = c.call_tool(row.tool, args, CallOptions::default()).await;
                c.close().await;
                r
            }
            Err(e) => failed_record(e.to_string()),
        }
    };
    tokio::time::timeout(limit, work).await.ok()
}

/// A record for a call that could not be set up (connect or `initialize` failed): the
/// client's own error in its message, the outcome a connection error.
fn failed_record(why: String) -> CallRecord {
    let mut r = CallRecord::new("mcp-triage", "streamable-http", "tools/call");
    r.outcome = mcp_triage_core::Outcome::ConnectionError;
    r.layer = mcp_triage_core::Layer::Transport;
    r.message = Some(why);
    r
}

impl At<'_> {
    fn hop_base(&self) -> String {
        format!("http://{}", self.listen)
    }

    /// The path (with query) of a case's call: its own instance, or the fixed path after the
    /// kitchen's selection was switched to the case.
    /// Directly (`direct`), a fixed-path run calls the kitchen's own `/mcp`, which the hop's
    /// one path leads to.
    fn path(&self, scenario: &str, query: &str, tag: &str, direct: bool) -> String {
        match self.fixed_path {
            Some(_) if direct => return "/mcp".to_string(),
            Some(fixed) => return fixed.to_string(),
            None => {}
        }
        let mut q = encode_query(query);
        if !q.is_empty() {
            q.push('&');
        }
        format!(
            "/s/{scenario}/mcp?{q}instance={}",
            mcp_triage_wire::percent::encode(tag)
        )
    }

    /// Switch the kitchen to the case (fixed path only): its scenario and parameters on
    /// `/mcp`, counters, sessions and journal reset.
    fn select(&self, scenario: &str, query: &str) -> Result<(), JudgeError> {
        if self.fixed_path.is_none() {
            return Ok(());
        }
        let (params, _) = mcp_triage_kitchen::mcp::parse_query(scenario, Some(query))
            .map_err(|e| JudgeError::HopCase(format!("{scenario}?{query}: {e}")))?;
        let k = self.kitchen.kitchen();
        k.reset();
        k.set_selection(scenario, params)
            .map_err(|e| JudgeError::HopCase(format!("{scenario}: {e}")))
    }

    /// The journal entries of `tag` (all of them with a fixed path: the kitchen was reset).
    fn entries(&self, tag: &str) -> Result<Vec<JournalEntry>, JudgeError> {
        let all = self.kitchen.kitchen().journal_entries()?;
        if self.fixed_path.is_some() {
            return Ok(all);
        }
        let suffix = format!("#{tag}");
        Ok(all
            .into_iter()
            .filter(|e| e.instance.as_deref().is_some_and(|s| s.ends_with(&suffix)))
            .collect())
    }

    /// Run and grade one case.
    pub async fn run(&self, case: &HopCase) -> Result<HopResult, JudgeError> {
        let t0 = Instant::now();
        let (findings, delivered, tool) = match &case.kind {
            HopKind::Call(row) => {
                let (f, d) = self.call_case(row).await?;
                (f, d, Some(row.tool))
            }
            HopKind::Annotations => {
                let (f, d) = self.annotations_case().await?;
                (f, d, None)
            }
            HopKind::FirstEvent {
                total_ms,
                interval_ms,
            } => {
                let (f, d) = self.first_event_case(*total_ms, *interval_ms).await?;
                (f, d, None)
            }
        };
        let entries = self.entries(&self.tag)?;
        let journal = entries
            .iter()
            .map(|e| serde_json::to_value(e).expect("a JournalEntry serializes"))
            .collect();
        let calls = entries
            .into_iter()
            .filter(|e| {
                e.http_method == "POST"
                    && e.method.as_deref() == Some("tools/call")
                    && tool.is_some_and(|t| e.tool.as_deref() == Some(t))
            })
            .collect();
        Ok(HopResult {
            case: case.clone(),
            findings,
            journal,
            delivered,
            elapsed: t0.elapsed(),
            calls,
            label: None,
        })
    }

    async fn call_case(&self, row: &PlanRow) -> Result<(Vec<Finding>, String), JudgeError> {
        self.select(row.scenario, row.query)?;
        let url = format!(
            "{}{}",
            self.hop_base(),
            self.path(row.scenario, row.query, &self.tag, false)
        );
        let record = call(&url, row, self.limit).await;
        let entries = self.entries(&self.tag)?;
        let seen = CallSeen {
            front: Front::Http,
            entries: &entries,
            tool: row.tool,
            record: record.as_ref(),
            limit_s: self.limit.as_secs_f64(),
        };
        let delivered = record.as_ref().map_or_else(
            || format!("no answer within {} s", self.limit.as_secs_f64()),
            delivered_line,
        );
        Ok((seen.grade(), delivered))
    }
}

/// Percent-encode each value of a `k=v&…` query (keys and values as the plan writes them).
fn encode_query(query: &str) -> String {
    use mcp_triage_wire::percent::encode;
    query
        .split('&')
        .filter(|p| !p.is_empty())
        .map(|pair| {
            let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
            format!("{}={}", encode(k), encode(v))
        })
        .collect::<Vec<_>>()
        .join("&")
}

impl At<'_> {
    /// The tools a `tools/list` at `url` returns, name → annotations; or why it failed.
    async fn tools(&self, url: &str) -> Result<Vec<(String, Option<Value>)>, String> {
        let mut opts = client_options(self.limit);
        opts.protocol =
            mcp_triage_client::VersionChoice::Fixed(mcp_triage_core::ProtocolVersion::V2026_07_28);
        let work = async {
            let target = Target::url(url).map_err(|e| e.to_string())?;
            let c = Client::connect(target, opts)
                .await
                .map_err(|e| e.to_string())?;
            let listed = c.list_tools().await.map_err(|e| e.to_string());
            c.close().await;
            Ok(listed?
                .into_iter()
                .map(|t| (t.name, t.annotations))
                .collect())
        };
        tokio::time::timeout(self.limit, work)
            .await
            .unwrap_or_else(|_| Err(format!("no answer within {} s", self.limit.as_secs_f64())))
    }

    /// `tools/list` directly and through the hop: every annotation the kitchen sent must
    /// arrive (a hop that drops them turns read-only tools into ones a client must not resend).
    async fn annotations_case(&self) -> Result<(Vec<Finding>, String), JudgeError> {
        self.select("baseline", "")?;
        let direct_tag = format!("{}-direct", self.tag);
        let direct_url = format!(
            "{}{}",
            self.kitchen.base_url(),
            self.path("baseline", "", &direct_tag, true)
        );
        let hop_url = format!(
            "{}{}",
            self.hop_base(),
            self.path("baseline", "", &self.tag, false)
        );
        let direct = self.tools(&direct_url).await.map_err(|e| {
            JudgeError::HopCase(format!("tools/list directly from the kitchen: {e}"))
        })?;
        let via = match self.tools(&hop_url).await {
            Ok(v) => v,
            Err(e) => {
                let f = Finding {
                    grade: Grade::FailureInvented,
                    message: format!("tools/list through the hop failed: {e}"),
                    evidence: vec![],
                };
                return Ok((vec![f], e));
            }
        };
        let mut evidence = Vec::new();
        for (name, ann) in direct.iter().filter(|(_, a)| a.is_some()) {
            let got = via.iter().find(|(n, _)| n == name).map(|(_, a)| a);
            if got != Some(ann) {
                evidence.push(format!(
                    "tool {name}: the kitchen sent annotations {}; the client got {}",
                    ann.as_ref().unwrap_or(&Value::Null),
                    got.map_or("no such tool".to_string(), |a| a
                        .as_ref()
                        .map_or("none".into(), Value::to_string))
                ));
            }
        }
        let delivered = format!(
            "{} tools through the hop, {} directly",
            via.len(),
            direct.len()
        );
        let findings = (!evidence.is_empty())
            .then(|| Finding {
                grade: Grade::RetryInfoLost,
                message: format!(
                    "{} tool(s) lost or changed their annotations (readOnlyHint, idempotentHint: what decides a resend)",
                    evidence.len()
                ),
                evidence,
            })
            .into_iter()
            .collect();
        Ok((findings, delivered))
    }

    /// The first SSE event of a streamed call, directly and through the hop.
    async fn first_event_case(
        &self,
        total_ms: u64,
        interval_ms: u64,
    ) -> Result<(Vec<Finding>, String), JudgeError> {
        let scenario = "timeout.progress_keepalive";
        let query = format!("totalMs={total_ms}&intervalMs={interval_ms}");
        self.select(scenario, &query)?;
        let direct_tag = format!("{}-direct", self.tag);
        let direct = time_first_event(
            self.kitchen.local_addr(),
            &self.path(scenario, &query, &direct_tag, true),
            self.limit,
        )
        .await
        .map_err(|e| JudgeError::HopCase(format!("the kitchen's stream, directly: {e}")))?;
        let Some(direct_first) = direct.first_event_ms else {
            return Err(JudgeError::HopCase(format!(
                "the kitchen's stream had no event directly ({})",
                direct.status_line
            )));
        };
        let via = time_first_event(
            self.listen,
            &self.path(scenario, &query, &self.tag, false),
            self.limit,
        )
        .await;
        let bound = held_back_bound_ms(total_ms);
        let said = |v: &super::stream::Timed| {
            format!(
                "{}: first event at {} ms, end at {} ms",
                v.status_line,
                v.first_event_ms
                    .map_or("(none)".to_string(), |m| m.to_string()),
                v.end_ms
            )
        };
        let direct_line = format!("directly: {}", said(&direct));
        let (grade, message, delivered) = match via {
            Err(e) => (Some(Grade::Lost), e.clone(), e),
            Ok(v) => {
                let line = format!("through the hop: {}", said(&v));
                match v.first_event_ms {
                    Some(ms) if ms <= direct_first + bound => (None, String::new(), line),
                    Some(ms) => (
                        Some(Grade::StreamHeldBack),
                        format!("the first event came {} ms later than directly (bound {bound} ms: half the {total_ms} ms stream)", ms - direct_first),
                        line,
                    ),
                    None => (
                        Some(Grade::StreamHeldBack),
                        "no SSE event reached the client through the hop".into(),
                        line,
                    ),
                }
            }
        };
        let findings = grade
            .map(|grade| Finding {
                grade,
                message,
                evidence: vec![direct_line, delivered.clone()],
            })
            .into_iter()
            .collect();
        Ok((findings, delivered))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn query_values_are_encoded() {
        assert_eq!(
            encode_query(r#"mutations=[{"a":1}]&x=1"#),
            "mutations=%5B%7B%22a%22%3A1%7D%5D&x=1"
        );
    }
}
