//! Cutting an exchange file into blocks of whole lines, and the lines of a block.

use std::io::{self, Read};

/// Bytes per block: large enough that channel traffic is negligible, small enough that the
/// blocks in flight (two per worker plus one being read) keep memory far below 64 MB.
pub(super) const BLOCK_BYTES: usize = 2 << 20;

/// A run of whole lines read together, so that workers and channels see few, large units; or
/// one line longer than the longest line accepted, which the reader skipped (`too_long` says
/// why).
pub(super) struct Block {
    pub(super) first_line: u64,
    pub(super) bytes: Vec<u8>,
    pub(super) too_long: Option<String>,
}

/// The input could not be read: the line the reader was at, and why.
#[derive(Debug)]
pub(super) struct ReadFailure {
    pub(super) line: u64,
    pub(super) source: io::Error,
}

/// Cuts a file into [`Block`]s of whole lines, reading straight into the block's buffer (one
/// copy from the kernel) and carrying a partial last line over to the next block. A line longer
/// than `max_line` becomes a block of its own that says so; its bytes are read past without being
/// kept, so memory stays bounded and the next line is read as usual.
pub(super) struct BlockReader<'r, R> {
    reader: &'r mut R,
    max_line: usize,
    carry: Vec<u8>,
    next_line: u64,
    eof: bool,
    /// The bytes at the reader's position belong to a too-long line already reported.
    skipping: bool,
}

impl<'r, R: Read> BlockReader<'r, R> {
    pub(super) fn new(reader: &'r mut R, max_line: usize) -> Self {
        BlockReader {
            reader,
            max_line,
            carry: Vec::new(),
            next_line: 1,
            eof: false,
            skipping: false,
        }
    }

    /// Reads into `buf`; 0 at the end of the input.
    fn read_into(&mut self, buf: &mut [u8]) -> Result<usize, ReadFailure> {
        loop {
            match self.reader.read(buf) {
                Ok(n) => return Ok(n),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(source) => {
                    return Err(ReadFailure {
                        line: self.next_line,
                        source,
                    })
                }
            }
        }
    }

    /// The block standing for the too-long line `next_line`.
    fn too_long(&mut self) -> Block {
        let block = Block {
            first_line: self.next_line,
            bytes: Vec::new(),
            too_long: Some(format!(
                "longer than --max-line-bytes {} (skipped)",
                self.max_line
            )),
        };
        self.next_line += 1;
        block
    }

    /// Reads past the rest of a too-long line, keeping what follows its line end.
    fn skip_rest_of_line(&mut self) -> Result<(), ReadFailure> {
        let mut scratch = vec![0u8; 64 << 10];
        while self.skipping {
            let n = self.read_into(&mut scratch)?;
            if n == 0 {
                self.eof = true;
                self.skipping = false;
            } else if let Some(i) = memchr::memchr(b'\n', &scratch[..n]) {
                self.carry = scratch[i + 1..n].to_vec();
                self.skipping = false;
            }
        }
        Ok(())
    }

    /// Reads until the buffer is full and holds at least one line end, or the input ends;
    /// `Some(block)` when the buffer turned out to be the start of a too-long line.
    fn fill(&mut self, buf: &mut Vec<u8>) -> Result<Option<Block>, ReadFailure> {
        loop {
            let have_line = memchr::memchr(b'\n', buf).is_some();
            if self.eof || (buf.len() >= BLOCK_BYTES && have_line) {
                return Ok(None);
            }
            if !have_line && buf.len() > self.max_line {
                // `buf` is the start of one line, already too long: report it, read past it.
                self.skipping = true;
                return Ok(Some(self.too_long()));
            }
            let want = BLOCK_BYTES.max(buf.len() / 2).min(64 << 20);
            let start = buf.len();
            buf.resize(start + want, 0);
            let n = self.read_into(&mut buf[start..])?;
            buf.truncate(start + n);
            if n == 0 {
                self.eof = true;
            }
        }
    }

