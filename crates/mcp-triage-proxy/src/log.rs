//! The record writer: records go through an unbounded channel to one writer thread, so that
//! forwarding never waits on the disk and no record is dropped; closing the sink and joining the
//! writer drains whatever is queued (that is what SIGTERM does).
//!
//! Why the writer lingers: waking a parked thread costs a futex call on the forwarding thread and
//! two context switches, and on a small machine that was the proxy's largest single cost (a
//! `perf` profile at 15k exchanges/s spent about 40% of the proxy's CPU in the scheduler). So
//! after writing a batch the writer sleeps [`LINGER`] and looks again before it parks:
//! while records keep coming it wakes once per linger, not once per record, and a sender only
//! pays a wake when the writer is parked. A record reaches the file at most one linger later.

use std::io::{BufWriter, Write};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

use tokio::sync::mpsc::error::TryRecvError;
use tokio::sync::mpsc::{unbounded_channel, UnboundedReceiver, UnboundedSender};

use crate::record::Record;

/// Something that consumes finished records besides the JSONL file (the OpenTelemetry exporter).
pub trait RecordConsumer: Send {
    /// Called once per record, on the writer thread.
    fn consume(&mut self, record: &Record);
    /// Called once when the sink closed, after the last record.
    fn close(&mut self) {}
}

/// Where records go: cheap to clone, one per producer.
#[derive(Clone)]
pub struct RecordSink {
    tx: UnboundedSender<Record>,
}

impl RecordSink {
    /// Queues a record. Never blocks; a record sent after the writer ended is counted lost.
    pub fn send(&self, record: Record) {
        let _ = self.tx.send(record);
    }
}

/// What the writer did, returned when it is drained.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct WriterStats {
    /// Records written (or consumed, without a log file).
    pub records: u64,
    /// Write errors (the first one is reported on stderr; records after it are still counted).
    pub write_errors: u64,
}

/// How long the writer waits for more records after a batch before it parks (see the module doc).
pub const LINGER: Duration = Duration::from_millis(1);

/// The writer thread; [`LogWriter::drain`] waits until every queued record is written.
pub struct LogWriter {
    thread: Option<JoinHandle<WriterStats>>,
}

impl LogWriter {
    /// Starts the writer on `out` (None: records only go to the consumers), lingering
    /// [`LINGER`] between batches.
    pub fn start(
        out: Option<Box<dyn Write + Send>>,
        consumers: Vec<Box<dyn RecordConsumer>>,
    ) -> (RecordSink, LogWriter) {
        let (tx, rx) = unbounded_channel();
        let thread = std::thread::Builder::new()
            .name("mcp-triage-log".into())
            .spawn(move || write_loop(rx, out, consumers))
            .expect("spawning the log writer thread");
        (
            RecordSink { tx },
            LogWriter {
                thread: Some(thread),
            },
        )
    }

    /// Waits for the writer to write every record queued by sinks that are now dropped.
    /// Every [`RecordSink`] clone must be dropped first, or this waits for them.
    pub fn drain(mut self) -> WriterStats {
        self.thread
            .take()
            .and_then(|t| t.join().ok())
            .unwrap_or_default()
    }
}

fn write_loop(
    mut rx: UnboundedReceiver<Record>,
    out: Option<Box<dyn Write + Send>>,
    mut consumers: Vec<Box<dyn RecordConsumer>>,
) -> WriterStats {
    let mut out = out.map(|o| BufWriter::with_capacity(64 << 10, o));
    let mut stats = WriterStats::default();
    let mut line = Vec::with_capacity(1024);
    // Parked until a record arrives (or every sink is gone).
    'parked: while let Some(first) = rx.blocking_recv() {
        let mut next = Some(first);
        loop {
            while let Some(record) = next.take() {
                for c in consumers.iter_mut() {
                    c.consume(&record);
                }
                if let Some(w) = out.as_mut() {
                    line.clear();
                    serde_json::to_writer(&mut line, &record).expect("a record serialises");
                    line.push(b'\n');
                    if let Err(e) = w.write_all(&line) {
                        if stats.write_errors == 0 {
                            eprintln!("mcp-triage: cannot write the record log: {e}");
                        }
                        stats.write_errors += 1;
                    }
                }
                stats.records += 1;
                next = rx.try_recv().ok();
            }
            // The queue is empty for now: make what was written visible to readers of the file.
            if let Some(w) = out.as_mut() {
                if w.flush().is_err() {
                    stats.write_errors += 1;
                }
            }
            std::thread::sleep(LINGER);
            match rx.try_recv() {
                Ok(r) => next = Some(r),
                Err(TryRecvError::Empty) => continue 'parked,
                Err(TryRecvError::Disconnected) => break 'parked,
            }
        }
    }
    for c in consumers.iter_mut() {
        c.close();
    }
    stats
}

/// A consumer that keeps records in memory (tests, and embedders that want records directly).
#[derive(Clone, Default)]
pub struct MemoryConsumer(pub Arc<Mutex<Vec<Record>>>);

impl RecordConsumer for MemoryConsumer {
    fn consume(&mut self, record: &Record) {
        self.0.lock().expect("records lock").push(record.clone());
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::{rfc3339, RecordKind};

    #[test]
    fn drain_writes_every_queued_record() {
        let mem = MemoryConsumer::default();
        let path =
            std::env::temp_dir().join(format!("mcp-triage-log-{}.jsonl", std::process::id()));
        let file = std::fs::File::create(&path).unwrap();
        let (sink, writer) = LogWriter::start(Some(Box::new(file)), vec![Box::new(mem.clone())]);
        for i in 0..1000 {
            sink.send(Record::new(
                i.to_string(),
                rfc3339(0),
                RecordKind::Request,
                "http",
            ));
        }
        drop(sink);
        let stats = writer.drain();
        assert_eq!(stats.records, 1000);
        let text = std::fs::read_to_string(&path).unwrap();
        assert_eq!(text.lines().count(), 1000);
        assert_eq!(mem.0.lock().unwrap().len(), 1000);
        let _ = std::fs::remove_file(path);
    }
}
