//! Open tasks (tasks extension, SEP-2663; 2025-11-25 core tasks): which `tools/call` record
//! created each task the proxy saw, so that `tasks/get`, `tasks/update` and `tasks/cancel`
//! records can name it (`linksTo`) and the task's end can be reported on the call (a
//! `taskEnd` record).
//!
//! Why a table of its own and not one of the observer's [`Table`](crate::observe)s: those
//! evict an arbitrary entry silently, which is fine for hints; an open task that leaves
//! unseen must be reported (a `taskEnd` record with `TASK_UNFINISHED`), so eviction here is
//! explicit: past its TTL, or the oldest one when the table is full, and the evicted tasks
//! are handed back to the caller to record.

use foldhash::{HashMap, HashMapExt};
use std::time::{Duration, Instant};

use crate::record::ClientId;

/// Default most open tasks remembered (`--max-open-tasks`).
pub const DEFAULT_MAX_OPEN_TASKS: usize = 4096;
/// Default time an open task is remembered without reaching a terminal state
/// (`--open-task-ttl`): the kitchen's and most servers' task TTLs are shorter.
pub const DEFAULT_OPEN_TASK_TTL: Duration = Duration::from_secs(3600);

/// What the proxy remembers of a task between its creation and its end.
#[derive(Debug, Clone)]
pub struct OpenTask {
    /// The task id the server gave.
    pub task_id: String,
    /// The record of the `tools/call` that created it.
    pub record_id: String,
    /// The tool called.
    pub tool: Option<String>,
    /// Who called it.
    pub client: Option<ClientId>,
    /// Its legacy session, when logged.
    pub session_id: Option<String>,
    /// The revision of the creating call.
    pub protocol_version: Option<String>,
    /// When the creating call arrived at the proxy (the call's duration runs from there).
    pub started: Instant,
    /// When the task was last created or polled (the TTL runs from there).
    pub last_seen: Instant,
    /// `tasks/get` (and `tasks/result`) exchanges seen for it.
    pub polls: u32,
}

/// Why an open task left the table without its end being seen.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Evicted {
    /// Not polled within the TTL.
    Expired,
    /// The table was full and it was the least recently seen.
    Full,
    /// The proxy stopped while the task was open.
    Stopped,
}

/// The open tasks, bounded in count and in time.
#[derive(Debug)]
pub struct OpenTasks {
    max: usize,
    ttl: Duration,
    tasks: HashMap<String, OpenTask>,
}

impl OpenTasks {
    /// An empty table holding at most `max` tasks (at least 1), each for at most `ttl` since
    /// it was last seen.
    pub fn new(max: usize, ttl: Duration) -> OpenTasks {
        OpenTasks {
            max: max.max(1),
            ttl,
            tasks: HashMap::new(),
        }
    }

    /// Number of open tasks.
    pub fn len(&self) -> usize {
        self.tasks.len()
    }

    /// Whether no task is open.
    pub fn is_empty(&self) -> bool {
        self.tasks.is_empty()
    }

    /// Adds a task; returns the tasks that had to leave (expired ones, then the least
    /// recently seen when the table is full), for the caller to record.
    pub fn open(&mut self, task: OpenTask, now: Instant) -> Vec<(OpenTask, Evicted)> {
        let mut out = self.expire(now);
        if !self.tasks.contains_key(&task.task_id) && self.tasks.len() >= self.max {
            if let Some(oldest) = self
                .tasks
                .values()
                .min_by_key(|t| t.last_seen)
                .map(|t| t.task_id.clone())
            {
                if let Some(t) = self.tasks.remove(&oldest) {
                    out.push((t, Evicted::Full));
                }
            }
        }
        self.tasks.insert(task.task_id.clone(), task);
        out
    }

    /// The open task `id`, marked seen now (a poll keeps it alive); `None` when unknown or
    /// past its TTL (it stays for [`OpenTasks::expire`] to report).
    pub fn touch(&mut self, id: &str, now: Instant) -> Option<&mut OpenTask> {
        let ttl = self.ttl;
        let t = self.tasks.get_mut(id)?;
        if now.duration_since(t.last_seen) > ttl {
            return None;
        }
        t.last_seen = now;
        Some(t)
    }

    /// Removes the task `id` (its end was seen).
    pub fn close(&mut self, id: &str) -> Option<OpenTask> {
        self.tasks.remove(id)
    }

    /// Removes and returns every open task (the proxy stops).
    pub fn drain(&mut self) -> Vec<(OpenTask, Evicted)> {
        let mut all: Vec<OpenTask> = self.tasks.drain().map(|(_, t)| t).collect();
        all.sort_by_key(|t| t.started);
        all.into_iter().map(|t| (t, Evicted::Stopped)).collect()
    }

    /// Removes and returns the tasks not seen within the TTL.
    pub fn expire(&mut self, now: Instant) -> Vec<(OpenTask, Evicted)> {
        let ttl = self.ttl;
        let gone: Vec<String> = self
            .tasks
            .values()
            .filter(|t| now.duration_since(t.last_seen) > ttl)
            .map(|t| t.task_id.clone())
            .collect();
        gone.into_iter()
            .filter_map(|id| self.tasks.remove(&id))
            .map(|t| (t, Evicted::Expired))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn task(id: &str, at: Instant) -> OpenTask {
        OpenTask {
            task_id: id.into(),
            record_id: format!("r-{id}"),
            tool: Some("t".into()),
            client: None,
            session_id: None,
            protocol_version: None,
            started: at,
            last_seen: at,
            polls: 0,
        }
    }

    #[test]
    fn the_table_is_bounded_in_count_and_time() {
        let t0 = Instant::now();
        let mut open = OpenTasks::new(2, Duration::from_secs(10));
        assert!(open.open(task("a", t0), t0).is_empty());
        assert!(open
            .open(task("b", t0 + Duration::from_secs(1)), t0)
            .is_empty());
        // a poll keeps "a" alive: "b" is now the least recently seen
        assert!(open.touch("a", t0 + Duration::from_secs(2)).is_some());
        let out = open.open(
            task("c", t0 + Duration::from_secs(3)),
            t0 + Duration::from_secs(3),
        );
        assert_eq!(out.len(), 1);
        assert_eq!((out[0].0.task_id.as_str(), out[0].1), ("b", Evicted::Full));
        assert_eq!(open.len(), 2);
        // past the TTL a task cannot be touched, and the next creation reports it expired
        let late = t0 + Duration::from_secs(14);
        assert!(open.touch("a", late).is_none());
        let out = open.open(task("d", late), late);
        assert_eq!(out.len(), 2, "{out:?}");
        assert!(out.iter().all(|(_, why)| *why == Evicted::Expired));
        assert!(open.close("d").is_some());
        assert!(open.is_empty());
    }
}