    /// The next block, or None at the end of the input.
    pub(super) fn next_block(&mut self) -> Result<Option<Block>, ReadFailure> {
        if self.skipping {
            self.skip_rest_of_line()?;
        }
        if self.eof && self.carry.is_empty() {
            return Ok(None);
        }
        let mut buf = Vec::with_capacity(BLOCK_BYTES + self.carry.len());
        buf.append(&mut self.carry);
        if let Some(too_long) = self.fill(&mut buf)? {
            return Ok(Some(too_long));
        }
        let cut = if self.eof {
            buf.len()
        } else {
            memchr::memrchr(b'\n', &buf).map_or(buf.len(), |i| i + 1)
        };
        self.carry = buf.split_off(cut);
        if buf.is_empty() {
            return Ok(None);
        }
        let mut lines = 0u64;
        let mut line_start = 0usize;
        let mut too_long_at = None;
        for end in memchr::memchr_iter(b'\n', &buf).chain(std::iter::once(buf.len())) {
            if end - line_start > self.max_line {
                too_long_at = Some((line_start, end));
                break;
            }
            if end > line_start || end < buf.len() {
                lines += 1;
            }
            line_start = end + 1;
        }
        if let Some((start, end)) = too_long_at {
            // A too-long line: the lines before it are this block; it comes next, alone.
            let from = if start == 0 {
                (end + 1).min(buf.len())
            } else {
                start
            };
            let mut rest = buf.split_off(from);
            rest.append(&mut self.carry);
            self.carry = rest;
            if start == 0 {
                return Ok(Some(self.too_long()));
            }
        }
        let block = Block {
            first_line: self.next_line,
            bytes: buf,
            too_long: None,
        };
        self.next_line += lines;
        Ok(Some(block))
    }
}

/// The line without its line end (`\n`, `\r\n`, or any run of them).
pub(super) fn trim_line_end(line: &[u8]) -> &[u8] {
    let mut end = line.len();
    while end > 0 && (line[end - 1] == b'\n' || line[end - 1] == b'\r') {
        end -= 1;
    }
    &line[..end]
}

/// Lines of a block, each with its `\n`, found with memchr.
pub(super) struct SplitLines<'a> {
    rest: &'a [u8],
}

impl<'a> SplitLines<'a> {
    pub(super) fn new(bytes: &'a [u8]) -> Self {
        SplitLines { rest: bytes }
    }
}

impl<'a> Iterator for SplitLines<'a> {
    type Item = &'a [u8];

    fn next(&mut self) -> Option<&'a [u8]> {
        if self.rest.is_empty() {
            return None;
        }
        let end = memchr::memchr(b'\n', self.rest).map_or(self.rest.len(), |i| i + 1);
        let (line, rest) = self.rest.split_at(end);
        self.rest = rest;
        Some(line)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn blocks(input: &[u8], max_line: usize) -> Vec<(u64, Vec<u8>, bool)> {
        let mut r = input;
        let mut reader = BlockReader::new(&mut r, max_line);
        let mut out = Vec::new();
        while let Some(b) = reader.next_block().unwrap() {
            out.push((b.first_line, b.bytes, b.too_long.is_some()));
        }
        out
    }

    #[test]
    fn a_small_file_is_one_block_of_its_lines() {
        assert_eq!(blocks(b"a\nb\nc", 100), [(1, b"a\nb\nc".to_vec(), false)]);
        assert!(blocks(b"", 100).is_empty());
    }

    #[test]
    fn a_too_long_line_is_a_block_of_its_own_and_numbering_goes_on() {
        let got = blocks(b"a\nxxxxxxxxxx\nb\n", 4);
        assert_eq!(
            got,
            [
                (1, b"a\n".to_vec(), false),
                (2, Vec::new(), true),
                (3, b"b\n".to_vec(), false)
            ]
        );
    }

    #[test]
    fn lines_split_keep_their_ends_and_trim_drops_them() {
        let lines: Vec<&[u8]> = SplitLines::new(b"a\r\nb\nc").collect();
        assert_eq!(lines, [&b"a\r\n"[..], b"b\n", b"c"]);
        assert_eq!(trim_line_end(b"a\r\n"), b"a");
    }
}
