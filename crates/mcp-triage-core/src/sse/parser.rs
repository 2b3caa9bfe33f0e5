//! The WHATWG `text/event-stream` interpretation rules
//! (<https://html.spec.whatwg.org/multipage/server-sent-events.html#event-stream-interpretation>),
//! as a push parser: bytes in, [`SseItem`]s out through a callback. Memory is bounded by the
//! largest single event: only the current partial line and the current event's data are kept.

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

/// The incremental event-stream parser.
#[derive(Debug)]
pub struct SseParser {
    max_event_bytes: usize,
    /// Bytes at the very start of the stream, held until we know whether they are a BOM.
    bom_pending: Vec<u8>,
    bom_done: bool,
    /// The current line, when it spans chunks.
    line: Vec<u8>,
    /// The previous chunk ended in CR: a leading LF of the next chunk belongs to that line end.
    after_cr: bool,
    data: Vec<u8>,
    has_fields: bool,
    event_type: Vec<u8>,
    id_buffer: String,
    last_event_id: String,
    stopped: bool,
}

impl SseParser {
    /// A parser that refuses lines and events larger than `max_event_bytes`.
    pub fn new(max_event_bytes: u64) -> SseParser {
        SseParser {
            max_event_bytes: usize::try_from(max_event_bytes).unwrap_or(usize::MAX),
            bom_pending: Vec::new(),
            bom_done: false,
            line: Vec::new(),
            after_cr: false,
            data: Vec::new(),
            has_fields: false,
            event_type: Vec::new(),
            id_buffer: String::new(),
            last_event_id: String::new(),
            stopped: false,
        }
    }

    /// The last event id (WHATWG "last event ID string") so far.
    pub fn last_event_id(&self) -> &str {
        &self.last_event_id
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
            let need = BOM.len() - self.bom_pending.len();
            let take = need.min(chunk.len());
            self.bom_pending.extend_from_slice(&chunk[..take]);
            chunk = &chunk[take..];
            if !BOM.starts_with(&self.bom_pending) {
                self.bom_done = true;
                let pending = std::mem::take(&mut self.bom_pending);
                self.feed_lines(&pending, sink)?;
                if self.stopped {
                    return Ok(take);
                }
            } else if self.bom_pending.len() == BOM.len() {
                self.bom_done = true;
                self.bom_pending.clear();
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
        let bom_prefix = !self.bom_done && !self.bom_pending.is_empty();
        let pending = !self.line.is_empty() || self.has_fields || bom_prefix;
        self.line.clear();
        self.data.clear();
        self.has_fields = false;
        pending
    }

    /// Returns the bytes of `chunk` consumed.
    fn feed_lines<F>(&mut self, mut chunk: &[u8], sink: &mut F) -> Result<usize, SseTooLarge>
    where
        F: FnMut(SseItem<'_>) -> Flow,
    {
        let full = chunk.len();
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
                self.process_line(&chunk[..pos], sink)?
            } else {
                if self.line.len() + pos > self.max_event_bytes {
                    return Err(self.too_large());
                }
                let mut line = std::mem::take(&mut self.line);
                line.extend_from_slice(&chunk[..pos]);
                let flow = self.process_line(&line, sink);
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

    fn process_line<F>(&mut self, line: &[u8], sink: &mut F) -> Result<Flow, SseTooLarge>
    where
        F: FnMut(SseItem<'_>) -> Flow,
    {
        if line.is_empty() {
            return Ok(self.dispatch(sink));
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
                if self.data.len() + value.len() + 1 > self.max_event_bytes {
                    return Err(self.too_large());
                }
                // room for the line end too: one allocation per event, not a second to grow it
                self.data.reserve(value.len() + 1);
                self.data.extend_from_slice(value);
                self.data.push(b'\n');
            }
            b"id" => {
                self.has_fields = true;
                if !value.contains(&0) {
                    // into the same buffer: an id on every event costs no allocation each
                    self.id_buffer.clear();
                    self.id_buffer.push_str(&String::from_utf8_lossy(value));
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

    fn dispatch<F>(&mut self, sink: &mut F) -> Flow
    where
        F: FnMut(SseItem<'_>) -> Flow,
    {
        if !self.has_fields {
            return Flow::Continue; // a blank line with nothing before it
        }
        self.has_fields = false;
        self.last_event_id.clone_from(&self.id_buffer);
        if self.data.last() == Some(&b'\n') {
            self.data.pop();
        }
        let flow = if self.data.is_empty() {
            sink(SseItem::Priming {
                last_event_id: &self.last_event_id,
            })
        } else {
            let event_type: &[u8] = if self.event_type.is_empty() {
                b"message"
            } else {
                &self.event_type
            };
            sink(SseItem::Event {
                event_type,
                data: &self.data,
                last_event_id: &self.last_event_id,
            })
        };
        self.data.clear();
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
