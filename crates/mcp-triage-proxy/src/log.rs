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
//!
//! Why the writer keeps its own batch instead of a `BufWriter`: a full disk must not lose records
//! silently. The writer knows which bytes of a batch reached the file, so it counts as written
//! only the lines that did, reports the first failure on stderr at once (and how many records it
//! has lost while the failure lasts), and starts a new line after a line the failure tore, so
//! the next record is never glued to half of an earlier one. A log opened with
//! [`open_append`] whose last line was torn (a `SIGKILL` or a crash mid-write) is treated the
//! same way.

use std::fs::File;
use std::io::{self, Read, Seek, SeekFrom, Write};
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

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
///
/// Records travel boxed: a `Record` is about a kilobyte, and by value the channel copied it in
/// and out of its block and the writer moved it again, each a `memcpy` of the whole record
/// (with the pointer alone, about 1k instructions per exchange less under callgrind).
#[derive(Clone)]
pub struct RecordSink {
    tx: UnboundedSender<Box<Record>>,
}

impl RecordSink {
    /// Queues a record. Never blocks; a record sent after the writer ended is counted lost.
    pub fn send(&self, record: Record) {
        self.send_boxed(Box::new(record));
    }

    /// [`RecordSink::send`] for a record built in a box already (an observer's call).
    pub fn send_boxed(&self, record: Box<Record>) {
        let _ = self.tx.send(record);
    }
}

/// What the writer did, returned when it is drained.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct WriterStats {
    /// Records written whole to the log (or, without a log file, handed to the consumers).
    pub records: u64,
    /// Records that did not reach the log because a write failed (a full disk, say); the
    /// consumers still had them.
    pub lost: u64,
    /// Failed writes (each reported on stderr: the first at once, then at most once a second).
    pub write_errors: u64,
}

/// How long the writer waits for more records after a batch before it parks (see the module doc).
pub const LINGER: Duration = Duration::from_millis(1);

/// Bytes of records the writer collects before it writes them.
const BATCH_BYTES: usize = 64 << 10;

/// How often, at most, a write failure that goes on is reported again.
const REPORT_EVERY: Duration = Duration::from_secs(1);

/// A log file opened for appending, and whether its last line lacks its newline.
pub struct AppendLog {
    /// The file, opened for appending (created when missing).
    pub file: File,
    /// The file ends in the middle of a line (an earlier writer died mid-write): the next
    /// record starts on a new line.
    pub torn: bool,
}

