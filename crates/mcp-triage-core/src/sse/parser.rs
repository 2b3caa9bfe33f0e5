//! The WHATWG `text/event-stream` interpretation rules
//! (<https://html.spec.whatwg.org/multipage/server-sent-events.html#event-stream-interpretation>),
//! as a push parser: bytes in, [`SseItem`]s out through a callback. Memory is bounded by the
//! largest single event: only the current partial line and the current event's data are kept.

use crate::inline_text::InlineText;

/// What the parser found. Borrowed slices are valid only during the callback.
#[derive(Debug, PartialEq, Eq)]
pub enum SseItem<'a> {
    /// A dispatched event with non-empty data. `event_type` is `message` when no `event:` field
    /// was given; `last_event_id` is the last event id buffer at dispatch.
    Event {
        /// The event type (`message` when none was given).
        event_type: &'a [u8],
        /// The data lines joined with `\n`.
        data: &'a [u8],
        /// The last event id buffer at dispatch.
        last_event_id: &'a str,
    },
    /// A block ended by a blank line that had `id:` or `data:` fields but no data (a 2025-11-25
    /// priming event): dispatched by nobody, but it sets the last event id.
    Priming {
        /// The last event id buffer at dispatch.
        last_event_id: &'a str,
    },
    /// A `:` comment line (keep-alive).
    Comment,
    /// A `retry:` field with a valid value, in milliseconds.
    Retry(u64),
}

/// Whether the consumer wants more items.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Flow {
    /// Keep parsing.
    Continue,
    /// Stop: the parser ignores the rest of this chunk and every later one.
    Stop,
}

/// A line or an event's data grew past the limit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SseTooLarge {
    /// The configured `maxEventBytes`.
    pub max: u64,
}

const BOM: &[u8] = b"\xEF\xBB\xBF";

/// Event ids up to this many bytes (a counter, a UUID) are held without an allocation.
const ID_INLINE: usize = 48;

/// The incremental event-stream parser.
#[derive(Debug)]
pub struct SseParser {
    max_event_bytes: usize,
    /// Bytes at the very start of the stream, held until we know whether they are a BOM (an
    /// array, not a `Vec`: a stream is usually judged in one chunk, and an allocation for three
    /// bytes cost as much as parsing a line).
    bom_pending: [u8; 3],
    bom_len: usize,
    bom_done: bool,
    /// The current line, when it spans chunks.
    line: Vec<u8>,
    /// The previous chunk ended in CR: a leading LF of the next chunk belongs to that line end.
    after_cr: bool,
    /// The event's data lines joined with `\n`. WHATWG appends a `\n` after each line and
    /// removes the last at dispatch; joining instead gives the same text without writing the
    /// last one, so the usual empty `data:` of a priming event allocates nothing.
    data: Vec<u8>,
    /// A `data` field was seen in this event (the data may still be empty).
    data_started: bool,
    /// The event's data while it is one line of the chunk being parsed: its place there. The
    /// usual event (one `data:` line, dispatched by a blank line in the same chunk) is handed
    /// to the sink without being copied; a second line, or the chunk's end, moves it to
    /// `data`. Some only during [`SseParser::feed_lines`].
    data_in_chunk: Option<std::ops::Range<usize>>,
    has_fields: bool,
    event_type: Vec<u8>,
    /// WHATWG's "last event ID buffer". At dispatch it becomes the "last event ID string" as
    /// it is, so no second copy is kept: an item carries the buffer while it is dispatched.
    id_buffer: InlineText<ID_INLINE>,
    stopped: bool,
}

impl SseParser {
    /// A parser that refuses lines and events larger than `max_event_bytes`.
    pub fn new(max_event_bytes: u64) -> SseParser {
        SseParser {
            max_event_bytes: usize::try_from(max_event_bytes).unwrap_or(usize::MAX),
            bom_pending: [0; 3],
            bom_len: 0,
            bom_done: false,
            line: Vec::new(),
            after_cr: false,
            data: Vec::new(),
            data_started: false,
            data_in_chunk: None,
            has_fields: false,
            event_type: Vec::new(),
            id_buffer: InlineText::new(),
            stopped: false,
        }
    }

