//! The replay state: the capture indexed by key, and which line the next request with a key
//! gets (the *n*-th request the *n*-th line, past the last the last again).
//!
//! It sits between the loaded capture and the per-request side: `Replay::new` builds the index
//! once, `answer` asks it for a line per request, and `POST /kitchen/reset` (in `endpoint`)
//! starts every key over.

use std::borrow::Cow;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use serde_json::Value;

use super::capture::{Capture, CaptureError};
use super::exchange::CapturedExchange;
use super::key::ReplayKey;
use super::options::ReplayOptions;
use crate::protocol::Era;

/// Who asks, for a request that is not a tool call: its era and whether it came inside a
/// session. Such a request gets the lines captured in the same era and session state (the
/// lines that say neither serve any), counted apart from the others.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Asker {
    /// The request's era.
    pub era: Era,
    /// It carried an `Mcp-Session-Id`.
    pub in_session: bool,
}

impl Asker {
    /// Whether a captured line may answer this asker: the same era (or none captured) and,
    /// in the legacy era, the same session state.
    fn may_get(&self, x: &CapturedExchange) -> bool {
        match x.era {
            None => true,
            Some(era) if era != self.era => false,
            Some(Era::Legacy) => x.in_session == self.in_session,
            Some(Era::Modern) => true,
        }
    }
}

/// The replay state: the capture, its index by key, and how often each key was asked.
pub struct Replay {
    capture: Arc<Capture>,
    index: HashMap<ReplayKey, Vec<usize>>,
    asked: Mutex<HashMap<(ReplayKey, Option<Asker>), usize>>,
    tools: Vec<Value>,
    options: ReplayOptions,
}

impl Replay {
    /// Index a capture for serving.
    pub fn new(
        capture: impl Into<Arc<Capture>>,
        options: ReplayOptions,
    ) -> Result<Replay, CaptureError> {
        let capture = capture.into();
        if !(options.speed.is_finite() && options.speed > 0.0) {
            return Err(CaptureError::Speed(options.speed));
        }
        // A capture of one endpoint answers on any path (replayed where the client is pointed,
        // as before paths were keys); only a capture of several endpoints keys by path.
        let paths: std::collections::HashSet<&str> = capture
            .exchanges
            .iter()
            .filter(|x| matches!(x.key, ReplayKey::Rpc { .. }))
            .filter_map(|x| x.path.as_deref())
            .collect();
        let one_endpoint = paths.len() <= 1;
        let mut index: HashMap<ReplayKey, Vec<usize>> = HashMap::new();
        for (i, x) in capture.exchanges.iter().enumerate() {
            let key = match x.key.on_any_path() {
                Some(any) if one_endpoint => any,
                _ => x.key.clone(),
            };
            index.entry(key).or_default().push(i);
        }
        let tools = capture.tools();
        Ok(Replay {
            capture,
            index,
            asked: Mutex::new(HashMap::new()),
            tools,
            options,
        })
    }

    /// The capture being served.
    pub fn capture(&self) -> &Capture {
        &self.capture
    }

    /// The tools `tools/list` shows when the capture has no line for it.
    pub(super) fn tools(&self) -> &[Value] {
        &self.tools
    }

    /// [`ReplayOptions::speed`]: what every captured delay is divided by.
    pub(super) fn speed(&self) -> f64 {
        self.options.speed
    }

    /// Start every key over at its first captured line (`POST /kitchen/reset`).
    pub(super) fn start_over(&self) {
        self.asked.lock().expect("replay lock").clear();
    }

