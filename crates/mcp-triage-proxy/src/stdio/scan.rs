//! Finds the top-level `id` and `method` of a JSON-RPC message line that is too long to keep
//! whole, as its bytes pass, in bounded memory.
//!
//! Why: the relay has to know which open call a line answers before it can hand the line to
//! the core's classifier (the [`mcp_triage_core::CallContext`] names the expected id), and a
//! line that is relayed as it arrives is never in memory whole. This is routing, not
//! classification: the scanner does not judge the message (a line that is not JSON just ends
//! without an id), the core does.

use serde_json::Value;

/// Longest member name remembered; the names the relay looks for are shorter.
const MAX_KEY: usize = 8;

/// Longest `id` or `method` value kept (an id longer than this is not routed).
const MAX_VALUE: usize = 4 << 10;

/// Which member's value is being captured.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Member {
    Id,
    Method,
}

/// The incremental scanner of one line (see the module doc).
#[derive(Debug, Default)]
pub(crate) struct TopLevel {
    /// Open objects and arrays.
    depth: u32,
    in_string: bool,
    escape: bool,
    /// The line does not start with `{`: it has no top-level members.
    not_object: bool,
    started: bool,
    /// At depth 1 the next string is a member name.
    want_key: bool,
    /// Inside the current member name's string.
    in_key: bool,
    key: Vec<u8>,
    key_long: bool,
    /// The member whose value is being captured, its bytes so far and whether it ran long.
    capture: Option<Member>,
    value: Vec<u8>,
    value_long: bool,
    /// `result` or `error` began: the line is an answer.
    answer: bool,
    /// The `id` value, once read (`Value::Null` for an id that is not JSON or too long).
    pub id: Option<Value>,
    /// The `method` value, once read.
    pub method: Option<String>,
}

impl TopLevel {
    /// True once nothing later in the line can change what was found: an answer's id is known
    /// (an answer has no `method`), or both are.
    pub(crate) fn done(&self) -> bool {
        self.not_object || (self.id.is_some() && (self.answer || self.method.is_some()))
    }

    /// True when the line is known to be an answer (`result` or `error` began) and its id is
    /// known.
    pub(crate) fn answer_id(&self) -> Option<&Value> {
        self.id
            .as_ref()
            .filter(|_| self.answer && self.method.is_none())
    }

    /// Scans the next bytes of the line.
    pub(crate) fn feed(&mut self, bytes: &[u8]) {
        for &b in bytes {
            if self.done() {
                return;
            }
            self.byte(b);
        }
    }

    /// The line ended: a value still being captured (the line was cut) is taken as it is.
    pub(crate) fn end(&mut self) {
        self.finish_value();
    }

    fn byte(&mut self, b: u8) {
        if self.in_string {
            if self.escape {
                self.escape = false;
            } else if b == b'\\' {
                self.escape = true;
            } else if b == b'"' {
                self.in_string = false;
                if self.in_key {
                    self.in_key = false;
                    self.push_value(b);
                    return;
                }
            }
            if self.in_key {
                if self.key.len() < MAX_KEY {
                    self.key.push(b);
                } else {
                    self.key_long = true;
                }
            }
            self.push_value(b);
            return;
        }
        match b {
            b' ' | b'\t' | b'\r' | b'\n' if self.capture.is_none() => {}
            b'"' => {
                self.in_string = true;
                if self.depth == 1 && self.want_key {
                    self.want_key = false;
                    self.in_key = true;
                    self.key.clear();
                    self.key_long = false;
                }
                self.push_value(b);
            }
            b'{' | b'[' => {
                if !self.started {
                    self.started = true;
                    self.not_object = b != b'{';
                }
                self.push_value(b);
                self.depth += 1;
                if self.depth == 1 {
                    self.want_key = true;
                }
            }
            b'}' | b']' => {
                if self.depth == 1 {
                    self.finish_value();
                } else {
                    self.push_value(b);
                }
                self.depth = self.depth.saturating_sub(1);
            }
            b':' if self.depth == 1 && self.capture.is_none() => self.begin_value(),
            b',' if self.depth == 1 => {
                self.finish_value();
                self.want_key = true;
            }
            _ => {
                if !self.started {
                    // Something before the first brace: not a JSON object line.
                    self.started = true;
                    self.not_object = true;
                }
                self.push_value(b);
            }
        }
    }

