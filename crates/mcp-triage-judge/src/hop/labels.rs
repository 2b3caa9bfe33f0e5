//! The *label right* column: a hop that labels outcomes itself (a log line, a metric) is held
//! to the kitchen's journal too. The judge gives the hop a file (`{labels}` in its command),
//! reads the lines the hop appended during each case, and compares the hop's label of every
//! `tools/call` exchange, in order, with the core's verdict of what the kitchen sent.
//!
//! Adapters ([`LabelSource`]) turn a hop's own lines into labels: `mcp-triage proxy`'s records
//! (`--log FILE`: one call record per exchange, its `outcome`) and the nginx module's JSON
//! lines (the same fields). Envoy's access log with its MCP filter metadata is an adapter to
//! add beside them.

use std::io::{Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use mcp_triage_core::Outcome;
use mcp_triage_kitchen::journal::JournalEntry;
use serde::Deserialize;

use crate::ctx::journal_line;

/// Most bytes of labels read per case (a hop that floods its log is cut here, and says so).
const MAX_BYTES_PER_CASE: u64 = 4 << 20;

/// Whose lines the labels file holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum LabelSource {
    /// `mcp-triage proxy --log {labels}`: JSON call records, `method`, `tool`, `outcome`.
    McpTriageProxy,
    /// nginx with our module (`integrations/nginx/run.sh --log {labels}`): its `$mcp_record`
    /// lines, written by the C ABI's `mcpt_record_write` with the proxy's field names.
    NginxModule,
}

impl LabelSource {
    /// Its name on the command line.
    pub fn name(self) -> &'static str {
        match self {
            LabelSource::McpTriageProxy => "mcp-triage-proxy",
            LabelSource::NginxModule => "nginx-module",
        }
    }

    /// By its name on the command line.
    pub fn parse(s: &str) -> Option<LabelSource> {
        [LabelSource::McpTriageProxy, LabelSource::NginxModule]
            .into_iter()
            .find(|k| k.name() == s)
    }

    /// The hop's label of each `tools/call` of `tool` in `lines`, in order.
    fn labels(self, lines: &str, tool: &str) -> Vec<Outcome> {
        #[derive(Deserialize)]
        struct Record {
            method: Option<String>,
            tool: Option<String>,
            outcome: Outcome,
        }
        match self {
            // The module writes the proxy's record fields (crates/mcp-triage-ffi/src/record.rs).
            LabelSource::McpTriageProxy | LabelSource::NginxModule => lines
                .lines()
                .filter_map(|l| serde_json::from_str::<Record>(l).ok())
                .filter(|r| {
                    r.method.as_deref() == Some("tools/call") && r.tool.as_deref() == Some(tool)
                })
                .map(|r| r.outcome)
                .collect(),
        }
    }
}

/// The labels file and how far the judge has read it.
pub struct Labels {
    source: LabelSource,
    path: PathBuf,
    offset: u64,
}

/// What the hop's labels of one case say against the journal.
#[derive(Clone, Debug)]
pub struct LabelVerdict {
    /// Every `tools/call` labelled as the kitchen's verdict of its answer.
    pub right: bool,
    /// In one sentence.
    pub message: String,
    /// The journal lines and the labels, when not right.
    pub evidence: Vec<String>,
}

impl Labels {
    /// A labels file at `path` (created empty: the hop appends to it).
    pub fn create(source: LabelSource, path: &Path) -> std::io::Result<Labels> {
        std::fs::write(path, b"")?;
        Ok(Labels {
            source,
            path: path.to_path_buf(),
            offset: 0,
        })
    }

    /// Where the hop writes (`{labels}`).
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Skip what is there now: the next case's labels start here.
    pub fn skip(&mut self) {
        self.offset = std::fs::metadata(&self.path).map_or(self.offset, |m| m.len());
    }

    fn read_new(&self) -> String {
        let mut out = Vec::new();
        if let Ok(mut f) = std::fs::File::open(&self.path) {
            if f.seek(SeekFrom::Start(self.offset)).is_ok() {
                let _ = f.take(MAX_BYTES_PER_CASE).read_to_end(&mut out);
            }
        }
        // Only whole lines: a record being written is read with the next case's wait.
        let whole = out.iter().rposition(|b| *b == b'\n').map_or(0, |i| i + 1);
        String::from_utf8_lossy(&out[..whole]).into_owned()
    }