/// Opens (or creates) `path` for appending records and looks at its last byte (see
/// [`AppendLog::torn`]). Something that is not a regular file (`/dev/full`, a pipe) is never
/// torn.
pub fn open_append(path: &Path) -> io::Result<AppendLog> {
    let mut file = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .read(true)
        .open(path)
        .or_else(|_| {
            // Write-only files (and special files that refuse reading) are still logs.
            std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(path)
        })?;
    let meta = file.metadata()?;
    let mut torn = false;
    if meta.is_file() && meta.len() > 0 {
        let mut last = [0u8; 1];
        let read = file
            .seek(SeekFrom::End(-1))
            .and_then(|_| file.read_exact(&mut last));
        torn = read.is_ok() && last[0] != b'\n';
    }
    Ok(AppendLog { file, torn })
}

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
        LogWriter::start_after(out, false, consumers)
    }

    /// [`LogWriter::start`] on an output whose last line may be `torn` (see [`open_append`]):
    /// then the first record starts with a newline.
    pub fn start_after(
        out: Option<Box<dyn Write + Send>>,
        torn: bool,
        consumers: Vec<Box<dyn RecordConsumer>>,
    ) -> (RecordSink, LogWriter) {
        let (tx, rx) = unbounded_channel();
        let out = out.map(|out| LineBatch::new(out, torn, "the record log"));
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

/// Whole lines waiting to be written, and what is known about the end of the file. Shared by
/// the record log and the capture file (`crate::capture`), so both count, report and recover
/// from write failures the same way.
pub(crate) struct LineBatch {
    out: Box<dyn Write + Send>,
    /// What the output is, for messages ("the record log", "the capture file").
    what: &'static str,
    buf: Vec<u8>,
    /// Lines in `buf`.
    lines: u64,
    /// The file ends mid-line: write a newline before the next line.
    torn: bool,
    /// Records lost since the last report, and when that was (None: no failure going on).
    failing: Option<(u64, Instant)>,
    /// Bytes that reached the current output (since [`LineBatch::new`] or the last
    /// [`LineBatch::switch_to`]): what the capture's rotation counts, so failed writes never
    /// make a file look full.
    written: u64,
}

impl LineBatch {
    pub(crate) fn new(out: Box<dyn Write + Send>, torn: bool, what: &'static str) -> LineBatch {
        LineBatch {
            out,
            what,
            buf: Vec::with_capacity(BATCH_BYTES + 1024),
            lines: 0,
            torn,
            failing: None,
            written: 0,
        }
    }

    /// Bytes that reached the current output (see [`LineBatch::written`]'s field).
    pub(crate) fn written(&self) -> u64 {
        self.written
    }

    /// Bytes collected and not yet written.
    pub(crate) fn pending(&self) -> u64 {
        self.buf.len() as u64
    }

    fn push(&mut self, record: &Record, stats: &mut WriterStats) {
        // the hand-written writer (`record_json`), byte-equal to serde's and several times
        // cheaper; writing into a Vec does not fail
        self.push_with(stats, |buf| {
            let _ = record.write_json(buf);
        });
    }

    /// Adds one line: `line` appends it to the batch without its newline (serde_json escapes
    /// control characters, so JSON is exactly one line). Writes the batch once it is full.
    pub(crate) fn push_with(&mut self, stats: &mut WriterStats, line: impl FnOnce(&mut Vec<u8>)) {
        if self.buf.is_empty() && self.torn {
            self.buf.push(b'\n');
        }
        line(&mut self.buf);
        self.buf.push(b'\n');
        self.lines += 1;
        if self.buf.len() >= BATCH_BYTES {
            self.write(stats);
        }
    }

    /// Writes what is collected, then goes on on `out` (a rotated file: it starts clean).
    pub(crate) fn switch_to(&mut self, out: Box<dyn Write + Send>, stats: &mut WriterStats) {
        self.write(stats);
        self.out = out;
        self.torn = false;
        self.written = 0;
    }

    /// Writes the batch; counts the lines that reached the output whole as written, the rest
    /// as lost.
    pub(crate) fn write(&mut self, stats: &mut WriterStats) {
        if self.lines == 0 {
            return;
        }
        let lead = usize::from(self.torn);
        let mut at = 0;
        let failure = loop {
            if at == self.buf.len() {
                break self.out.flush().err();
            }
            match self.out.write(&self.buf[at..]) {
                Ok(0) => {
                    break Some(io::Error::new(
                        io::ErrorKind::WriteZero,
                        "the log took no bytes",
                    ))
                }
                Ok(n) => at += n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => break Some(e),
            }
        };
        // All written: every line is whole (each `push` ends exactly one line), so only a short
        // write needs the newlines counted (a byte-by-byte pass over the batch cost about 5% of
        // the proxy's instructions per exchange).
        let whole = if at == self.buf.len() {
            self.lines
        } else {
            let ended = self.buf[lead.min(at)..at]
                .iter()
                .filter(|&&b| b == b'\n')
                .count() as u64;
            ended.min(self.lines)
        };
        stats.records += whole;
        self.written += at as u64;
        let lost = self.lines - whole;
        if at > 0 {
            // The file now ends where this write stopped.
            self.torn = self.buf[at - 1] != b'\n';
        }
        self.buf.clear();
        self.lines = 0;
        match failure {
            Some(e) => {
                stats.write_errors += 1;
                stats.lost += lost;
                self.report(lost, &e);
            }
            None => {
                if let Some((since_report, _)) = self.failing.take() {
                    eprintln!(
                        "mcp-triage: {} is writable again ({} record(s) lost in all; {since_report} since the last report)",
                        self.what, stats.lost
                    );
                }
            }
        }
    }

    fn report(&mut self, lost: u64, e: &io::Error) {
        let now = Instant::now();
        match &mut self.failing {
            None => {
                eprintln!(
                    "mcp-triage: cannot write {}: {e}; {lost} record(s) lost (reported again at most once a second while it lasts)",
                    self.what
                );
                self.failing = Some((0, now));
            }
            Some((since, at)) => {
                *since += lost;
                if now.duration_since(*at) >= REPORT_EVERY {
                    eprintln!(
                        "mcp-triage: {} still fails: {e}; {since} more record(s) lost",
                        self.what
                    );
                    *since = 0;
                    *at = now;
                }
            }
        }
    }
}

fn write_loop(
    rx: UnboundedReceiver<Box<Record>>,
    out: Option<LineBatch>,
    consumers: Vec<Box<dyn RecordConsumer>>,
) -> WriterStats {
    struct Writer {
        out: Option<LineBatch>,
        consumers: Vec<Box<dyn RecordConsumer>>,
        stats: WriterStats,
    }
    let mut w = Writer {
        out,
        consumers,
        stats: WriterStats::default(),
    };
    linger_loop(
        rx,
        &mut w,
        |w, record| {
            for c in w.consumers.iter_mut() {
                c.consume(&record);
            }
            match w.out.as_mut() {
                Some(batch) => batch.push(&record, &mut w.stats),
                None => w.stats.records += 1,
            }
        },
        // The queue is empty for now: make what was collected visible to readers of the file.
        |w| {
            if let Some(batch) = w.out.as_mut() {
                batch.write(&mut w.stats);
            }
        },
    );
    for c in w.consumers.iter_mut() {
        c.close();
    }
    w.stats
}

/// The writer thread's loop (see the module doc): hands each item to `each`, calls `idle` when
/// the queue is empty for now (and once more at the end), lingers [`LINGER`] before it parks,
/// and returns when every sender is gone and the queue is drained.
pub(crate) fn linger_loop<T, S>(
    mut rx: UnboundedReceiver<T>,
    state: &mut S,
    mut each: impl FnMut(&mut S, T),
    mut idle: impl FnMut(&mut S),
) {
    // Parked until an item arrives (or every sender is gone).
    'parked: while let Some(first) = rx.blocking_recv() {
        let mut next = Some(first);
        loop {
            while let Some(item) = next.take() {
                each(state, item);
                next = rx.try_recv().ok();
            }
            idle(state);
            std::thread::sleep(LINGER);
            match rx.try_recv() {
                Ok(r) => next = Some(r),
                Err(TryRecvError::Empty) => continue 'parked,
                Err(TryRecvError::Disconnected) => break 'parked,
            }
        }
    }
    idle(state);
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

    fn record(i: usize) -> Record {
        Record::new(i.to_string(), rfc3339(0), RecordKind::Request, "http")
    }

    fn scratch(name: &str) -> std::path::PathBuf {
        std::env::temp_dir().join(format!(
            "mcp-triage-log-{}-{name}.jsonl",
            std::process::id()
        ))
    }

    #[test]
    fn drain_writes_every_queued_record() {
        let mem = MemoryConsumer::default();
        let path = scratch("drain");
        let file = std::fs::File::create(&path).unwrap();
        let (sink, writer) = LogWriter::start(Some(Box::new(file)), vec![Box::new(mem.clone())]);
        for i in 0..1000 {
            sink.send(record(i));
        }
        drop(sink);
        let stats = writer.drain();
        assert_eq!(stats.records, 1000);
        let text = std::fs::read_to_string(&path).unwrap();
        assert_eq!(text.lines().count(), 1000);
        assert_eq!(mem.0.lock().unwrap().len(), 1000);
        let _ = std::fs::remove_file(path);
    }

    /// A disk with `room` bytes left: writes past it fail with "no space", after taking what
    /// fits, as a write(2) to a full file system does; `room` can be raised again (space freed).
    #[derive(Clone)]
    struct SmallDisk {
        data: Arc<Mutex<Vec<u8>>>,
        room: Arc<Mutex<usize>>,
    }

    impl Write for SmallDisk {
        fn write(&mut self, b: &[u8]) -> io::Result<usize> {
            let mut room = self.room.lock().unwrap();
            if *room == 0 {
                return Err(io::Error::from_raw_os_error(28)); // ENOSPC
            }
            let n = b.len().min(*room);
            *room -= n;
            self.data.lock().unwrap().extend_from_slice(&b[..n]);
            Ok(n)
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    /// The disk fills mid-record: the count says how many records reached it whole, the rest
    /// are counted lost, and once there is room again the next record starts on a new line
    /// instead of completing the torn one.
    #[test]
    fn a_full_disk_is_counted_and_the_torn_line_is_not_continued() {
        let line_len = serde_json::to_vec(&record(0)).unwrap().len() + 1;
        let disk = SmallDisk {
            data: Arc::default(),
            // Two records and half of a third.
            room: Arc::new(Mutex::new(2 * line_len + line_len / 2)),
        };
        let (sink, writer) = LogWriter::start(Some(Box::new(disk.clone())), vec![]);
        for i in 0..5 {
            sink.send(record(i));
        }
        // Let the writer hit the full disk before space comes back.
        let deadline = Instant::now() + Duration::from_secs(5);
        while *disk.room.lock().unwrap() > 0 && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(5));
        }
        std::thread::sleep(Duration::from_millis(50));
        *disk.room.lock().unwrap() = 1 << 20;
        sink.send(record(5));
        drop(sink);
        let stats = writer.drain();
        assert_eq!(
            stats.records, 3,
            "records 0, 1 and 5 reached the disk whole"
        );
        assert_eq!(stats.lost, 3);
        assert!(stats.write_errors >= 1);
        let data = disk.data.lock().unwrap().clone();
        let text = String::from_utf8(data).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 4, "{text}");
        assert!(serde_json::from_str::<serde_json::Value>(lines[2]).is_err());
        let last: serde_json::Value = serde_json::from_str(lines[3]).unwrap();
        assert_eq!(last["recordId"], "5");
        assert!(text.ends_with('\n'));
    }

    /// `/dev/full` refuses every byte: nothing is counted written, everything lost.
    #[cfg(target_os = "linux")]
    #[test]
    fn dev_full_loses_every_record_and_says_so() {
        let log = open_append(Path::new("/dev/full")).unwrap();
        assert!(!log.torn);
        let (sink, writer) = LogWriter::start_after(Some(Box::new(log.file)), log.torn, vec![]);
        for i in 0..10 {
            sink.send(record(i));
        }
        drop(sink);
        let stats = writer.drain();
        assert_eq!((stats.records, stats.lost), (0, 10));
        assert!(stats.write_errors >= 1);
    }

    /// A log whose last line has no newline (its writer was killed mid-write) gets a newline
    /// before the first new record; a log that ends cleanly gets none.
    #[test]
    fn appending_to_a_torn_log_starts_a_new_line() {
        for (before, torn) in [("{\"recordId\":\"old\"}\n{\"reco", true), ("{}\n", false)] {
            let path = scratch(if torn { "torn" } else { "clean" });
            std::fs::write(&path, before).unwrap();
            let log = open_append(&path).unwrap();
            assert_eq!(log.torn, torn);
            let (sink, writer) = LogWriter::start_after(Some(Box::new(log.file)), log.torn, vec![]);
            sink.send(record(7));
            drop(sink);
            assert_eq!(writer.drain().records, 1);
            let text = std::fs::read_to_string(&path).unwrap();
            let last: serde_json::Value =
                serde_json::from_str(text.lines().last().unwrap()).unwrap();
            assert_eq!(last["recordId"], "7");
            assert_eq!(text.lines().count(), before.lines().count() + 1, "{text}");
            let _ = std::fs::remove_file(path);
        }
    }
}