    fn begin_value(&mut self) {
        let key = (!self.key_long).then_some(self.key.as_slice());
        self.capture = match key {
            Some(b"id") if self.id.is_none() => Some(Member::Id),
            Some(b"method") if self.method.is_none() => Some(Member::Method),
            Some(b"result" | b"error") => {
                self.answer = true;
                None
            }
            _ => None,
        };
        self.value.clear();
        self.value_long = false;
    }

    fn push_value(&mut self, b: u8) {
        if self.capture.is_some() {
            if self.value.len() < MAX_VALUE {
                self.value.push(b);
            } else {
                self.value_long = true;
            }
        }
    }

    fn finish_value(&mut self) {
        let Some(member) = self.capture.take() else {
            return;
        };
        let parsed = if self.value_long {
            None
        } else {
            serde_json::from_slice::<Value>(self.value.trim_ascii()).ok()
        };
        match member {
            Member::Id => self.id = Some(parsed.unwrap_or(Value::Null)),
            Member::Method => {
                self.method = Some(
                    parsed
                        .as_ref()
                        .and_then(Value::as_str)
                        .unwrap_or_default()
                        .to_string(),
                )
            }
        }
        self.value.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn scan_in_pieces(line: &str, piece: usize) -> TopLevel {
        let mut s = TopLevel::default();
        for c in line.as_bytes().chunks(piece) {
            s.feed(c);
        }
        s.end();
        s
    }

    #[test]
    fn finds_an_answers_id_wherever_the_line_is_cut() {
        let lines = [
            (
                r#"{"jsonrpc":"2.0","id":7,"result":{"id":9,"method":"x"}}"#,
                json!(7),
            ),
            (
                r#" { "id" : "a\"b,}" , "error":{"code":1}}"#,
                json!("a\"b,}"),
            ),
            (
                r#"{"result":{"content":[{"id":1}]},"jsonrpc":"2.0","id":-3}"#,
                json!(-3),
            ),
            (
                r#"{"x":{"id":1},"y":[{"id":2}],"id":3.5,"result":null}"#,
                json!(3.5),
            ),
        ];
        for (line, id) in lines {
            for piece in [1, 2, 3, 7, 1000] {
                let s = scan_in_pieces(line, piece);
                assert_eq!(s.answer_id(), Some(&id), "{line} in pieces of {piece}");
                assert!(s.method.is_none());
            }
        }
    }

    #[test]
    fn a_server_request_is_not_an_answer() {
        let s = scan_in_pieces(
            r#"{"jsonrpc":"2.0","id":4,"method":"sampling/createMessage","params":{"result":1}}"#,
            3,
        );
        assert_eq!(s.id, Some(json!(4)));
        assert_eq!(s.method.as_deref(), Some("sampling/createMessage"));
        assert_eq!(s.answer_id(), None);
    }

    #[test]
    fn stops_once_an_answers_id_is_known() {
        let mut s = TopLevel::default();
        s.feed(br#"{"id":1,"result":{"content":[{"type":"text","text":"#);
        assert!(s.done());
        assert_eq!(s.answer_id(), Some(&json!(1)));
    }

    #[test]
    fn lines_without_members_have_no_id() {
        for line in [
            r#"[{"id":1,"result":{}}]"#,
            "not json",
            r#"{"jsonrpc":"2.0","method":"notifications/x"}"#,
        ] {
            let s = scan_in_pieces(line, 2);
            assert_eq!(s.answer_id(), None, "{line}");
            assert_eq!(s.id, None, "{line}");
        }
        let long = format!(r#"{{"id":"{}","result":{{}}}}"#, "x".repeat(MAX_VALUE * 2));
        assert_eq!(scan_in_pieces(&long, 100).answer_id(), Some(&Value::Null));
    }
}
