//! Property tests of the classifier (issue 2, "Property tests").
//!
//! - (a) any bytes, any status, any content type, any expected id, any protocol version: a
//!   verdict whose `layer` is its outcome's layer, never a panic; the same through
//!   [`ResponseClassifier`] fed in random chunks, and through `interrupted(...)`.
//! - (b) SSE chunk invariance: realistic generated streams fed in random chunk splits (and one
//!   byte at a time) give exactly the verdict `classify` gives on the whole body.
//! - (c) the same for `application/json` bodies.
//! - (c') the same bodies, and ones with long strings, scanned and compacted as large bodies
//!   are: the verdict of the whole body.
//! - (d) duplicate member names: inside `result` → `INVALID_TOOL_RESULT`, in the envelope →
//!   `INVALID_ENVELOPE`.
//!
//! Case counts are kept small enough for CI in debug builds (the whole file runs in about 6 s
//! on 2 cores). Set `PROPTEST_CASES=N` to run every property with N cases instead, e.g. for a
//! long local run. Failures are not persisted to files; a failing case prints its input.

use mcp_triage_core::{
    classify, CallContext, Interruption, Outcome, ProtocolVersion, RequestId, ResponseClassifier,
    ResponseHead, Verdict,
};
use proptest::collection::vec;
use proptest::prelude::*;
use proptest::sample::{select, Index};
use serde_json::{json, Map, Value};

// ---------------------------------------------------------------------------------------------
// Configuration and helpers
// ---------------------------------------------------------------------------------------------

/// `cases` unless `PROPTEST_CASES` says otherwise; no regression files are written.
fn config(cases: u32) -> ProptestConfig {
    let cases = std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(cases);
    ProptestConfig {
        cases,
        failure_persistence: None,
        max_shrink_iters: 4096,
        ..ProptestConfig::default()
    }
}

/// The body as a printable, copy-pasteable Rust byte-string literal body.
fn show(body: &[u8]) -> String {
    body.escape_ascii().to_string()
}

fn to_json(v: &Verdict) -> String {
    serde_json::to_string(v).expect("a verdict serialises")
}

fn id_json(id: &RequestId) -> Value {
    match id {
        RequestId::Number(n) => json!(n),
        RequestId::String(s) => json!(s),
    }
}

/// Cut points (sorted, deduplicated, inside `0..=len`) from random indices.
fn cut_points(len: usize, cuts: &[Index]) -> Vec<usize> {
    let mut points: Vec<usize> = cuts.iter().map(|i| i.index(len + 1)).collect();
    points.push(len);
    points.sort_unstable();
    points.dedup();
    points
}

/// How a test feeds the body to a [`ResponseClassifier`].
#[derive(Debug, Clone)]
enum Feeding {
    /// At these random cut points.
    Cuts(Vec<Index>),
    /// One byte at a time.
    Bytes,
    /// Chunks of this fixed size.
    Fixed(usize),
}

fn feeding() -> impl Strategy<Value = Feeding> {
    prop_oneof![
        6 => vec(any::<Index>(), 0..24).prop_map(Feeding::Cuts),
        1 => Just(Feeding::Bytes),
        1 => (1usize..64).prop_map(Feeding::Fixed),
    ]
}

fn chunks<'b>(body: &'b [u8], how: &Feeding) -> Vec<&'b [u8]> {
    match how {
        Feeding::Cuts(cuts) => {
            let mut out = Vec::new();
            let mut start = 0;
            for p in cut_points(body.len(), cuts) {
                out.push(&body[start..p]);
                start = p;
            }
            out
        }
        Feeding::Bytes => body.chunks(1).collect(),
        Feeding::Fixed(n) => body.chunks(*n).collect(),
    }
}

/// Feeds `body` in chunks, draining observed events as a client would, optionally stopping once
/// the classifier says it has decided (as an I/O layer may), then finishes.
fn feed_chunked(
    head: &ResponseHead,
    body: &[u8],
    ctx: &CallContext,
    how: &Feeding,
    stop_when_decided: bool,
) -> Verdict {
    let mut c = ResponseClassifier::new(head, ctx.clone());
    for chunk in chunks(body, how) {
        c.feed(chunk);
        while c.poll_event().is_some() {}
        if stop_when_decided && c.is_decided() {
            break;
        }
    }
    c.finish()
}

fn protocol_version() -> impl Strategy<Value = ProtocolVersion> {
    let mut all = ProtocolVersion::KNOWN.to_vec();
    all.push(ProtocolVersion::Unknown);
    select(all)
}

fn request_id() -> impl Strategy<Value = RequestId> {
    prop_oneof![
        3 => (0i64..4).prop_map(RequestId::Number),
        1 => any::<i64>().prop_map(RequestId::Number),
        2 => select(vec!["1", "abc", "", "req-7"]).prop_map(RequestId::from),
        1 => "\\PC{0,8}".prop_map(RequestId::String),
    ]
}

fn context() -> impl Strategy<Value = CallContext> {
    (request_id(), protocol_version(), any::<bool>()).prop_map(|(id, v, observe)| {
        let mut ctx = CallContext::new(id).with_protocol_version(v);
        ctx.observe_messages = observe;
        ctx
    })
}

const INTERESTING_CONTENT_TYPES: &[&str] = &[
    "application/json",
    "application/json; charset=utf-8",
    "Application/JSON",
    "application/json;charset=\"UTF-8\"",
    "application/json; charset=latin1",
    "text/event-stream",
    "text/event-stream; charset=utf-8",
    "TEXT/Event-Stream",
    "text/event-stream ; foo=\"bar;baz\"",
    "text/html",
    "text/html; charset=utf-8",
    "text/plain",
    "application/problem+json",
    "application/json-seq",
    "",
    " ",
    ";",
];

fn content_type() -> impl Strategy<Value = String> {
    prop_oneof![
        4 => select(INTERESTING_CONTENT_TYPES).prop_map(String::from),
        1 => "[a-zA-Z/+;= \"*-]{0,40}",
        1 => ".{0,40}",
    ]
}

/// Optional `Retry-After` and `WWW-Authenticate` headers, sensible and not.
fn extra_headers() -> impl Strategy<Value = Vec<(String, String)>> {
    let retry = prop_oneof![
        "[0-9]{1,12}",
        Just("Sun, 06 Nov 1994 08:49:37 GMT".to_string()),
        Just("Wed, 21 Oct 2099 07:28:00 GMT".to_string()),
        ".{0,30}",
    ]
    .prop_map(|v| ("Retry-After".to_string(), v));
    let auth = prop_oneof![
        Just(
            "Bearer resource_metadata=\"https://x.example/.well-known/oauth-protected-resource\", \
             scope=\"a b\", error=\"insufficient_scope\""
                .to_string()
        ),
        Just("Bearer realm=\"x\", error=\"invalid_token\", error_description=\"bad\"".to_string()),
        "[A-Za-z]{0,8}( [a-z_]{1,10}=(\"[^\"]{0,10}\"|[a-z]{0,5}),?){0,4}",
        ".{0,60}",
    ]
    .prop_map(|v| ("WWW-Authenticate".to_string(), v));
    vec(prop_oneof![retry, auth], 0..3)
}

