//! `classify --batch`: an exchange file (what [`crate::capture`] writes, see bench/README.md)
//! classified line by line with the core classifier, on worker threads.
//!
//! Why here: the core must stay free of I/O, threads and files, and the report crate renders
//! a result model without I/O of its own; this engine reads files and spawns threads. The proxy
//! crate is the I/O around the core's classifier already, and the exchange file is its own
//! capture format: the proxy writes it while observing, this module reads it back and gives
//! the same verdicts offline. The binary only parses `classify`'s arguments and prints.
//!
//! The main thread cuts the file into 2 MiB blocks of whole lines, workers classify blocks
//! round-robin, and a writer collects results round-robin, so output keeps input order and
//! memory stays at a few blocks whatever the file size.

mod blocks;
mod summary;

use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::path::Path;
use std::sync::mpsc::{sync_channel, Receiver, SyncSender};

use mcp_triage_core::exchange::Exchange;
use mcp_triage_core::{CallContext, Verdict};

use blocks::{trim_line_end, Block, BlockReader, ReadFailure, SplitLines};
pub use summary::{
    BadLine, BatchSummary, KindCounts, FIRST_BAD_LINES_SHOWN, MAX_KINDS, OTHER_KINDS,
};

/// How a verdict (or a bad line) is printed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum VerdictFormat {
    /// One line a person can read.
    Text,
    /// The verdict as JSON (one object a line).
    Json,
}

/// How a batch runs: what it prints, what stops it, how many threads.
#[derive(Debug, Clone, Copy)]
pub struct BatchOptions {
    /// `--each`: print every verdict, and every bad line in its place, in this format.
    pub each: Option<VerdictFormat>,
    /// `--fail-fast`: stop at the first bad line.
    pub fail_fast: bool,
    /// Worker threads (at least one is used).
    pub jobs: usize,
    /// The longest line accepted; a longer one is a bad line.
    pub max_line_bytes: usize,
}

/// Why a batch did not run to its end.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum BatchError {
    /// The exchange file cannot be opened.
    #[error("cannot read {path}: {source}")]
    Open {
        /// The file as given.
        path: String,
        /// Why.
        source: io::Error,
    },
    /// The exchange file could not be read to its end.
    #[error("{path}: line {line}: {source}")]
    Read {
        /// The file as given.
        path: String,
        /// The line the reader was at.
        line: u64,
        /// Why.
        source: io::Error,
    },
    /// With `fail_fast`: the first line that is not an exchange.
    #[error("{path}: line {}: {}", bad.line, bad.error)]
    BadLine {
        /// The file as given.
        path: String,
        /// The line and why it is not an exchange.
        bad: BadLine,
    },
    /// The output could not be written.
    #[error("cannot write: {0}")]
    Write(#[source] io::Error),
}

/// One exchange's verdict under `base`, with the exchange's own settings (id, protocol version,
/// schema, now) over it: the single place where a batch line or a UDF row is classified.
pub fn classify_exchange(x: &Exchange<'_>, base: &CallContext) -> Verdict {
    x.classify(&x.context(base))
}

/// Writes a verdict as one line in `format`.
pub fn write_verdict(out: &mut impl Write, v: &Verdict, format: VerdictFormat) -> io::Result<()> {
    match format {
        VerdictFormat::Text => writeln!(out, "{}", v.to_text_line()),
        VerdictFormat::Json => {
            serde_json::to_writer(&mut *out, v)?;
            out.write_all(b"\n")
        }
    }
}

/// What a worker made of one block: its share of the summary (bad lines included), its printed
/// verdicts and bad-line records, and with `fail_fast` the first bad line (the block stops
/// there).
struct BlockResult {
    summary: BatchSummary,
    printed: Vec<u8>,
    error: Option<BadLine>,
}

impl BlockResult {
    /// Records a bad line: reported and counted, or the end of the batch with `fail_fast`.
    /// Returns false when the block must stop.
    fn bad_line(&mut self, bad: BadLine, opts: &BatchOptions) -> bool {
        if opts.fail_fast {
            self.error = Some(bad);
            return false;
        }
        if let Some(format) = opts.each {
            match format {
                VerdictFormat::Json => {
                    serde_json::to_writer(&mut self.printed, &bad.to_json())
                        .expect("writing to a Vec cannot fail");
                    self.printed.push(b'\n');
                }
                VerdictFormat::Text => {
                    self.printed.extend_from_slice(bad.to_text().as_bytes());
                    self.printed.push(b'\n');
                }
            }
        }
        self.summary.add_bad_line(bad);
        true
    }
}

fn classify_block(block: &Block, base: &CallContext, opts: &BatchOptions) -> BlockResult {
    let mut r = BlockResult {
        summary: BatchSummary::default(),
        printed: Vec::new(),
        error: None,
    };
    if let Some(why) = &block.too_long {
        let bad = BadLine {
            line: block.first_line,
            error: why.clone(),
        };
        r.bad_line(bad, opts);
        return r;
    }
    for (this, line) in (block.first_line..).zip(SplitLines::new(&block.bytes)) {
        let text = trim_line_end(line);
        if text.iter().all(u8::is_ascii_whitespace) {
            continue; // blank lines carry no exchange; the seed skips them too
        }
        let x = match Exchange::parse(text) {
            Ok(x) => x,
            Err(e) => {
                let bad = BadLine {
                    line: this,
                    error: e.to_string(),
                };
                if r.bad_line(bad, opts) {
                    continue;
                }
                break;
            }
        };
        let v = classify_exchange(&x, base);
        let kind = x.kind();
        let (counted, _) = kind.counted(x.head.status, &v);
        r.summary
            .add_exchange(kind, counted, v.outcome, x.body.len());
        if let Some(format) = opts.each {
            write_verdict(&mut r.printed, &v, format).expect("writing to a Vec cannot fail");
        }
    }
    r
}