    /// The line for the next request with `key`: `(exchange, nth (1-based), of, past_end)`.
    /// A `tools/call` whose arguments match no line falls back to the lines of its tool that
    /// were captured with `--capture-hash-arguments` (keyed without arguments). Any other
    /// request gets only the lines its `asker` may get ([`Asker`]); `None` when there is none,
    /// so the kitchen answers it itself.
    pub(super) fn next(
        &self,
        key: &ReplayKey,
        asker: Asker,
    ) -> Option<(&CapturedExchange, usize, usize, bool)> {
        // The request's own key first; fallback keys are built only when it has no line.
        let (key, lines) = match self.index.get_key_value(key) {
            Some(found) => found,
            None => key.fallbacks().find_map(|k| self.index.get_key_value(&k))?,
        };
        let is_call = matches!(key, ReplayKey::Rpc { method, .. } if method == "tools/call");
        let (lines, counted_for): (Cow<'_, [usize]>, Option<Asker>) = if is_call {
            (Cow::Borrowed(lines), None)
        } else {
            let mine: Vec<usize> = lines
                .iter()
                .copied()
                .filter(|&i| asker.may_get(&self.capture.exchanges[i]))
                .collect();
            (Cow::Owned(mine), Some(asker))
        };
        if lines.is_empty() {
            return None;
        }
        let mut asked = self.asked.lock().expect("replay lock");
        let n = asked.entry((key.clone(), counted_for)).or_insert(0);
        *n += 1;
        let past_end = *n > lines.len();
        let nth = (*n).min(lines.len());
        Some((
            &self.capture.exchanges[lines[nth - 1]],
            nth,
            lines.len(),
            past_end,
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::super::key::rpc_key;
    use super::*;
    use serde_json::json;

    /// A legacy request inside a session: what the tests before eras were keyed asked as.
    const ANY: Asker = Asker {
        era: Era::Legacy,
        in_session: true,
    };

    /// Issue 45 defect 2a: a request other than a tool call gets the lines of its own era
    /// and session state: the capture's 2026-07-28 discovery tools/list answered 400 is not
    /// served to a legacy client's in-session tools/list, which gets the legacy line (or,
    /// with none, the kitchen's own answer); a line without protocolVersion serves anyone.
    #[test]
    fn a_non_call_request_gets_the_lines_of_its_era_and_session() {
        let cap = Capture::parse(
            br#"{"seq":1,"status":400,"method":"tools/list","protocolVersion":"2026-07-28","body":"{}"}
{"seq":2,"status":200,"method":"initialize","protocolVersion":"2025-11-25","body":"{}"}
{"seq":3,"status":200,"method":"tools/list","protocolVersion":"2025-11-25","sessionId":"s1","body":"{}"}
{"seq":4,"status":200,"method":"ping","body":"{}"}"#,
        )
        .unwrap();
        let r = Replay::new(cap, ReplayOptions::default()).unwrap();
        let list = rpc_key(&json!({"method": "tools/list"})).unwrap();
        let modern = Asker {
            era: Era::Modern,
            in_session: false,
        };
        let no_session = Asker {
            era: Era::Legacy,
            in_session: false,
        };
        assert_eq!(r.next(&list, ANY).unwrap().0.seq, 3);
        assert_eq!(
            r.next(&list, ANY).unwrap().0.seq,
            3,
            "past the end: the same"
        );
        assert_eq!(r.next(&list, modern).unwrap().0.seq, 1);
        assert!(
            r.next(&list, no_session).is_none(),
            "no line: the kitchen's own"
        );
        let ping = rpc_key(&json!({"method": "ping"})).unwrap();
        assert_eq!(r.next(&ping, modern).unwrap().0.seq, 4);
        assert_eq!(r.next(&ping, no_session).unwrap().0.seq, 4);
        let init = rpc_key(&json!({"method": "initialize"})).unwrap();
        assert_eq!(r.next(&init, no_session).unwrap().0.seq, 2);
    }

    #[test]
    fn the_nth_request_gets_the_nth_line_then_the_last_again() {
        let cap = Capture::parse(
            br#"{"seq":2,"status":200,"method":"tools/call","tool":"t","body":"b"}
{"seq":1,"status":503,"method":"tools/call","tool":"t","body":"a"}"#,
        )
        .unwrap();
        let r = Replay::new(cap, ReplayOptions::default()).unwrap();
        let key = rpc_key(&json!({"method": "tools/call", "params": {"name": "t"}})).unwrap();
        let got: Vec<(u16, usize, bool)> = (0..3)
            .map(|_| {
                let (x, nth, _, past) = r.next(&key, ANY).unwrap();
                (x.status, nth, past)
            })
            .collect();
        assert_eq!(got, vec![(503, 1, false), (200, 2, false), (200, 2, true)]);
        assert!(r
            .next(&rpc_key(&json!({"method": "ping"})).unwrap(), ANY)
            .is_none());
        assert!(Replay::new(r.capture.clone(), ReplayOptions { speed: 0.0 }).is_err());
    }

    /// Issue 21 item 5: a gateway's capture of several servers replays each on its own path;
    /// a line captured without a path answers on any.
    #[test]
    fn the_endpoint_path_is_part_of_the_key() {
        let cap = Capture::parse(
            br#"{"seq":1,"status":503,"method":"tools/call","tool":"t","request":{"method":"POST","path":"/a/mcp?x=1"},"body":""}
{"seq":2,"status":200,"method":"tools/call","tool":"t","request":{"method":"POST","path":"/b/mcp"},"body":"b"}
{"seq":3,"status":202,"method":"ping","body":""}"#,
        )
        .unwrap();
        assert_eq!(
            cap.exchanges[0].key.to_string().rsplit(' ').next(),
            Some("/a/mcp")
        );
        let r = Replay::new(cap, ReplayOptions::default()).unwrap();
        let call = |p: &str| {
            rpc_key(&json!({"method": "tools/call", "params": {"name": "t"}}))
                .unwrap()
                .at_path(p)
        };
        assert_eq!(r.next(&call("/b/mcp"), ANY).unwrap().0.seq, 2);
        assert_eq!(r.next(&call("/a/mcp"), ANY).unwrap().0.seq, 1);
        assert!(
            r.next(&call("/c/mcp"), ANY).is_none(),
            "no line of another path"
        );
        let ping = rpc_key(&json!({"method": "ping"}))
            .unwrap()
            .at_path("/z/mcp");
        assert_eq!(r.next(&ping, ANY).unwrap().0.seq, 3);
        // A capture of one endpoint is replayed wherever the client is pointed.
        let one = Capture::parse(
            br#"{"seq":1,"status":503,"method":"tools/call","tool":"t","request":{"method":"POST","path":"/s/x/mcp"},"body":""}"#,
        )
        .unwrap();
        let r = Replay::new(one, ReplayOptions::default()).unwrap();
        assert_eq!(r.next(&call("/mcp"), ANY).unwrap().0.seq, 1);
    }
}
