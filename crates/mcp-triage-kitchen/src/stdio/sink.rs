//! The journal of a stdio kitchen, as a file the judge reads while the server runs: one JSON
//! line per record, flushed per line, opened for appending (a host that restarts the server
//! adds the second server's records to the first one's, so a call run twice shows twice).
//!
//! Two kinds of line: the kitchen's own [`JournalEntry`] (written once complete: a call's entry
//! waits for its answer, so a reader never sees a half entry), and a [`StdioEvent`] for what
//! only the stdio front knows (the answer line went out, stderr flood done, the server exited).

use std::collections::HashMap;
use std::io::Write;
use std::path::Path;
use std::sync::{Arc, Mutex};

use serde::{Deserialize, Serialize};

use crate::journal::{Answer, JournalEntry};
use crate::state::Shared;

/// The journal file's bound (bytes written by one server). Past it one `journalFull` event is
/// written and nothing more, so a long-running server cannot fill the disk; a judge case writes
/// a few kilobytes.
pub const MAX_FILE_BYTES: u64 = crate::journal::DEFAULT_MAX_BYTES as u64;

/// What only the stdio front knows, one line of the journal file.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct StdioEvent {
    /// `started`, `answered` (a response line went out), `floodDone`, `withheld`, `exited`,
    /// `stdinClosed`, `journalFull` (the file reached its bound; nothing follows).
    pub stdio_event: String,
    /// Unix milliseconds.
    pub time_ms: u64,
    /// The JSON-RPC id the event is about, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<serde_json::Value>,
    /// The server's process id (tells the records of a restarted server apart).
    pub pid: u32,
    /// In words.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
}

/// One line of a stdio kitchen's journal file.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum StdioRecord {
    /// Something only the stdio front knows.
    Event(StdioEvent),
    /// A request the kitchen answered.
    Entry(Box<JournalEntry>),
}

/// What the stdio front changes in a call's entry: its fault note, and the answer the client
/// was actually given when the kitchen's was withheld.
#[derive(Clone, Debug)]
pub struct Override {
    /// Added to `injected`.
    pub note: String,
    /// Replaces `answer`.
    pub answer: Option<Answer>,
}

/// Writes complete entries in order, and events, to the file.
#[derive(Clone)]
pub struct Sink {
    inner: Arc<Mutex<Inner>>,
    shared: Arc<Shared>,
}

struct Inner {
    file: Option<std::fs::File>,
    /// Bytes written so far, and the bound.
    bytes: u64,
    max_bytes: u64,
    /// Entries written so far, counted from the first ever pushed (dropped ones included).
    written: u64,
    overrides: HashMap<String, Override>,
}

fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0)
}

impl Sink {
    /// A sink to `path` (appending), or to nowhere.
    pub fn open(path: Option<&Path>, shared: Arc<Shared>) -> std::io::Result<Sink> {
        Sink::open_bounded(path, shared, MAX_FILE_BYTES)
    }

    /// [`Sink::open`] with another bound on the bytes written.
    pub fn open_bounded(
        path: Option<&Path>,
        shared: Arc<Shared>,
        max_bytes: u64,
    ) -> std::io::Result<Sink> {
        let file = match path {
            Some(p) => Some(
                std::fs::OpenOptions::new()
                    .create(true)
                    .append(true)
                    .open(p)?,
            ),
            None => None,
        };
        Ok(Sink {
            inner: Arc::new(Mutex::new(Inner {
                file,
                bytes: 0,
                max_bytes,
                written: 0,
                overrides: HashMap::new(),
            })),
            shared,
        })
    }

    /// Change the entry of the call with this id when it is written.
    pub fn set_override(&self, id: &serde_json::Value, o: Override) {
        let mut i = self.inner.lock().expect("sink lock");
        i.overrides.insert(id.to_string(), o);
    }

    /// Write one event line.
    pub fn event(&self, what: &str, id: Option<&serde_json::Value>, detail: Option<String>) {
        let ev = StdioRecord::Event(StdioEvent {
            stdio_event: what.to_string(),
            time_ms: now_ms(),
            id: id.cloned(),
            pid: std::process::id(),
            detail,
        });
        let mut i = self.inner.lock().expect("sink lock");
        i.write(&ev);
    }

    /// Write the entries not written yet, in order, up to the first call still waiting for its
    /// answer (`all`: that one too, as it stands: the server is ending).
    pub fn flush(&self, all: bool) {
        let entries = self.shared.journal.typed_entries().unwrap_or_default();
        let base = self.shared.journal.dropped();
        let mut i = self.inner.lock().expect("sink lock");
        let start = i.written.saturating_sub(base) as usize;
        for e in entries.into_iter().skip(start) {
            let waiting = crate::answer::is_answered(e.method.as_deref()) && e.answer.is_none();
            let key = e.id.as_ref().map(|v| v.to_string());
            let o = key.as_ref().and_then(|k| i.overrides.get(k)).cloned();
            if waiting && !all && o.as_ref().is_none_or(|o| o.answer.is_none()) {
                break;
            }
            let mut e = e;
            if let (Some(o), Some("tools/call")) = (o, e.method.as_deref()) {
                e.injected = Some(match e.injected.take() {
                    Some(n) => format!("{n}; {}", o.note),
                    None => o.note,
                });
                if o.answer.is_some() {
                    e.answer = o.answer;
                }
            }
            i.write(&StdioRecord::Entry(Box::new(e)));
            i.written += 1;
        }
        i.written = i.written.max(base);
    }
}

impl Inner {
    /// One line, in one write on an O_APPEND file (lines of two servers never interleave);
    /// past the bound, one `journalFull` event and then nothing.
    fn write(&mut self, r: &StdioRecord) {
        let Some(f) = self.file.as_mut() else { return };
        let Ok(mut line) = serde_json::to_string(r) else {
            return;
        };
        line.push('\n');
        if self.bytes + line.len() as u64 > self.max_bytes {
            let full = StdioRecord::Event(StdioEvent {
                stdio_event: "journalFull".into(),
                time_ms: now_ms(),
                id: None,
                pid: std::process::id(),
                detail: Some(format!(
                    "{} bytes written; the bound is {}",
                    self.bytes, self.max_bytes
                )),
            });
            if let Ok(mut l) = serde_json::to_string(&full) {
                l.push('\n');
                let _ = f.write_all(l.as_bytes());
            }
            self.file = None;
            return;
        }
        if f.write_all(line.as_bytes()).is_ok() {
            let _ = f.flush();
            self.bytes += line.len() as u64;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_file_stops_at_its_bound_with_one_full_record() {
        let path = std::env::temp_dir().join(format!("sink-bound-{}.jsonl", std::process::id()));
        let _ = std::fs::remove_file(&path);
        let kitchen = crate::Kitchen::new(crate::KitchenOptions::default()).unwrap();
        let sink = Sink::open_bounded(Some(&path), kitchen.shared().clone(), 300).unwrap();
        for _ in 0..10 {
            sink.event("answered", None, Some("x".repeat(40)));
        }
        let text = std::fs::read_to_string(&path).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert!(lines.len() < 10, "{text}");
        assert!(lines.last().unwrap().contains("journalFull"), "{text}");
        let written: usize = lines[..lines.len() - 1].iter().map(|l| l.len() + 1).sum();
        assert!(written <= 300, "{written}");
        for l in lines {
            serde_json::from_str::<StdioRecord>(l).unwrap();
        }
        let _ = std::fs::remove_file(&path);
    }
}