fn head(status: u16, content_type: &str, extra: &[(String, String)]) -> ResponseHead {
    let mut h = ResponseHead::new(status).content_type(content_type);
    for (n, v) in extra {
        h = h.header(n.clone(), v.clone());
    }
    h
}

// ---------------------------------------------------------------------------------------------
// Realistic JSON-RPC messages
// ---------------------------------------------------------------------------------------------

/// Any JSON value, small.
fn arb_json() -> BoxedStrategy<Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(|n| json!(n)),
        (-1.0e6f64..1.0e6).prop_map(|f| json!(f)),
        "\\PC{0,12}".prop_map(Value::String),
    ];
    leaf.prop_recursive(3, 24, 4, |inner| {
        prop_oneof![
            vec(inner.clone(), 0..4).prop_map(Value::Array),
            vec(("[a-zA-Z_]{1,6}", inner), 0..4)
                .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
    .boxed()
}

fn content_block() -> BoxedStrategy<Value> {
    prop_oneof![
        6 => "\\PC{0,24}".prop_map(|t| json!({"type": "text", "text": t})),
        1 => Just(json!({"type": "image", "data": "aGVsbG8=", "mimeType": "image/png"})),
        1 => Just(json!({"type": "audio", "data": "AAAA", "mimeType": "audio/wav"})),
        1 => Just(json!({"type": "resource_link", "uri": "file:///a.txt", "name": "a"})),
        1 => Just(json!({"type": "resource", "resource": {"uri": "file:///b", "text": "b"}})),
        1 => Just(json!({"type": "widget", "payload": 1})),
        // invalid blocks
        1 => select(vec![
            json!({"type": "text"}),
            json!({"type": 3}),
            json!({"text": "no type"}),
            json!("not an object"),
            json!({"type": "image", "data": "x"}),
            json!({"type": "resource", "resource": {}}),
            json!({"type": "resource_link", "uri": "u"}),
        ]),
        1 => arb_json(),
    ]
    .boxed()
}

fn complete_result() -> BoxedStrategy<Value> {
    let is_error = prop_oneof![
        3 => Just(None),
        3 => any::<bool>().prop_map(|b| Some(json!(b))),
        1 => arb_json().prop_map(Some),
    ];
    let structured = prop_oneof![
        3 => Just(None),
        2 => vec(("[a-z]{1,5}", arb_json()), 0..3)
            .prop_map(|m| Some(Value::Object(m.into_iter().collect()))),
        1 => arb_json().prop_map(Some),
    ];
    let result_type = prop_oneof![
        4 => Just(None),
        2 => Just(Some(json!("complete"))),
        1 => Just(Some(json!(7))),
    ];
    let content = prop_oneof![
        8 => vec(content_block(), 0..4).prop_map(|c| Some(Value::Array(c))),
        1 => Just(None),
        1 => arb_json().prop_map(Some),
    ];
    (content, is_error, structured, result_type)
        .prop_map(|(content, is_error, structured, result_type)| {
            let mut m = Map::new();
            if let Some(c) = content {
                m.insert("content".into(), c);
            }
            if let Some(e) = is_error {
                m.insert("isError".into(), e);
            }
            if let Some(s) = structured {
                m.insert("structuredContent".into(), s);
            }
            if let Some(t) = result_type {
                m.insert("resultType".into(), t);
            }
            Value::Object(m)
        })
        .boxed()
}

fn result_value() -> BoxedStrategy<Value> {
    prop_oneof![
        8 => complete_result(),
        1 => select(vec![
            json!({"resultType": "input_required",
                   "inputRequests": {"a": {"method": "elicitation/create",
                                           "params": {"message": "?", "requestedSchema": {"type": "object"}}}}}),
            json!({"resultType": "input_required", "requestState": "opaque"}),
            json!({"resultType": "input_required", "inputRequests": {"r": {"method": "roots/list"}}}),
            json!({"resultType": "input_required"}),
            json!({"resultType": "input_required", "inputRequests": {"x": {"method": "tools/call"}}}),
            json!({"resultType": "input_required", "inputRequests": []}),
        ]),
        1 => select(vec![
            json!({"resultType": "task", "task": {"taskId": "t-1", "status": "working"}}),
            json!({"resultType": "task", "taskId": "t-2", "status": "working"}),
            json!({"task": {"taskId": "t-3", "status": "submitted"}}),
            json!({"resultType": "task", "task": {"taskId": ""}}),
            json!({"resultType": "task", "task": {"status": "working"}}),
            json!({"task": {"taskId": 5}}),
        ]),
        1 => "[a-z_]{0,12}".prop_map(|t| json!({"resultType": t, "content": []})),
        1 => arb_json(),
    ]
    .boxed()
}

fn error_value() -> BoxedStrategy<Value> {
    let code = prop_oneof![
        4 => select(vec![-32700i64, -32600, -32601, -32602, -32603, -32002, -32042, -32020, -32021, -32022])
            .prop_map(|c| json!(c)),
        1 => any::<i64>().prop_map(|c| json!(c)),
        1 => Just(json!(-32600.0)),
        1 => Just(json!(1.5)),
        1 => Just(json!("-32600")),
    ];
    let message = prop_oneof![
        4 => "\\PC{0,40}".prop_map(Value::String),
        1 => "[ -~\n\t\r]{0,600}".prop_map(Value::String),
        1 => arb_json(),
    ];
    let data = prop_oneof![
        3 => Just(None),
        1 => Just(Some(json!({"supported": ["2025-06-18", "2026-07-28"]}))),
        1 => Just(Some(json!({"requiredCapabilities": {"sampling": {}}}))),
        1 => Just(Some(json!({"elicitations": [{"url": "https://x"}]}))),
        1 => arb_json().prop_map(Some),
    ];
    prop_oneof![
        8 => (code, message, data, any::<bool>(), any::<bool>()).prop_map(|(c, m, d, has_c, has_m)| {
            let mut e = Map::new();
            if has_c || !has_m {
                e.insert("code".into(), c);
            }
            if has_m || !has_c {
                e.insert("message".into(), m);
            }
            if let Some(d) = d {
                e.insert("data".into(), d);
            }
            Value::Object(e)
        }),
        1 => arb_json(),
    ]
    .boxed()
}

/// Which `id` a generated response carries, relative to the expected one.
#[derive(Debug, Clone)]
enum IdSel {
    Expected,
    /// The expected id written as `1.0` (numbers) or as the other JSON type.
    Retyped,
    Null,
    Absent,
    Other(Value),
}

fn id_sel() -> impl Strategy<Value = IdSel> {
    prop_oneof![
        8 => Just(IdSel::Expected),
        1 => Just(IdSel::Retyped),
        1 => Just(IdSel::Null),
        1 => Just(IdSel::Absent),
        2 => select(vec![json!(2), json!("other"), json!(999_999), json!("1"), json!(1), json!([1]), json!(true)])
            .prop_map(IdSel::Other),
    ]
}

/// A JSON-RPC message (or something pretending to be one) as it may arrive.
#[derive(Debug, Clone)]
enum Msg {
    Result {
        id: IdSel,
        jsonrpc: Option<Value>,
        result: Value,
    },
    Error {
        id: IdSel,
        jsonrpc: Option<Value>,
        error: Value,
    },
    Both(IdSel),
    Neither(IdSel),
    Notification {
        method: Value,
        jsonrpc: bool,
    },
    ServerRequest {
        id: Value,
        method: String,
    },
    Any(Value),
}

fn jsonrpc_tag() -> impl Strategy<Value = Option<Value>> {
    prop_oneof![
        12 => Just(Some(json!("2.0"))),
        1 => Just(None),
        1 => select(vec![json!("1.0"), json!(2.0), json!("2.0 "), json!(null)]).prop_map(Some),
    ]
}

fn msg() -> BoxedStrategy<Msg> {
    prop_oneof![
        8 => (id_sel(), jsonrpc_tag(), result_value())
            .prop_map(|(id, jsonrpc, result)| Msg::Result { id, jsonrpc, result }),
        3 => (id_sel(), jsonrpc_tag(), error_value())
            .prop_map(|(id, jsonrpc, error)| Msg::Error { id, jsonrpc, error }),
        1 => id_sel().prop_map(Msg::Both),
        1 => id_sel().prop_map(Msg::Neither),
        2 => (
            prop_oneof![
                4 => select(vec!["notifications/progress", "notifications/message"]).prop_map(|m| json!(m)),
                1 => arb_json(),
            ],
            any::<bool>()
        )
            .prop_map(|(method, jsonrpc)| Msg::Notification { method, jsonrpc }),
        1 => (
            select(vec![json!("s-1"), json!(41), json!(1)]),
            select(vec!["elicitation/create", "sampling/createMessage", "roots/list", "ping"]),
        )
            .prop_map(|(id, method)| Msg::ServerRequest { id, method: method.to_string() }),
        1 => arb_json().prop_map(Msg::Any),
    ]
    .boxed()
}

fn put_id(m: &mut Map<String, Value>, id: &IdSel, expected: &RequestId) {
    let v = match id {
        IdSel::Expected => id_json(expected),
        IdSel::Retyped => match expected {
            RequestId::Number(n) => json!(*n as f64),
            RequestId::String(s) => s
                .parse::<i64>()
                .map(|n| json!(n))
                .unwrap_or_else(|_| json!(0)),
        },
        IdSel::Null => Value::Null,
        IdSel::Absent => return,
        IdSel::Other(v) => v.clone(),
    };
    m.insert("id".into(), v);
}

fn put_tag(m: &mut Map<String, Value>, tag: &Option<Value>) {
    if let Some(t) = tag {
        m.insert("jsonrpc".into(), t.clone());
    }
}

impl Msg {
    fn to_value(&self, expected: &RequestId) -> Value {
        let mut m = Map::new();
        match self {
            Msg::Result {
                id,
                jsonrpc,
                result,
            } => {
                put_tag(&mut m, jsonrpc);
                put_id(&mut m, id, expected);
                m.insert("result".into(), result.clone());
            }
            Msg::Error { id, jsonrpc, error } => {
                put_tag(&mut m, jsonrpc);
                put_id(&mut m, id, expected);
                m.insert("error".into(), error.clone());
            }
            Msg::Both(id) => {
                put_tag(&mut m, &Some(json!("2.0")));
                put_id(&mut m, id, expected);
                m.insert("result".into(), json!({"content": []}));
                m.insert("error".into(), json!({"code": -1, "message": "x"}));
            }
            Msg::Neither(id) => {
                put_tag(&mut m, &Some(json!("2.0")));
                put_id(&mut m, id, expected);
            }
            Msg::Notification { method, jsonrpc } => {
                if *jsonrpc {
                    put_tag(&mut m, &Some(json!("2.0")));
                }
                m.insert("method".into(), method.clone());
                m.insert("params".into(), json!({"progress": 1, "total": 3}));
            }
            Msg::ServerRequest { id, method } => {
                put_tag(&mut m, &Some(json!("2.0")));
                m.insert("id".into(), id.clone());
                m.insert("method".into(), json!(method));
                m.insert("params".into(), json!({}));
            }
            Msg::Any(v) => return v.clone(),
        }
        Value::Object(m)
    }

    fn render(&self, expected: &RequestId, pretty: bool) -> String {
        let v = self.to_value(expected);
        if pretty {
            serde_json::to_string_pretty(&v).unwrap()
        } else {
            serde_json::to_string(&v).unwrap()
        }
    }
}

/// A well-formed complete result: success or tool error.
fn good_result() -> BoxedStrategy<Value> {
    (
        vec(
            content_block().prop_filter("well-formed", |b| {
                b.get("type").is_some_and(|t| {
                    t == "text" && b.get("text").is_some()
                        || t == "image" && b.get("mimeType").is_some()
                })
            }),
            0..3,
        ),
        prop::option::of(any::<bool>()),
        prop::option::of(vec(("[a-z]{1,5}", arb_json()), 0..3)),
    )
        .prop_map(|(content, is_error, structured)| {
            let mut m = Map::new();
            m.insert("content".into(), Value::Array(content));
            if let Some(e) = is_error {
                m.insert("isError".into(), json!(e));
            }
            if let Some(s) = structured {
                m.insert(
                    "structuredContent".into(),
                    Value::Object(s.into_iter().collect()),
                );
            }
            Value::Object(m)
        })
        .boxed()
}

/// Messages a healthy stream carries before its response: notifications, server requests,
/// responses to other requests.
fn stream_chatter() -> BoxedStrategy<Msg> {
    prop_oneof![
        4 => select(vec!["notifications/progress", "notifications/message"])
            .prop_map(|m| Msg::Notification { method: json!(m), jsonrpc: true }),
        1 => (
            select(vec![json!("s-1"), json!(41)]),
            select(vec!["elicitation/create", "sampling/createMessage", "roots/list"]),
        )
            .prop_map(|(id, method)| Msg::ServerRequest { id, method: method.to_string() }),
        1 => (select(vec![json!("other"), json!(999_999), json!(-5)]), good_result())
            .prop_map(|(id, result)| Msg::Result { id: IdSel::Other(id), jsonrpc: Some(json!("2.0")), result }),
    ]
    .boxed()
}

/// The response to the request: a result or error with the expected id.
fn terminal_msg() -> BoxedStrategy<Msg> {
    prop_oneof![
        3 => good_result().prop_map(|result| Msg::Result {
            id: IdSel::Expected,
            jsonrpc: Some(json!("2.0")),
            result
        }),
        3 => (jsonrpc_tag(), result_value()).prop_map(|(jsonrpc, result)| Msg::Result {
            id: IdSel::Expected,
            jsonrpc,
            result
        }),
        1 => (jsonrpc_tag(), error_value()).prop_map(|(jsonrpc, error)| Msg::Error {
            id: IdSel::Expected,
            jsonrpc,
            error
        }),
    ]
    .boxed()
}

// ---------------------------------------------------------------------------------------------
// Realistic SSE streams
// ---------------------------------------------------------------------------------------------

/// What an event's `data:` carries.
#[derive(Debug, Clone)]
enum Payload {
    /// A message, compact (one data line) or pretty (split over several data lines).
    Message(Msg, bool),
    /// Not JSON.
    Malformed(String),
    /// Raw bytes, possibly invalid UTF-8 (no line ends, so they stay one data line).
    Bytes(Vec<u8>),
    /// `data:` with nothing (priming events).
    Empty,
}

#[derive(Debug, Clone)]
struct Block {
    id: Option<String>,
    event: Option<String>,
    /// Before the data lines.
    junk_before: Vec<String>,
    payload: Option<Payload>,
    /// `data:x` (no space) instead of `data: x`.
    no_space: bool,
}

#[derive(Debug, Clone)]
enum Item {
    Block(Block),
    Comment(String),
    Retry(String),
    Blank,
    /// Arbitrary bytes, line ends and all: nothing may panic or depend on the chunking.
    Garbage(Vec<u8>),
}

#[derive(Debug, Clone)]
enum LineEnd {
    Lf,
    Cr,
    CrLf,
    /// Cycled per line.
    Mixed(Vec<u8>),
}

#[derive(Debug, Clone)]
struct Stream {
    bom: bool,
    line_end: LineEnd,
    before: Vec<Item>,
    terminal: Option<(Msg, bool)>,
    after: Vec<Item>,
    /// A last event without its blank line (maybe without its line end).
    trailing_partial: Option<(Block, bool)>,
}

fn payload() -> BoxedStrategy<Payload> {
    prop_oneof![
        8 => (msg(), any::<bool>()).prop_map(|(m, p)| Payload::Message(m, p)),
        1 => select(vec!["{\"jsonrpc\":", "not json", "{}{}", "[1,", "{\"a\":1}x", "\u{feff}{}", " "])
            .prop_map(|s| Payload::Malformed(s.to_string())),
        1 => vec(any::<u8>().prop_filter("no line end", |b| *b != b'\n' && *b != b'\r'), 1..12)
            .prop_map(Payload::Bytes),
        1 => Just(Payload::Empty),
    ]
    .boxed()
}

fn event_id() -> impl Strategy<Value = String> {
    prop_oneof![
        4 => "[a-z0-9-]{1,8}",
        1 => Just(String::new()),
        1 => Just("a\u{0}b".to_string()),
        1 => "\\PC{0,6}",
    ]
}

fn block_with(payload: BoxedStrategy<Option<Payload>>) -> BoxedStrategy<Block> {
    let event = prop_oneof![
        6 => Just(None),
        2 => Just(Some("message".to_string())),
        1 => select(vec!["ping", "endpoint", "Message", ""]).prop_map(|s| Some(s.to_string())),
    ];
    let junk = vec(
        select(vec![
            ": inside the event",
            "foo: bar",
            "retry: 1500",
            "retry: 1.5",
            "dat: typo",
            "data",
            "id",
            "event",
        ])
        .prop_map(String::from),
        0..2,
    );
    (
        prop::option::weighted(0.4, event_id()),
        event,
        junk,
        payload,
        any::<bool>(),
    )
        .prop_map(|(id, event, junk_before, payload, no_space)| Block {
            id,
            event,
            junk_before,
            payload,
            no_space,
        })
        .boxed()
}

fn block() -> BoxedStrategy<Block> {
    let p = prop_oneof![
        6 => (stream_chatter(), any::<bool>()).prop_map(|(m, p)| Some(Payload::Message(m, p))),
        2 => payload().prop_map(Some),
        1 => Just(None),
    ];
    block_with(p.boxed())
}

fn item() -> BoxedStrategy<Item> {
    prop_oneof![
        8 => block().prop_map(Item::Block),
        2 => "[ -~]{0,16}".prop_map(Item::Comment),
        1 => prop_oneof!["[0-9]{1,6}", "[0-9]{25}", Just("soon".to_string()), Just(String::new())]
            .prop_map(Item::Retry),
        1 => Just(Item::Blank),
        1 => vec(select(vec![b'\n', b'\r', b':', b'd', b'a', b't', b' ', 0xEF, 0xBB, 0xBF, 0xFF, b'{', b'}']), 0..12)
            .prop_map(Item::Garbage),
    ]
    .boxed()
}

fn line_end() -> impl Strategy<Value = LineEnd> {
    prop_oneof![
        3 => Just(LineEnd::Lf),
        1 => Just(LineEnd::Cr),
        2 => Just(LineEnd::CrLf),
        1 => vec(0u8..3, 1..5).prop_map(LineEnd::Mixed),
    ]
}

fn stream() -> BoxedStrategy<Stream> {
    (
        prop::bool::weighted(0.2),
        line_end(),
        vec(item(), 0..8),
        prop::option::weighted(0.7, (terminal_msg(), any::<bool>())),
        vec(item(), 0..3),
        prop::option::weighted(
            0.25,
            (
                block_with(
                    prop::option::of(
                        (terminal_msg(), any::<bool>()).prop_map(|(m, p)| Payload::Message(m, p)),
                    )
                    .boxed(),
                ),
                any::<bool>(),
            ),
        ),
    )
        .prop_map(
            |(bom, line_end, before, terminal, after, trailing_partial)| Stream {
                bom,
                line_end,
                before,
                terminal,
                after,
                trailing_partial,
            },
        )
        .boxed()
}

struct Writer {
    out: Vec<u8>,
    line_end: LineEnd,
    lines: usize,
}

impl Writer {
    fn end(&mut self) {
        let which = match &self.line_end {
            LineEnd::Lf => 0,
            LineEnd::Cr => 1,
            LineEnd::CrLf => 2,
            LineEnd::Mixed(v) => v[self.lines % v.len()],
        };
        self.lines += 1;
        self.out.extend_from_slice(match which {
            0 => b"\n",
            1 => b"\r",
            _ => b"\r\n",
        });
    }

    fn line(&mut self, text: &[u8]) {
        self.out.extend_from_slice(text);
        self.end();
    }

    /// Writes the block's lines; the blank line that dispatches it is the caller's business.
    fn block(&mut self, b: &Block, expected: &RequestId) {
        for j in &b.junk_before {
            self.line(j.as_bytes());
        }
        if let Some(id) = &b.id {
            self.line(format!("id: {id}").as_bytes());
        }
        if let Some(e) = &b.event {
            self.line(format!("event: {e}").as_bytes());
        }
        let prefix: &[u8] = if b.no_space { b"data:" } else { b"data: " };
        let data_lines: Vec<Vec<u8>> = match &b.payload {
            None => vec![],
            Some(Payload::Message(m, pretty)) => m
                .render(expected, *pretty)
                .split('\n')
                .map(|l| l.as_bytes().to_vec())
                .collect(),
            Some(Payload::Malformed(s)) => vec![s.as_bytes().to_vec()],
            Some(Payload::Bytes(b)) => vec![b.clone()],
            Some(Payload::Empty) => vec![vec![]],
        };
        for d in data_lines {
            let mut l = prefix.to_vec();
            l.extend_from_slice(&d);
            self.line(&l);
        }
    }

    fn item(&mut self, item: &Item, expected: &RequestId) {
        match item {
            Item::Block(b) => {
                self.block(b, expected);
                self.end();
            }
            Item::Comment(c) => self.line(format!(":{c}").as_bytes()),
            Item::Retry(r) => self.line(format!("retry: {r}").as_bytes()),
            Item::Blank => self.end(),
            Item::Garbage(g) => self.out.extend_from_slice(g),
        }
    }
}

impl Stream {
    fn render(&self, expected: &RequestId) -> Vec<u8> {
        let mut w = Writer {
            out: Vec::new(),
            line_end: self.line_end.clone(),
            lines: 0,
        };
        if self.bom {
            w.out.extend_from_slice(b"\xEF\xBB\xBF");
        }
        for i in &self.before {
            w.item(i, expected);
        }
        if let Some((m, pretty)) = &self.terminal {
            let b = Block {
                id: None,
                event: None,
                junk_before: vec![],
                payload: Some(Payload::Message(m.clone(), *pretty)),
                no_space: false,
            };
            w.item(&Item::Block(b), expected);
        }
        for i in &self.after {
            w.item(i, expected);
        }
        if let Some((b, with_line_end)) = &self.trailing_partial {
            w.block(b, expected);
            if !with_line_end {
                // Take the last line end off again.
                while matches!(w.out.last(), Some(b'\n' | b'\r')) {
                    w.out.pop();
                }
            }
        }
        w.out
    }
}

// ---------------------------------------------------------------------------------------------
// Realistic JSON bodies
// ---------------------------------------------------------------------------------------------

#[derive(Debug, Clone)]
enum Mangle {
    None,
    Truncate(Index),
    Trailing(&'static str),
    Leading(&'static str),
    /// Replace one byte with an invalid UTF-8 byte.
    BadByte(Index, u8),
}

fn mangle() -> impl Strategy<Value = Mangle> {
    prop_oneof![
        10 => Just(Mangle::None),
        1 => any::<Index>().prop_map(Mangle::Truncate),
        1 => select(vec!["\n", "  \r\n\t", "{}", " x", "\u{0}", "[]"]).prop_map(Mangle::Trailing),
        1 => select(vec!["\u{feff}", " \n", "x"]).prop_map(Mangle::Leading),
        1 => (any::<Index>(), select(vec![0x80u8, 0xC0, 0xFF, 0xED])).prop_map(|(i, b)| Mangle::BadByte(i, b)),
    ]
}

#[derive(Debug, Clone)]
enum JsonBody {
    One(Msg, bool),
    /// A 2025-03-26 batch.
    Batch(Vec<Msg>),
    /// A success whose structuredContent nests `depth` arrays.
    Deep(usize),
}

fn json_body() -> impl Strategy<Value = (JsonBody, Mangle)> {
    let body = prop_oneof![
        10 => (msg(), any::<bool>()).prop_map(|(m, p)| JsonBody::One(m, p)),
        3 => (terminal_msg(), any::<bool>()).prop_map(|(m, p)| JsonBody::One(m, p)),
        2 => vec(msg(), 0..4).prop_map(JsonBody::Batch),
        1 => (0usize..1500).prop_map(JsonBody::Deep),
    ];
    (body, mangle())
}

impl JsonBody {
    fn render(&self, expected: &RequestId, mangle: &Mangle) -> Vec<u8> {
        let out = match self {
            JsonBody::One(m, pretty) => m.render(expected, *pretty).into_bytes(),
            JsonBody::Batch(ms) => {
                let items: Vec<Value> = ms.iter().map(|m| m.to_value(expected)).collect();
                serde_json::to_vec(&items).unwrap()
            }
            JsonBody::Deep(depth) => {
                let mut s = format!(
                    r#"{{"jsonrpc":"2.0","id":{},"result":{{"content":[],"structuredContent":{{"a":"#,
                    id_json(expected)
                );
                s.push_str(&"[".repeat(*depth));
                s.push_str(&"]".repeat(*depth));
                s.push_str("}}}");
                s.into_bytes()
            }
        };
        JsonBody::render_raw(out, mangle)
    }

    /// Applies `mangle` to a rendered body.
    fn render_raw(mut out: Vec<u8>, mangle: &Mangle) -> Vec<u8> {
        match mangle {
            Mangle::None => {}
            Mangle::Truncate(i) => out.truncate(i.index(out.len() + 1)),
            Mangle::Trailing(t) => out.extend_from_slice(t.as_bytes()),
            Mangle::Leading(l) => {
                let mut v = l.as_bytes().to_vec();
                v.append(&mut out);
                out = v;
            }
            Mangle::BadByte(i, b) => {
                if !out.is_empty() {
                    let at = i.index(out.len());
                    out[at] = *b;
                }
            }
        }
        out
    }
}

/// Any body: random bytes, or a realistic JSON or SSE body (rendered for the expected id).
#[derive(Debug, Clone)]
enum AnyBody {
    Bytes(Vec<u8>),
    Json(JsonBody, Mangle),
    Sse(Box<Stream>),
}

fn any_body() -> impl Strategy<Value = AnyBody> {
    prop_oneof![
        3 => vec(any::<u8>(), 0..400).prop_map(AnyBody::Bytes),
        2 => json_body().prop_map(|(b, m)| AnyBody::Json(b, m)),
        2 => stream().prop_map(|s| AnyBody::Sse(Box::new(s))),
    ]
}

impl AnyBody {
    fn render(&self, expected: &RequestId) -> Vec<u8> {
        match self {
            AnyBody::Bytes(b) => b.clone(),
            AnyBody::Json(b, m) => b.render(expected, m),
            AnyBody::Sse(s) => s.render(expected),
        }
    }
}

fn status() -> impl Strategy<Value = u16> {
    prop_oneof![
        4 => Just(200u16),
        1 => select(vec![201u16, 202, 204, 206, 299]),
        1 => select(vec![400u16, 401, 403, 404, 405, 413, 429, 500, 502, 503]),
        2 => 100u16..=999,
    ]
}

// ---------------------------------------------------------------------------------------------
// (a) Anything in, a well-formed verdict out
// ---------------------------------------------------------------------------------------------

proptest! {
    #![proptest_config(config(1024))]

    #[test]
    fn any_response_gets_a_consistent_verdict(
        status in status(),
        ct in content_type(),
        extra in extra_headers(),
        body in any_body(),
        ctx in context(),
        how in feeding(),
        stop in any::<bool>(),
    ) {
        let body = body.render(&ctx.expected_id);
        let head = head(status, &ct, &extra);
        let whole = classify(&head, &body, &ctx);
        prop_assert_eq!(whole.layer, whole.outcome.layer(), "whole body: {}", show(&body));
        if !(200..300).contains(&status) {
            prop_assert_eq!(whole.outcome, Outcome::HttpError);
        }
        let json = to_json(&whole);
        let back: Verdict = serde_json::from_str(&json).expect("a verdict reads back");
        prop_assert_eq!(&back, &whole);

        let chunked = feed_chunked(&head, &body, &ctx, &how, stop);
        prop_assert_eq!(chunked.layer, chunked.outcome.layer());
        prop_assert_eq!(
            to_json(&chunked),
            json,
            "status {} content-type {:?} body b\"{}\" fed as {:?}",
            status,
            ct,
            show(&body),
            how
        );
    }

    #[test]
    fn interrupted_responses_get_a_consistent_verdict(
        status in status(),
        ct in content_type(),
        body in any_body(),
        ctx in context(),
        how in feeding(),
        cut in any::<Index>(),
        timed_out in any::<bool>(),
    ) {
        let body = body.render(&ctx.expected_id);
        let head = head(status, &ct, &[]);
        let prefix = &body[..cut.index(body.len() + 1)];
        let mut a = ResponseClassifier::new(&head, ctx.clone());
        let mut b = ResponseClassifier::new(&head, ctx.clone());
        for chunk in chunks(prefix, &how) {
            a.feed(chunk);
            b.feed(chunk);
        }
        let decided = a.is_decided();
        let why = if timed_out {
            Interruption::TimedOut("the deadline passed".into())
        } else {
            Interruption::ConnectionLost("the connection was reset".into())
        };
        let v = a.interrupted(why);
        prop_assert_eq!(v.layer, v.outcome.layer());
        if !(200..300).contains(&status) {
            prop_assert_eq!(v.outcome, Outcome::HttpError);
        } else if decided {
            // Once decided, a broken connection does not change the verdict.
            let finished = b.finish();
            prop_assert_eq!(to_json(&v), to_json(&finished), "prefix b\"{}\"", show(prefix));
        } else if v.outcome == Outcome::UnexpectedContentType {
            // Rule 3 decides on the media type before the body ends: the break changes nothing.
            prop_assert!(!prefix.is_empty());
            prop_assert_eq!(to_json(&v), to_json(&b.finish()), "prefix b\"{}\"", show(prefix));
        } else {
            let allowed = [Outcome::ConnectionError, Outcome::Timeout, Outcome::StreamIncomplete];
            prop_assert!(allowed.contains(&v.outcome), "{:?} after b\"{}\"", v.outcome, show(prefix));
            if timed_out {
                prop_assert_eq!(v.outcome, Outcome::Timeout);
            }
        }
    }
}

// ---------------------------------------------------------------------------------------------
// (b) SSE chunk invariance, (c) JSON chunk invariance
// ---------------------------------------------------------------------------------------------

fn sse_content_type() -> impl Strategy<Value = &'static str> {
    select(vec![
        "text/event-stream",
        "text/event-stream; charset=utf-8",
        "Text/Event-Stream",
        "TEXT/EVENT-STREAM;foo=bar",
    ])
}

fn json_content_type() -> impl Strategy<Value = &'static str> {
    select(vec![
        "application/json",
        "application/json; charset=utf-8",
        "APPLICATION/JSON",
        "application/json; charset=iso-8859-1",
    ])
}

fn assert_chunk_invariant(
    head: &ResponseHead,
    body: &[u8],
    ctx: &CallContext,
    how: &Feeding,
    stop: bool,
) -> Result<Verdict, TestCaseError> {
    let whole = classify(head, body, ctx);
    let want = to_json(&whole);
    for (label, feeding) in [
        ("random", how.clone()),
        ("one byte at a time", Feeding::Bytes),
    ] {
        let got = feed_chunked(head, body, ctx, &feeding, stop);
        prop_assert_eq!(
            to_json(&got),
            want.clone(),
            "{} ({:?}, stop when decided: {}), expected id {}, version {}, body b\"{}\"",
            label,
            feeding,
            stop,
            ctx.expected_id,
            ctx.protocol_version,
            show(body)
        );
    }
    Ok(whole)
}

proptest! {
    #![proptest_config(config(768))]

    #[test]
    fn sse_verdict_does_not_depend_on_chunking(
        s in stream(),
        ct in sse_content_type(),
        ctx in context(),
        how in feeding(),
        stop in any::<bool>(),
    ) {
        let body = s.render(&ctx.expected_id);
        let head = ResponseHead::new(200).content_type(ct);
        let v = assert_chunk_invariant(&head, &body, &ctx, &how, stop)?;
        prop_assert_eq!(v.layer, v.outcome.layer());
        if !body.is_empty() {
            prop_assert!(v.stream.is_some(), "an SSE verdict carries stream counts");
        }
    }

    #[test]
    fn json_verdict_does_not_depend_on_chunking(
        (b, m) in json_body(),
        ct in json_content_type(),
        status in prop_oneof![4 => Just(200u16), 1 => select(vec![202u16, 400, 404, 500])],
        ctx in context(),
        how in feeding(),
        stop in any::<bool>(),
    ) {
        let body = b.render(&ctx.expected_id, &m);
        let head = ResponseHead::new(status).content_type(ct);
        let v = assert_chunk_invariant(&head, &body, &ctx, &how, stop)?;
        prop_assert_eq!(v.layer, v.outcome.layer());
        // The same message as the data of one SSE event gets the same outcome (when it is the
        // response to this request: anything else is skipped or counted on a stream).
        if let (JsonBody::One(msg @ (Msg::Result { id: IdSel::Expected, .. }
            | Msg::Error { id: IdSel::Expected, .. }), _), Mangle::None, 200) = (&b, &m, status)
        {
            let data = msg.render(&ctx.expected_id, false);
            let sse = format!("data: {data}\n\n");
            let sv = classify(&ResponseHead::new(200).content_type("text/event-stream"), sse.as_bytes(), &ctx);
            prop_assert_eq!(sv.outcome, v.outcome, "as SSE: {}", data);
        }
    }
}

// ---------------------------------------------------------------------------------------------
// (c') Large JSON bodies are scanned and compacted: the same verdicts as the whole body
// ---------------------------------------------------------------------------------------------

/// A string of up to ~3,000 characters: runs of any printable text, spaces, control
/// characters and non-ASCII, so a cut after 1,024 solid characters lands anywhere.
fn long_text() -> BoxedStrategy<String> {
    vec(
        prop_oneof![
            4 => "\\PC{0,40}",
            2 => " {1,200}",
            1 => "[\\x00-\\x1f\\x7f]{1,8}",
            1 => "[é€😀\\u{a0}\\u{2028}]{1,20}",
        ],
        0..120,
    )
    .prop_map(|parts| parts.concat())
    .boxed()
}

/// A response whose strings may be long: tool text, error message, `jsonrpc`, id, a member name.
fn long_string_body() -> BoxedStrategy<Value> {
    prop_oneof![
        3 => (vec(long_text(), 0..3), any::<bool>()).prop_map(|(texts, is_error)| {
            let content: Vec<Value> = texts.into_iter().map(|t| json!({"type": "text", "text": t})).collect();
            json!({"jsonrpc": "2.0", "id": 1, "result": {"content": content, "isError": is_error}})
        }),
        1 => long_text().prop_map(|m| json!({"jsonrpc": "2.0", "id": 1, "error": {"code": -32603, "message": m}})),
        1 => long_text().prop_map(|t| json!({"jsonrpc": t, "id": 1, "result": {"content": []}})),
        1 => long_text().prop_map(|t| json!({"jsonrpc": "2.0", "id": t, "result": {"content": []}})),
        1 => long_text().prop_map(|t| {
            let mut m = Map::new();
            m.insert(t.clone(), json!(t));
            json!({"jsonrpc": "2.0", "id": 1, "result": {"content": [], "_meta": Value::Object(m)}})
        }),
        1 => (long_text(), long_text()).prop_map(|(a, b)| json!({"jsonrpc": "2.0", "id": 1,
            "result": {"resultType": a, "content": [{"type": b, "text": "x"}]}})),
    ]
    .boxed()
}

/// The whole body (parsed in one piece) and the same body scanned from its first byte on give
/// the same verdict; a body that is not JSON is `MALFORMED_JSON` both ways.
fn assert_compaction_invariant(
    head: &ResponseHead,
    body: &[u8],
    ctx: &CallContext,
    how: &Feeding,
) -> Result<(), TestCaseError> {
    let whole = classify(head, body, ctx);
    let mut c = ResponseClassifier::new(head, ctx.clone()).compact_json_after(Some(0));
    for chunk in chunks(body, how) {
        c.feed(chunk);
    }
    let scanned = c.finish();
    prop_assert_eq!(whole.outcome, scanned.outcome, "body {}", show(body));
    if whole.outcome != Outcome::MalformedJson {
        prop_assert_eq!(to_json(&whole), to_json(&scanned), "body {}", show(body));
    }
    Ok(())
}

proptest! {
    #![proptest_config(config(160))]

    #[test]
    fn compacted_json_gets_the_verdict_of_the_whole_body(
        v in long_string_body(),
        pretty in any::<bool>(),
        m in mangle(),
        how in feeding(),
    ) {
        let text = if pretty { serde_json::to_string_pretty(&v) } else { serde_json::to_string(&v) };
        let body = JsonBody::render_raw(text.unwrap().into_bytes(), &m);
        let head = ResponseHead::new(200).content_type("application/json");
        assert_compaction_invariant(&head, &body, &CallContext::new(1), &how)?;
    }

    #[test]
    fn compaction_keeps_the_verdict_of_realistic_bodies(
        (b, m) in json_body(),
        ctx in context(),
        how in feeding(),
    ) {
        let body = b.render(&ctx.expected_id, &m);
        let head = ResponseHead::new(200).content_type("application/json");
        assert_compaction_invariant(&head, &body, &ctx, &how)?;
    }
}

// ---------------------------------------------------------------------------------------------
// (d) Duplicate member names
// ---------------------------------------------------------------------------------------------

/// A member name written as JSON: plain, or with some characters as `\uXXXX` escapes (the same
/// name to any JSON parser, so still a duplicate).
fn write_name(name: &str, escapes: &[bool]) -> String {
    let mut out = String::from("\"");
    for (i, c) in name.chars().enumerate() {
        if escapes.get(i).copied().unwrap_or(false) {
            out.push_str(&format!("\\u{:04x}", c as u32));
        } else {
            out.push(c);
        }
    }
    out.push('"');
    out
}

/// An object written by hand (so that names may repeat): `members` in order.
fn write_object(members: &[(String, String)]) -> String {
    let body: Vec<String> = members.iter().map(|(k, v)| format!("{k}:{v}")).collect();
    format!("{{{}}}", body.join(","))
}

#[derive(Debug, Clone)]
enum DupWhere {
    /// A member of the envelope repeats.
    Envelope,
    /// A member of `error` repeats (still the envelope's business).
    InError,
    /// A member of `result` itself repeats.
    Result,
    /// A member of an object nested in `result` (structuredContent, a content block) repeats.
    NestedInResult,
}

fn dup_where() -> impl Strategy<Value = DupWhere> {
    prop_oneof![
        Just(DupWhere::Envelope),
        Just(DupWhere::InError),
        Just(DupWhere::Result),
        Just(DupWhere::NestedInResult),
    ]
}

#[derive(Debug, Clone)]
struct DupCase {
    place: DupWhere,
    /// The repeated name: one of the meaningful members or an extra one.
    name: String,
    escapes: Vec<bool>,
    /// Where among the object's members the first and second copies go.
    first: Index,
    second: Index,
    values: (Value, Value),
    extra: Vec<(String, Value)>,
}

fn dup_case() -> impl Strategy<Value = DupCase> {
    (
        dup_where(),
        prop_oneof![
            select(vec![
                "jsonrpc", "id", "result", "error", "content", "isError", "type", "text", "code",
                "message"
            ])
            .prop_map(String::from),
            "x[a-z]{0,5}",
        ],
        vec(any::<bool>(), 0..8),
        any::<Index>(),
        any::<Index>(),
        (arb_json(), arb_json()),
        vec(("y[a-z]{0,5}", arb_json()), 0..3),
    )
        .prop_map(
            |(place, name, escapes, first, second, values, extra)| DupCase {
                place,
                name,
                escapes,
                first,
                second,
                values,
                extra,
            },
        )
}

/// Members written as JSON, with `name` inserted twice (the second copy after the first).
fn with_duplicate(mut members: Vec<(String, String)>, c: &DupCase) -> Vec<(String, String)> {
    members.retain(|(k, _)| k.trim_matches('"') != c.name);
    for (k, v) in &c.extra {
        if *k != c.name && !members.iter().any(|(m, _)| m.trim_matches('"') == k) {
            members.push((write_name(k, &[]), v.to_string()));
        }
    }
    let i = c.first.index(members.len() + 1);
    members.insert(i, (write_name(&c.name, &[]), c.values.0.to_string()));
    let j = i + 1 + c.second.index(members.len() - i);
    members.insert(j, (write_name(&c.name, &c.escapes), c.values.1.to_string()));
    members
}

fn plain(members: &[(&str, String)]) -> Vec<(String, String)> {
    members
        .iter()
        .map(|(k, v)| (write_name(k, &[]), v.clone()))
        .collect()
}

fn dup_body(c: &DupCase, expected: &RequestId) -> (String, Outcome) {
    let id = id_json(expected).to_string();
    let tag = "\"2.0\"".to_string();
    let ok_result = || write_object(&plain(&[("content", "[]".into())]));
    match c.place {
        DupWhere::Envelope => {
            let members = plain(&[("jsonrpc", tag), ("id", id), ("result", ok_result())]);
            (
                write_object(&with_duplicate(members, c)),
                Outcome::InvalidEnvelope,
            )
        }
        DupWhere::InError => {
            let error = with_duplicate(
                plain(&[("code", "-32603".into()), ("message", "\"boom\"".into())]),
                c,
            );
            let members = plain(&[
                ("jsonrpc", tag),
                ("id", id),
                ("error", write_object(&error)),
            ]);
            (write_object(&members), Outcome::InvalidEnvelope)
        }
        DupWhere::Result => {
            let result = with_duplicate(
                plain(&[
                    ("content", r#"[{"type":"text","text":"hi"}]"#.into()),
                    ("isError", "false".into()),
                ]),
                c,
            );
            let members = plain(&[
                ("jsonrpc", tag),
                ("id", id),
                ("result", write_object(&result)),
            ]);
            (write_object(&members), Outcome::InvalidToolResult)
        }
        DupWhere::NestedInResult => {
            let inner = write_object(&with_duplicate(plain(&[("a", "1".into())]), c));
            let result = write_object(&plain(&[
                (
                    "content",
                    format!(r#"[{{"type":"text","text":"hi"}},{inner}]"#),
                ),
                (
                    "structuredContent",
                    write_object(&plain(&[("n", inner.clone())])),
                ),
            ]));
            let members = plain(&[("jsonrpc", tag), ("id", id), ("result", result)]);
            (write_object(&members), Outcome::InvalidToolResult)
        }
    }
}

proptest! {
    #![proptest_config(config(512))]

    #[test]
    fn duplicate_member_names_are_findings(c in dup_case(), ctx in context(), how in feeding()) {
        let (body, want) = dup_body(&c, &ctx.expected_id);
        // The body is valid JSON (serde_json reads it, last duplicate winning).
        prop_assert!(serde_json::from_str::<Value>(&body).is_ok(), "not JSON: {}", body);
        let head = ResponseHead::new(200).content_type("application/json");
        let v = classify(&head, body.as_bytes(), &ctx);
        prop_assert_eq!(v.outcome, want, "{} -> {:?}", body, v.detail);
        let chunked = feed_chunked(&head, body.as_bytes(), &ctx, &how, false);
        prop_assert_eq!(to_json(&chunked), to_json(&v));
        // The same message as an SSE event's data. A repeated envelope `id` is left out here: see
        // `sse_duplicate_envelope_id_is_invalid_envelope` below (a known bug).
        if matches!(c.place, DupWhere::Envelope) && c.name == "id" {
            return Ok(());
        }
        let sse = format!("data: {body}\n\n");
        let sv = classify(&ResponseHead::new(200).content_type("text/event-stream"), sse.as_bytes(), &ctx);
        prop_assert_eq!(sv.outcome, want, "as SSE: {} -> {:?}", body, sv.detail);
    }
}

/// Regression (found by `duplicate_member_names_are_findings`): on an SSE stream, a message whose envelope repeats `id` with
/// another id first was skipped as "a response for another id" (the classifier read the first
/// `id`), so the stream ended `STREAM_INCOMPLETE` — while a last-wins parser (JSON.parse,
/// serde_json) reads it as the response to request 1, and the same body as `application/json`
/// is `INVALID_ENVELOPE`. Rule 5: duplicate member names in the envelope → `INVALID_ENVELOPE`
/// ("two parsers must never read one body two ways").
#[test]
fn sse_duplicate_envelope_id_is_invalid_envelope() {
    let msg = r#"{"jsonrpc":"2.0","id":2,"id":1,"result":{"content":[]}}"#;
    let ctx = CallContext::new(1);
    let json = classify(
        &ResponseHead::new(200).content_type("application/json"),
        msg.as_bytes(),
        &ctx,
    );
    assert_eq!(json.outcome, Outcome::InvalidEnvelope);
    let sse = format!("data: {msg}\n\n");
    let v = classify(
        &ResponseHead::new(200).content_type("text/event-stream"),
        sse.as_bytes(),
        &ctx,
    );
    assert_eq!(v.outcome, Outcome::InvalidEnvelope, "{:?}", v.detail);
}