    /// True when a consumer returned [`Flow::Stop`].
    pub fn is_stopped(&self) -> bool {
        self.stopped
    }

    /// Feeds one chunk. Items are handed to `sink` as they complete. Returns how many bytes of
    /// the chunk were consumed: all of them, unless the sink stopped the parser.
    pub fn feed<F>(&mut self, chunk: &[u8], sink: &mut F) -> Result<usize, SseTooLarge>
    where
        F: FnMut(SseItem<'_>) -> Flow,
    {
        if self.stopped {
            return Ok(0);
        }
        let full = chunk.len();
        let mut chunk = chunk;
        if !self.bom_done {
            // bytes held from earlier chunks (a BOM prefix that was cut)
            let held = self.bom_len;
            let take = (BOM.len() - held).min(chunk.len());
            self.bom_pending[held..held + take].copy_from_slice(&chunk[..take]);
            self.bom_len += take;
            if !BOM.starts_with(&self.bom_pending[..self.bom_len]) {
                self.bom_done = true;
                // No BOM: the held bytes go first, then this chunk from its start. Parsing the
                // chunk whole (not its first bytes apart) keeps its first line in place, where
                // a separate start would have been copied into the partial-line buffer.
                if held > 0 {
                    let pending = self.bom_pending;
                    self.feed_lines(&pending[..held], sink)?;
                    if self.stopped {
                        return Ok(0);
                    }
                }
            } else if self.bom_len == BOM.len() {
                self.bom_done = true;
                chunk = &chunk[take..];
            } else {
                return Ok(full); // still a BOM prefix; wait for more bytes
            }
        }
        let rest = self.feed_lines(chunk, sink)?;
        Ok(full - chunk.len() + rest)
    }

    /// Ends the stream. Returns true when an event was pending (fields after the last blank line,
    /// or a line without its end): WHATWG discards it.
    pub fn finish(&mut self) -> bool {
        let bom_prefix = !self.bom_done && self.bom_len > 0;
        let pending = !self.line.is_empty() || self.has_fields || bom_prefix;
        self.line.clear();
        self.data.clear();
        self.data_started = false;
        self.has_fields = false;
        pending
    }

    /// Returns the bytes of `chunk` consumed.
    fn feed_lines<F>(&mut self, chunk: &[u8], sink: &mut F) -> Result<usize, SseTooLarge>
    where
        F: FnMut(SseItem<'_>) -> Flow,
    {
        let consumed = self.parse_lines(chunk, sink);
        // data still in the chunk must outlive it
        if let Some(range) = self.data_in_chunk.take() {
            self.data.extend_from_slice(&chunk[range]);
        }
        consumed
    }

    /// [`SseParser::feed_lines`] but for keeping data borrowed from `whole` past its end.
    fn parse_lines<F>(&mut self, whole: &[u8], sink: &mut F) -> Result<usize, SseTooLarge>
    where
        F: FnMut(SseItem<'_>) -> Flow,
    {
        let full = whole.len();
        let mut chunk = whole;
        if self.after_cr && !chunk.is_empty() {
            self.after_cr = false;
            if chunk[0] == b'\n' {
                chunk = &chunk[1..];
            }
        }
        while !chunk.is_empty() {
            let Some(pos) = memchr::memchr2(b'\n', b'\r', chunk) else {
                if self.line.len() + chunk.len() > self.max_event_bytes {
                    return Err(self.too_large());
                }
                self.line.extend_from_slice(chunk);
                return Ok(full);
            };
            let end = chunk[pos];
            let flow = if self.line.is_empty() {
                if pos > self.max_event_bytes {
                    return Err(self.too_large());
                }
                let at = full - chunk.len();
                self.process_line(&chunk[..pos], Some(at), whole, sink)?
            } else {
                if self.line.len() + pos > self.max_event_bytes {
                    return Err(self.too_large());
                }
                let mut line = std::mem::take(&mut self.line);
                line.extend_from_slice(&chunk[..pos]);
                let flow = self.process_line(&line, None, whole, sink);
                line.clear();
                self.line = line; // keep the allocation
                flow?
            };
            let mut next = pos + 1;
            if flow == Flow::Stop {
                // Count bytes up to the line end's first byte, so the count does not depend on
                // whether a CRLF pair was split across chunks.
                self.stopped = true;
                return Ok(full - chunk.len() + next);
            }
            if end == b'\r' {
                if next < chunk.len() {
                    if chunk[next] == b'\n' {
                        next += 1;
                    }
                } else {
                    self.after_cr = true;
                }
            }
            chunk = &chunk[next..];
        }
        Ok(full)
    }

    fn too_large(&self) -> SseTooLarge {
        SseTooLarge {
            max: self.max_event_bytes as u64,
        }
    }

    /// One line. `line_at` is where the line starts in `whole` (the chunk being parsed), or
    /// None when it was joined from several chunks.
    fn process_line<F>(
        &mut self,
        line: &[u8],
        line_at: Option<usize>,
        whole: &[u8],
        sink: &mut F,
    ) -> Result<Flow, SseTooLarge>
    where
        F: FnMut(SseItem<'_>) -> Flow,
    {
        if line.is_empty() {
            return Ok(self.dispatch(whole, sink));
        }
        if line[0] == b':' {
            return Ok(sink(SseItem::Comment));
        }
        let (field, value) = match memchr::memchr(b':', line) {
            Some(i) => {
                let v = &line[i + 1..];
                (&line[..i], v.strip_prefix(b" ").unwrap_or(v))
            }
            None => (line, &b""[..]),
        };
        match field {
            b"event" => {
                self.has_fields = true;
                self.event_type.clear();
                // an empty type dispatches as "message": that common type costs no allocation
                if value != b"message" {
                    self.event_type.extend_from_slice(value);
                }
            }
            b"data" => {
                self.has_fields = true;
                // the limit counts every line's `\n`, the one not written included
                let held = match &self.data_in_chunk {
                    Some(range) => range.len(),
                    None => self.data.len(),
                };
                if held + usize::from(self.data_started) + value.len() + 1 > self.max_event_bytes {
                    return Err(self.too_large());
                }
                match line_at {
                    // the value is the line's end
                    Some(at) if !self.data_started => {
                        let start = at + line.len() - value.len();
                        self.data_in_chunk = Some(start..start + value.len());
                    }
                    _ => {
                        if let Some(range) = self.data_in_chunk.take() {
                            self.data.extend_from_slice(&whole[range]);
                        }
                        if self.data_started {
                            self.data.reserve(value.len() + 1);
                            self.data.push(b'\n');
                        }
                        self.data.extend_from_slice(value);
                    }
                }
                self.data_started = true;
            }
            b"id" => {
                self.has_fields = true;
                if !value.contains(&0) {
                    match crate::scan::utf8(value) {
                        Ok(id) => self.id_buffer.set(id),
                        Err(_) => self.id_buffer.set(&String::from_utf8_lossy(value)),
                    }
                }
            }
            b"retry" if !value.is_empty() && value.iter().all(u8::is_ascii_digit) => {
                let ms = std::str::from_utf8(value)
                    .ok()
                    .and_then(|s| s.parse().ok())
                    .unwrap_or(u64::MAX);
                return Ok(sink(SseItem::Retry(ms)));
            }
            _ => {}
        }
        Ok(Flow::Continue)
    }

    fn dispatch<F>(&mut self, whole: &[u8], sink: &mut F) -> Flow
    where
        F: FnMut(SseItem<'_>) -> Flow,
    {
        if !self.has_fields {
            return Flow::Continue; // a blank line with nothing before it
        }
        self.has_fields = false;
        let data: &[u8] = match self.data_in_chunk.take() {
            Some(range) => &whole[range],
            None => &self.data,
        };
        let flow = if data.is_empty() {
            sink(SseItem::Priming {
                last_event_id: self.id_buffer.as_str(),
            })
        } else {
            let event_type: &[u8] = if self.event_type.is_empty() {
                b"message"
            } else {
                &self.event_type
            };
            sink(SseItem::Event {
                event_type,
                data,
                last_event_id: self.id_buffer.as_str(),
            })
        };
        self.data.clear();
        self.data_started = false;
        self.event_type.clear();
        flow
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, PartialEq)]
    enum Own {
        Event(String, String, String),
        Priming(String),
        Comment,
        Retry(u64),
    }

    fn run(chunks: &[&[u8]]) -> (Vec<Own>, bool) {
        let mut p = SseParser::new(1 << 20);
        let mut out = Vec::new();
        for c in chunks {
            p.feed(c, &mut |item| {
                out.push(match item {
                    SseItem::Event {
                        event_type,
                        data,
                        last_event_id,
                    } => Own::Event(
                        String::from_utf8_lossy(event_type).into(),
                        String::from_utf8_lossy(data).into(),
                        last_event_id.into(),
                    ),
                    SseItem::Priming { last_event_id } => Own::Priming(last_event_id.into()),
                    SseItem::Comment => Own::Comment,
                    SseItem::Retry(ms) => Own::Retry(ms),
                });
                Flow::Continue
            })
            .unwrap();
        }
        let pending = p.finish();
        (out, pending)
    }

    fn ev(t: &str, d: &str, id: &str) -> Own {
        Own::Event(t.into(), d.into(), id.into())
    }

    #[test]
    fn basic_fields_and_line_ends() {
        for stream in [
            &b"event: message\ndata: a\ndata: b\nid: 7\n\n"[..],
            b"event: message\r\ndata: a\r\ndata: b\r\nid: 7\r\n\r\n",
            b"event: message\rdata: a\rdata: b\rid: 7\r\r",
        ] {
            assert_eq!(run(&[stream]), (vec![ev("message", "a\nb", "7")], false));
            // one byte at a time gives the same
            let bytes: Vec<&[u8]> = stream.chunks(1).collect();
            assert_eq!(run(&bytes), (vec![ev("message", "a\nb", "7")], false));
        }
    }

    #[test]
    fn bom_comments_retry_priming() {
        let s = b"\xEF\xBB\xBF: hi\nretry: 500\nid: p1\ndata:\n\nretry: x\ndata:x\n\n";
        let want = vec![
            Own::Comment,
            Own::Retry(500),
            Own::Priming("p1".into()),
            ev("message", "x", "p1"),
        ];
        assert_eq!(run(&[s]), (want, false));
        let bytes: Vec<&[u8]> = s.chunks(1).collect();
        assert_eq!(run(&bytes).0.len(), 4);
    }

    #[test]
    fn only_one_bom_and_no_space_stripping_twice() {
        let s = b"\xEF\xBB\xBF\xEF\xBB\xBFdata: x\n\ndata:  two\n\n";
        let (items, _) = run(&[s]);
        // the second BOM is part of the first line's field name, so that line is ignored
        assert_eq!(items, vec![ev("message", " two", "")]);
    }

    #[test]
    fn field_without_colon_and_nul_id() {
        let s = b"data\n\nid: a\0b\ndata: y\n\n";
        let (items, _) = run(&[s]);
        // "data" alone appends an empty line: data buffer "\n" -> "" -> priming-like
        assert_eq!(items, vec![Own::Priming("".into()), ev("message", "y", "")]);
    }

    #[test]
    fn an_id_that_is_not_utf8_is_kept_with_replacement_characters() {
        let (items, _) = run(&[b"id: a\xffb\ndata: x\n\n"]);
        assert_eq!(items, vec![ev("message", "x", "a\u{FFFD}b")]);
    }

    #[test]
    fn data_lines_join_as_whatwg_appends_and_trims() {
        // two empty lines are "\n\n" trimmed to "\n": an event, not a priming block
        assert_eq!(run(&[b"data:\ndata:\n\n"]).0, vec![ev("message", "\n", "")]);
        assert_eq!(
            run(&[b"data: a\ndata:\n\n"]).0,
            vec![ev("message", "a\n", "")]
        );
        // the limit counts each line's "\n", the last one included, as WHATWG's buffer holds it
        let mut p = SseParser::new(10);
        let mut got = Vec::new();
        let r = p.feed(b"data:1234\ndata:1234\n\n", &mut |item| {
            if let SseItem::Event { data, .. } = item {
                got.push(data.to_vec());
            }
            Flow::Continue
        });
        assert_eq!((r, got), (Ok(21), vec![b"1234\n1234".to_vec()]));
        let mut p = SseParser::new(10);
        let r = p.feed(b"data:12345\ndata:1234\n\n", &mut |_| Flow::Continue);
        assert_eq!(r, Err(SseTooLarge { max: 10 }));
    }

    #[test]
    fn every_split_of_a_stream_gives_the_same_items() {
        let long_id = "i".repeat(ID_INLINE + 5);
        let streams: Vec<Vec<u8>> = vec![
            b"id: 1-0\ndata: \n\nid: 1-1\nevent: message\ndata: {\"a\":1}\n\n".to_vec(),
            b"data: one\r\ndata: two\r\n\r\ndata:x\rdata:y\r\r: c\ndata: z\n".to_vec(),
            format!("id: {long_id}\ndata: a\n\nid: short\ndata: b\n\nid: {long_id}\ndata: c\n\n")
                .into_bytes(),
            b"event: other\ndata: q\n\ndata\ndata\n\nretry: 9\ndata: last\n\n".to_vec(),
        ];
        for s in &streams {
            let whole = run(&[s]);
            for at in 0..=s.len() {
                let (a, b) = s.split_at(at);
                assert_eq!(
                    run(&[a, b]),
                    whole,
                    "split at {at} of {:?}",
                    String::from_utf8_lossy(s)
                );
            }
            let threes: Vec<&[u8]> = s.chunks(3).collect();
            assert_eq!(run(&threes), whole);
        }
        let (items, _) = run(&[&streams[2]]);
        assert_eq!(
            items,
            vec![
                ev("message", "a", &long_id),
                ev("message", "b", "short"),
                ev("message", "c", &long_id)
            ]
        );
    }

    #[test]
    fn a_bom_split_across_chunks_or_cut_short() {
        let s = b"\xEF\xBB\xBFdata: x\n\n";
        let bytes: Vec<&[u8]> = s.chunks(2).collect();
        assert_eq!(run(&bytes), (vec![ev("message", "x", "")], false));
        // two bytes of a BOM and then something else: those bytes start the first line
        let (items, _) = run(&[b"\xEF\xBB", b"data: y\n\n"]);
        assert!(
            items.is_empty(),
            "the line's field name is not data: {items:?}"
        );
        assert_eq!(run(&[b"\xEF\xBB"]), (vec![], true));
        assert_eq!(run(&[b"\xEF"]).0, vec![]);
    }

    #[test]
    fn last_event_without_blank_line_is_discarded() {
        assert_eq!(run(&[b"data: x\n"]), (vec![], true));
        assert_eq!(run(&[b"data: x"]), (vec![], true));
        assert_eq!(
            run(&[b"data: x\n\n"]),
            (vec![ev("message", "x", "")], false)
        );
    }

    #[test]
    fn limits_are_enforced() {
        let mut p = SseParser::new(8);
        let r = p.feed(b"data: 0123456789\n\n", &mut |_| Flow::Continue);
        assert_eq!(r, Err(SseTooLarge { max: 8 }));
        let mut p = SseParser::new(8);
        let r = p.feed(b"data: 01234", &mut |_| Flow::Continue);
        assert_eq!(r, Err(SseTooLarge { max: 8 }));
    }

    #[test]
    fn stop_ignores_the_rest() {
        let mut p = SseParser::new(1024);
        let mut n = 0;
        p.feed(b"data: a\n\ndata: b\n\n", &mut |_| {
            n += 1;
            Flow::Stop
        })
        .unwrap();
        p.feed(b"data: c\n\n", &mut |_| {
            n += 1;
            Flow::Continue
        })
        .unwrap();
        assert_eq!(n, 1);
        assert!(p.is_stopped());
    }
}