/// Collects the workers' results round-robin (input order), writes what they printed to `out`
/// and adds up their summaries; stops at a `fail_fast` bad line.
fn collect(
    from_workers: &[Receiver<BlockResult>],
    out: impl Write,
    path: &str,
) -> Result<BatchSummary, BatchError> {
    let mut out = BufWriter::with_capacity(1 << 16, out);
    let mut summary = BatchSummary::default();
    let mut turn = 0;
    while let Ok(r) = from_workers[turn].recv() {
        turn = (turn + 1) % from_workers.len();
        summary.merge(&r.summary);
        out.write_all(&r.printed).map_err(BatchError::Write)?;
        if let Some(bad) = r.error {
            out.flush().map_err(BatchError::Write)?;
            return Err(BatchError::BadLine {
                path: path.to_string(),
                bad,
            });
        }
    }
    out.flush().map_err(BatchError::Write)?;
    Ok(summary)
}

/// Classifies the exchange file at `path` under `base` with `opts.jobs` worker threads,
/// writing the `--each` lines (if any) to `out` in input order, and returns the summary
/// (printing it is the caller's: it is not printed with `--each`).
///
/// Blocks of lines go to workers round-robin and results are collected round-robin, so output
/// keeps input order without a reorder buffer; channels are bounded, so memory stays at a few
/// blocks whatever the file size.
pub fn classify_file(
    path: &Path,
    opts: &BatchOptions,
    base: &CallContext,
    out: impl Write + Send,
) -> Result<BatchSummary, BatchError> {
    let shown = path.display().to_string();
    let mut reader = File::open(path).map_err(|source| BatchError::Open {
        path: shown.clone(),
        source,
    })?;
    let jobs = opts.jobs.max(1);
    std::thread::scope(|scope| {
        let mut to_workers: Vec<SyncSender<Block>> = Vec::new();
        let mut from_workers: Vec<Receiver<BlockResult>> = Vec::new();
        for _ in 0..jobs {
            let (block_tx, block_rx) = sync_channel::<Block>(1);
            let (res_tx, res_rx) = sync_channel::<BlockResult>(1);
            scope.spawn(move || {
                for block in block_rx {
                    if res_tx.send(classify_block(&block, base, opts)).is_err() {
                        break;
                    }
                }
            });
            to_workers.push(block_tx);
            from_workers.push(res_rx);
        }
        let shown_ref = shown.as_str();
        let writer = scope.spawn(move || collect(&from_workers, out, shown_ref));

        let mut sent = 0usize;
        let mut blocks = BlockReader::new(&mut reader, opts.max_line_bytes);
        let read_result = loop {
            match blocks.next_block() {
                Ok(Some(block)) => {
                    if to_workers[sent % jobs].send(block).is_err() {
                        break Ok(()); // the writer stopped on an error; it reports it
                    }
                    sent += 1;
                }
                Ok(None) => break Ok(()),
                Err(ReadFailure { line, source }) => {
                    break Err(BatchError::Read {
                        path: shown.clone(),
                        line,
                        source,
                    })
                }
            }
        };
        drop(to_workers);
        let summary = writer.join().expect("the writer thread does not panic")?;
        read_result?;
        Ok(summary)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const GOOD: &str = r#"{"status":200,"contentType":"application/json","body":"{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"content\":[]}}"}"#;

    fn file(name: &str, text: &str) -> std::path::PathBuf {
        let dir = std::env::temp_dir().join(format!("mcp-triage-batch-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let p = dir.join(name);
        std::fs::write(&p, text).unwrap();
        p
    }

    fn opts(each: Option<VerdictFormat>, fail_fast: bool) -> BatchOptions {
        BatchOptions {
            each,
            fail_fast,
            jobs: 2,
            max_line_bytes: 1 << 20,
        }
    }

    #[test]
    fn bad_lines_are_counted_and_printed_in_their_place() {
        let p = file("mixed.jsonl", &format!("{GOOD}\nnot json\n\n{GOOD}\n"));
        let mut out = Vec::new();
        let s = classify_file(
            &p,
            &opts(Some(VerdictFormat::Text), false),
            &CallContext::new(mcp_triage_core::RequestId::Number(1)),
            &mut out,
        )
        .unwrap();
        assert_eq!((s.verdicts(), s.bad_lines()), (2, 1));
        assert_eq!(s.first_bad_lines()[0].line, 2);
        let text = String::from_utf8(out).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 3, "{text}");
        assert!(lines[1].starts_with("line 2: bad exchange: "), "{text}");
    }

    #[test]
    fn fail_fast_names_the_file_and_the_line() {
        let p = file("fail.jsonl", &format!("{GOOD}\nnot json\n"));
        let e = classify_file(
            &p,
            &opts(None, true),
            &CallContext::new(mcp_triage_core::RequestId::Number(1)),
            io::sink(),
        )
        .unwrap_err();
        let shown = e.to_string();
        assert!(
            shown.starts_with(&format!("{}: line 2: ", p.display())),
            "{shown}"
        );
        let missing = classify_file(
            &p.with_file_name("missing.jsonl"),
            &opts(None, false),
            &CallContext::new(mcp_triage_core::RequestId::Number(1)),
            io::sink(),
        )
        .unwrap_err();
        assert!(matches!(missing, BatchError::Open { .. }), "{missing:?}");
    }
}