    /// The hop's labels of the case's calls against the journal's answers to them. The hop
    /// writes a label when an exchange ends, maybe just after our client has its answer:
    /// the labels are waited for up to `settle`.
    pub async fn judge(
        &mut self,
        calls: &[&JournalEntry],
        tool: &str,
        settle: Duration,
    ) -> LabelVerdict {
        let t0 = Instant::now();
        let mut text = self.read_new();
        while self.source.labels(&text, tool).len() < calls.len() && t0.elapsed() < settle {
            tokio::time::sleep(Duration::from_millis(50)).await;
            text = self.read_new();
        }
        self.offset += text.len() as u64;
        compare(self.source, calls, &self.source.labels(&text, tool))
    }
}

/// The labels against the kitchen's verdicts, call by call.
pub fn compare(source: LabelSource, calls: &[&JournalEntry], labels: &[Outcome]) -> LabelVerdict {
    let truth: Vec<Option<Outcome>> = calls
        .iter()
        .map(|e| e.answer.as_ref().map(|a| a.outcome))
        .collect();
    let right = truth.len() == labels.len()
        && truth
            .iter()
            .zip(labels)
            .all(|(t, l)| t.is_none_or(|t| t == *l));
    let said = |v: &[Outcome]| {
        v.iter()
            .map(ToString::to_string)
            .collect::<Vec<_>>()
            .join(", ")
    };
    let sent: Vec<String> = truth
        .iter()
        .map(|t| t.map_or("(unanswered)".to_string(), |o| o.to_string()))
        .collect();
    let message = format!(
        "{} labelled {} tools/call(s) [{}]; the kitchen answered {} [{}]",
        source.name(),
        labels.len(),
        said(labels),
        calls.len(),
        sent.join(", ")
    );
    let evidence = if right {
        Vec::new()
    } else {
        calls.iter().map(|e| journal_line(e)).collect()
    };
    LabelVerdict {
        right,
        message,
        evidence,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use mcp_triage_kitchen::journal::Answer;
    use std::collections::BTreeMap;

    fn call(outcome: Outcome) -> JournalEntry {
        let mut e = JournalEntry::new(1, "POST", "s", BTreeMap::new());
        e.method = Some("tools/call".into());
        e.tool = Some("t".into());
        e.answer = Some(Answer {
            outcome,
            status: Some(200),
            code: None,
            message: None,
            detail: None,
            task_id: None,
            ended_ms: 1,
            declared_failure: None,
            retry_after_ms: None,
        });
        e
    }

    #[test]
    fn adapters_parse_by_name() {
        assert_eq!(
            LabelSource::parse("nginx-module"),
            Some(LabelSource::NginxModule)
        );
        assert_eq!(LabelSource::parse("envoy"), None);
    }

    #[test]
    fn proxy_records_become_labels_of_the_tool_only() {
        let lines = concat!(
            r#"{"method":"initialize","outcome":"RESULT"}"#,
            "\n",
            r#"{"method":"tools/call","tool":"t","outcome":"TOOL_ERROR"}"#,
            "\n",
            r#"{"method":"tools/call","tool":"other","outcome":"TOOL_SUCCESS"}"#,
            "\nnot json\n"
        );
        assert_eq!(
            LabelSource::McpTriageProxy.labels(lines, "t"),
            [Outcome::ToolError]
        );
    }

    #[test]
    fn a_wrong_or_missing_label_is_not_right() {
        let e = call(Outcome::ToolError);
        let calls = [&e];
        let s = LabelSource::McpTriageProxy;
        assert!(compare(s, &calls, &[Outcome::ToolError]).right);
        let wrong = compare(s, &calls, &[Outcome::ToolSuccess]);
        assert!(!wrong.right && wrong.evidence.len() == 1, "{wrong:?}");
        assert!(wrong.message.contains("[TOOL_SUCCESS]") && wrong.message.contains("[TOOL_ERROR]"));
        assert!(!compare(s, &calls, &[]).right);
    }

    #[tokio::test]
    async fn labels_are_read_per_case_from_where_the_last_case_ended() {
        let dir = std::env::temp_dir().join(format!("hop-labels-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let mut l = Labels::create(LabelSource::McpTriageProxy, &dir.join("l.jsonl")).unwrap();
        let line =
            |o: &str| format!("{{\"method\":\"tools/call\",\"tool\":\"t\",\"outcome\":\"{o}\"}}\n");
        std::fs::write(l.path(), line("TOOL_SUCCESS")).unwrap();
        l.skip();
        let mut f = std::fs::OpenOptions::new()
            .append(true)
            .open(l.path())
            .unwrap();
        std::io::Write::write_all(&mut f, line("TOOL_ERROR").as_bytes()).unwrap();
        let e = call(Outcome::ToolError);
        let v = l.judge(&[&e], "t", Duration::from_millis(100)).await;
        assert!(v.right, "{v:?}");
        let v = l.judge(&[&e], "t", Duration::from_millis(100)).await;
        assert!(!v.right, "nothing new was written: {v:?}");
    }
}
