//! Rows of a ClickHouse executable UDF's standard input, one a line.
//!
//! Why not `classify --batch`'s block reader: it waits until 2 MB of input are there, and an
//! `executable_pool` process gets one block, then nothing until its results are back. This reader
//! takes what a read returns and, before every read that may wait, flushes the results written so
//! far, so a block's results always reach ClickHouse before the process waits for more.

use std::io::{self, Read, Write};

/// One row: its bytes (without the line end), or a row longer than the limit, read past.
pub enum Row<'a> {
    Line(&'a [u8]),
    TooLong { limit: usize },
}

pub struct RowReader<R> {
    inner: R,
    buf: Vec<u8>,
    start: usize,
    end: usize,
    max_row: usize,
    eof: bool,
}

impl<R: Read> RowReader<R> {
    pub fn new(inner: R, max_row: usize) -> Self {
        RowReader {
            inner,
            buf: vec![0; (64 << 10).min(max_row.saturating_add(1)).max(1)],
            start: 0,
            end: 0,
            max_row,
            eof: false,
        }
    }

    /// The next row, or None at the end of the input. `pending` is flushed before any read
    /// that may wait for ClickHouse.
    pub fn next_row(&mut self, pending: &mut impl Write) -> io::Result<Option<Row<'_>>> {
        loop {
            let have = &self.buf[self.start..self.end];
            if let Some(i) = memchr::memchr(b'\n', have) {
                if i > self.max_row {
                    self.start += i + 1;
                    return Ok(Some(Row::TooLong {
                        limit: self.max_row,
                    }));
                }
                let row = self.start..self.start + i;
                self.start += i + 1;
                return Ok(Some(Row::Line(&self.buf[row])));
            }
            if have.len() > self.max_row {
                self.skip_rest_of_row(pending)?;
                return Ok(Some(Row::TooLong {
                    limit: self.max_row,
                }));
            }
            if self.eof {
                if have.is_empty() {
                    return Ok(None);
                }
                // A last row without its line end.
                let row = self.start..self.end;
                self.start = self.end;
                return Ok(Some(Row::Line(&self.buf[row])));
            }
            self.fill(pending)?;
        }
    }

    /// Makes room (keeping the partial row), flushes `pending`, reads once.
    fn fill(&mut self, pending: &mut impl Write) -> io::Result<()> {
        self.buf.copy_within(self.start..self.end, 0);
        self.end -= self.start;
        self.start = 0;
        if self.end == self.buf.len() {
            // A partial row fills the buffer: grow it, never past the row limit (+ line end).
            let want = (self.buf.len() * 2).min(self.max_row.saturating_add(2));
            self.buf.resize(want.max(self.end + 1), 0);
        }
        pending.flush()?;
        loop {
            match self.inner.read(&mut self.buf[self.end..]) {
                Ok(0) => {
                    self.eof = true;
                    return Ok(());
                }
                Ok(n) => {
                    self.end += n;
                    return Ok(());
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e),
            }
        }
    }

    /// Drops a too-long row's bytes up to and including its line end (or the input's end).
    fn skip_rest_of_row(&mut self, pending: &mut impl Write) -> io::Result<()> {
        loop {
            if let Some(i) = memchr::memchr(b'\n', &self.buf[self.start..self.end]) {
                self.start += i + 1;
                return Ok(());
            }
            self.start = self.end;
            if self.eof {
                return Ok(());
            }
            self.fill(pending)?;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rows(input: &[u8], max: usize) -> Vec<String> {
        let mut r = RowReader::new(input, max);
        let mut sink = Vec::new();
        let mut out = Vec::new();
        while let Some(row) = r.next_row(&mut sink).unwrap() {
            out.push(match row {
                Row::Line(l) => String::from_utf8_lossy(l).into_owned(),
                Row::TooLong { limit } => format!("too long (> {limit})"),
            });
        }
        out
    }

    #[test]
    fn splits_rows_and_keeps_a_last_row_without_line_end() {
        assert_eq!(rows(b"a\nbb\n\nc", 10), ["a", "bb", "", "c"]);
        assert!(rows(b"", 10).is_empty());
    }

    #[test]
    fn a_too_long_row_is_one_row_and_the_next_rows_follow() {
        let long = "x".repeat(200_000);
        let input = format!("a\n{long}\nb\n{long}");
        assert_eq!(
            rows(input.as_bytes(), 1000),
            ["a", "too long (> 1000)", "b", "too long (> 1000)"]
        );
        // Exactly the limit is accepted.
        assert_eq!(rows(b"12345\n123456\n", 5), ["12345", "too long (> 5)"]);
    }

    /// A reader that gives one byte a call and records whether the results were flushed
    /// before each read: the pool protocol's deadlock guard.
    struct Trickle<'a>(&'a [u8]);
    impl Read for Trickle<'_> {
        fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
            let n = self.0.len().min(1).min(buf.len());
            buf[..n].copy_from_slice(&self.0[..n]);
            self.0 = &self.0[n..];
            Ok(n)
        }
    }

    struct CountFlushes(usize);
    impl Write for CountFlushes {
        fn write(&mut self, b: &[u8]) -> io::Result<usize> {
            Ok(b.len())
        }
        fn flush(&mut self) -> io::Result<()> {
            self.0 += 1;
            Ok(())
        }
    }

    #[test]
    fn flushes_before_every_read() {
        let mut r = RowReader::new(Trickle(b"ab\ncd\n"), 100);
        let mut f = CountFlushes(0);
        let mut n = 0;
        while r.next_row(&mut f).unwrap().is_some() {
            n += 1;
        }
        assert_eq!(n, 2);
        assert_eq!(
            f.0, 7,
            "6 bytes one at a time, then the read that sees the end"
        );
    }
}
