//! What the heads of both directions share: a head's header fields ([`Fields`]), read in place
//! from the head's bytes and edited without copying them, and the fields that frame a message
//! or say what becomes of the connection, read the same way for requests and responses
//! (RFC 9110 §8.6, RFC 9112 §6–§9).

use bytes::{Bytes, BytesMut};

/// The most header lines of a head (hyper's limit, which the proxy had before).
pub(crate) const MAX_HEADERS: usize = 100;

/// Field names the proxy looks for, or meets in most heads, recognised once when a head is
/// read: finding one is then comparing a number, and writing one needs no UTF-8 check.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Known {
    Accept,
    AcceptEncoding,
    Authorization,
    CacheControl,
    Connection,
    ContentEncoding,
    ContentLength,
    ContentType,
    Date,
    Expect,
    Forwarded,
    Host,
    KeepAlive,
    McpProtocolVersion,
    McpSessionId,
    Origin,
    ProxyAuthorization,
    ProxyConnection,
    RetryAfter,
    Server,
    Te,
    Trailer,
    TransferEncoding,
    Upgrade,
    UserAgent,
    Via,
    WwwAuthenticate,
    XForwardedHost,
    XForwardedProto,
}

impl Known {
    /// The name in lower case.
    pub(crate) const fn as_str(self) -> &'static str {
        match self {
            Known::Accept => "accept",
            Known::AcceptEncoding => "accept-encoding",
            Known::Authorization => "authorization",
            Known::CacheControl => "cache-control",
            Known::Connection => "connection",
            Known::ContentEncoding => "content-encoding",
            Known::ContentLength => "content-length",
            Known::ContentType => "content-type",
            Known::Date => "date",
            Known::Expect => "expect",
            Known::Forwarded => "forwarded",
            Known::Host => "host",
            Known::KeepAlive => "keep-alive",
            Known::McpProtocolVersion => "mcp-protocol-version",
            Known::McpSessionId => "mcp-session-id",
            Known::Origin => "origin",
            Known::ProxyAuthorization => "proxy-authorization",
            Known::ProxyConnection => "proxy-connection",
            Known::RetryAfter => "retry-after",
            Known::Server => "server",
            Known::Te => "te",
            Known::Trailer => "trailer",
            Known::TransferEncoding => "transfer-encoding",
            Known::Upgrade => "upgrade",
            Known::UserAgent => "user-agent",
            Known::Via => "via",
            Known::WwwAuthenticate => "www-authenticate",
            Known::XForwardedHost => "x-forwarded-host",
            Known::XForwardedProto => "x-forwarded-proto",
        }
    }

    /// The known name `lower` (a name in lower case) is, if any.
    pub(crate) fn of(lower: &[u8]) -> Option<Known> {
        Some(match lower {
            b"accept" => Known::Accept,
            b"accept-encoding" => Known::AcceptEncoding,
            b"authorization" => Known::Authorization,
            b"cache-control" => Known::CacheControl,
            b"connection" => Known::Connection,
            b"content-encoding" => Known::ContentEncoding,
            b"content-length" => Known::ContentLength,
            b"content-type" => Known::ContentType,
            b"date" => Known::Date,
            b"expect" => Known::Expect,
            b"forwarded" => Known::Forwarded,
            b"host" => Known::Host,
            b"keep-alive" => Known::KeepAlive,
            b"mcp-protocol-version" => Known::McpProtocolVersion,
            b"mcp-session-id" => Known::McpSessionId,
            b"origin" => Known::Origin,
            b"proxy-authorization" => Known::ProxyAuthorization,
            b"proxy-connection" => Known::ProxyConnection,
            b"retry-after" => Known::RetryAfter,
            b"server" => Known::Server,
            b"te" => Known::Te,
            b"trailer" => Known::Trailer,
            b"transfer-encoding" => Known::TransferEncoding,
            b"upgrade" => Known::Upgrade,
            b"user-agent" => Known::UserAgent,
            b"via" => Known::Via,
            b"www-authenticate" => Known::WwwAuthenticate,
            b"x-forwarded-host" => Known::XForwardedHost,
            b"x-forwarded-proto" => Known::XForwardedProto,
            _ => return None,
        })
    }

    /// The hop-by-hop names (RFC 9110 §7.6.1): they never cross the proxy, nor do the names
    /// `Connection` lists.
    pub(crate) const HOP_BY_HOP: [Known; 7] = [
        Known::Connection,
        Known::ProxyConnection,
        Known::KeepAlive,
        Known::Te,
        Known::Trailer,
        Known::TransferEncoding,
        Known::Upgrade,
    ];

    /// One of [`Known::HOP_BY_HOP`].
    pub(crate) fn is_hop_by_hop(self) -> bool {
        Known::HOP_BY_HOP.contains(&self)
    }
}

/// Fields a head's vector has room for beyond those read (see [`Located::of`]).
const ADDED_ROOM: usize = 4;

/// A field's name: known, or where it lies in the head (lower case).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Name {
    Known(Known),
    At(usize, usize),
}

/// A field's value: where it lies in the head, or bytes the proxy supplied.
#[derive(Debug, Clone)]
enum Text {
    At(usize, usize),
    Static(&'static [u8]),
    Shared(Bytes),
}

#[derive(Debug, Clone)]
struct Field {
    name: Name,
    value: Text,
    /// Where the whole line `name: value` lies in the head, when it was sent exactly so (one
    /// space after the colon) and is unedited: written by copying it (see
    /// [`Fields::write_to`]).
    line: Option<(usize, usize)>,
    /// Taken out ([`Fields::remove`]): kept in place so the others keep their order.
    removed: bool,
}

/// A value to put in a head ([`Fields::insert`], [`Fields::append`]).
#[derive(Debug, Clone)]
pub(crate) struct FieldValue(Text);

impl FieldValue {
    pub(crate) const fn from_static(value: &'static str) -> FieldValue {
        FieldValue(Text::Static(value.as_bytes()))
    }
}

impl From<Bytes> for FieldValue {
    fn from(b: Bytes) -> FieldValue {
        FieldValue(Text::Shared(b))
    }
}

/// Where the fields of a head lie in the buffer it was parsed from ([`Located::of`]), until the
/// head is cut off the buffer and they become [`Fields`].
pub(crate) struct Located(Vec<Field>);

impl Located {
    /// The places of `parsed` (read by `httparse` from `buf`) in `buf`.
    pub(crate) fn of(buf: &[u8], parsed: &[httparse::Header<'_>]) -> Located {
        let base = buf.as_ptr() as usize;
        let at = |s: &[u8]| {
            let start = s.as_ptr() as usize - base;
            (start, start + s.len())
        };
        // Room for the fields the proxy adds to a request (`X-Forwarded-*`, `Via`, framing)
        // without growing the vector.
        let mut fields = Vec::with_capacity(parsed.len() + ADDED_ROOM);
        fields.extend(parsed.iter().map(|f| {
            let (s, e) = at(f.name.as_bytes());
            let (vs, ve) = at(f.value);
            let exact = vs == e + 2 && &buf[e..vs] == b": ";
            Field {
                name: Name::At(s, e),
                value: Text::At(vs, ve),
                line: exact.then_some((s, ve)),
                removed: false,
            }
        }));
        Located(fields)
    }

    /// Lower-cases the names in `buf` (the buffer they were located in), as `http::HeaderName`
    /// did, so what the proxy forwards and records keeps the names it always had; and
    /// recognises the [`Known`] ones.
    pub(crate) fn lowercase_names(&mut self, buf: &mut [u8]) {
        for f in &mut self.0 {
            if let Name::At(s, e) = f.name {
                let name = &mut buf[s..e];
                name.make_ascii_lowercase();
                if let Some(k) = Known::of(name) {
                    f.name = Name::Known(k);
                }
            }
        }
    }
}

/// The header fields of one head: those received, in their order, then those the proxy added.
/// Names are lower case (see [`Located::lowercase_names`]) and compared exactly.
///
/// Why not `http::HeaderMap`: building one hashed and copied every name and checked every
/// value again after `httparse` had, for both heads of an exchange, which cost about a tenth
/// of the proxy's instructions per exchange; a head has a handful of fields, which a scan finds
/// as fast, and the names the proxy looks for are recognised once ([`Known`]). Unlike a
/// `HeaderMap`, a value appended under a name already present comes last rather than beside
/// the others of its name (the order of different names carries no meaning, RFC 9110 §5.3).
#[derive(Debug, Clone)]
pub(crate) struct Fields {
    head: Bytes,
    fields: Vec<Field>,
    /// `Content-Length` read once ([`content_length`]) and again only when a `Content-Length`
    /// field is edited: each head's framing is decided where it is read and again where it is
    /// written, which scanned and parsed the fields four times an exchange.
    length: Result<Option<u64>, InvalidLength>,
}

impl Default for Fields {
    fn default() -> Fields {
        Fields {
            head: Bytes::new(),
            fields: Vec::new(),
            length: Ok(None),
        }
    }
}

impl Fields {
    /// The fields of `head`, located in it before it was cut off its buffer.
    pub(crate) fn new(head: Bytes, at: Located) -> Fields {
        let mut f = Fields {
            head,
            fields: at.0,
            length: Ok(None),
        };
        f.length = read_content_length(&f);
        f
    }

    /// After an edit of `name`: `Content-Length` read again when it was the one edited.
    fn edited(&mut self, name: Known) {
        if name == Known::ContentLength {
            self.length = read_content_length(self);
        }
    }

    /// An upper bound of the bytes the fields take written (for a buffer's size): the head
    /// they were read in and what was added since.
    pub(crate) fn written_len_hint(&self) -> usize {
        let added: usize = self
            .fields
            .iter()
            .filter(|f| f.line.is_none())
            .map(|f| self.name(f.name).len() + self.value(&f.value).len() + 4)
            .sum();
        self.head.len() + added
    }

    fn name(&self, n: Name) -> &str {
        match n {
            Name::Known(k) => k.as_str(),
            // httparse let only token characters (ASCII) through in a name.
            Name::At(s, e) => std::str::from_utf8(&self.head[s..e]).unwrap_or_default(),
        }
    }

    fn value<'a>(&'a self, t: &'a Text) -> &'a [u8] {
        match t {
            Text::At(s, e) => &self.head[*s..*e],
            Text::Static(b) => b,
            Text::Shared(b) => b,
        }
    }

    fn live(&self) -> impl Iterator<Item = &Field> {
        self.fields.iter().filter(|f| !f.removed)
    }

    /// Every field (name, value) in order.
    pub(crate) fn iter(&self) -> impl Iterator<Item = (&str, &[u8])> {
        self.live()
            .map(|f| (self.name(f.name), self.value(&f.value)))
    }

    /// Every value of `name`, in order.
    pub(crate) fn get_all(&self, name: Known) -> impl Iterator<Item = &[u8]> {
        self.live()
            .filter(move |f| f.name == Name::Known(name))
            .map(|f| self.value(&f.value))
    }

    /// The first value of `name`.
    pub(crate) fn get(&self, name: Known) -> Option<&[u8]> {
        self.get_all(name).next()
    }

    /// The first value of `name` as text, `None` too when it has other than visible ASCII,
    /// spaces and tabs (what `http::HeaderValue::to_str` let through).
    ///
    /// Checked as ASCII only: no value holds a control character other than a tab (httparse
    /// refuses them in a head, and the proxy's own values are text), so ASCII is visible ASCII
    /// here, and the check runs a word at a time.
    pub(crate) fn get_str(&self, name: Known) -> Option<&str> {
        let v = self.get(name)?;
        debug_assert!(!v.iter().any(|&b| (b < 0x20 && b != b'\t') || b == 0x7f));
        mcp_triage_core::scan::ascii(v)
    }

    /// The first value of `name`, to put in another field.
    pub(crate) fn value_of(&self, name: Known) -> Option<FieldValue> {
        let f = self.live().find(|f| f.name == Name::Known(name))?;
        Some(FieldValue(f.value.clone()))
    }

    /// Takes out every field named `name`.
    pub(crate) fn remove(&mut self, name: Known) {
        for f in self.fields.iter_mut() {
            if f.name == Name::Known(name) {
                f.removed = true;
            }
        }
        self.edited(name);
    }

    /// Takes out every field named `lower` (a name in lower case, known or not).
    pub(crate) fn remove_named(&mut self, lower: &[u8]) {
        if let Some(k) = Known::of(lower) {
            return self.remove(k);
        }
        for i in 0..self.fields.len() {
            if let Name::At(s, e) = self.fields[i].name {
                if &self.head[s..e] == lower {
                    self.fields[i].removed = true;
                }
            }
        }
    }

    /// Sets `name` to `value`: in the place of its first field when it has one (the others
    /// go), else last.
    pub(crate) fn insert(&mut self, name: Known, value: FieldValue) {
        let first = self
            .fields
            .iter()
            .position(|f| !f.removed && f.name == Name::Known(name));
        let Some(first) = first else {
            return self.append(name, value);
        };
        self.remove(name);
        let f = &mut self.fields[first];
        f.value = value.0;
        f.line = None;
        f.removed = false;
        self.edited(name);
    }

    /// Adds a field last.
    pub(crate) fn append(&mut self, name: Known, value: FieldValue) {
        self.fields.push(Field {
            name: Name::Known(name),
            value: value.0,
            line: None,
            removed: false,
        });
        self.edited(name);
    }

    /// Writes every field as a `name: value` line (CRLF-ended) to `out`. Runs of unedited lines
    /// that were sent exactly so, one after another, are copied from the head in one piece: the
    /// same bytes as writing each line's four parts, in a fraction of the copies.
    pub(crate) fn write_to(&self, out: &mut BytesMut) {
        // (start, end) of the run of lines in the head, its last CRLF not included.
        let mut run: Option<(usize, usize)> = None;
        for f in self.live() {
            match (f.line, run) {
                (Some((s, e)), Some((rs, re))) if &self.head[re..s] == b"\r\n" => {
                    run = Some((rs, e));
                }
                (Some(line), _) => {
                    self.write_run(run, out);
                    run = Some(line);
                }
                (None, _) => {
                    self.write_run(run.take(), out);
                    put_field(out, self.name(f.name), self.value(&f.value));
                }
            }
        }
        self.write_run(run, out);
    }

    fn write_run(&self, run: Option<(usize, usize)>, out: &mut BytesMut) {
        if let Some((s, e)) = run {
            out.extend_from_slice(&self.head[s..e]);
            out.extend_from_slice(b"\r\n");
        }
    }

    /// Whether a hop-by-hop field is among them (see [`Known::is_hop_by_hop`]).
    pub(crate) fn has_hop_by_hop(&self) -> bool {
        self.live()
            .any(|f| matches!(f.name, Name::Known(k) if k.is_hop_by_hop()))
    }
}

/// Writes one `name: value` line, CRLF-ended.
pub(crate) fn put_field(out: &mut BytesMut, name: &str, value: &[u8]) {
    for part in [name.as_bytes(), b": ", value, b"\r\n"] {
        out.extend_from_slice(part);
    }
}

/// `Content-Length` that is not one number (RFC 9110 §8.6: every value, and every member of a
/// list, must be the same decimal number).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct InvalidLength;

/// The message's `Content-Length`, `None` without one (read when the fields were made or last
/// edited).
pub(crate) fn content_length(fields: &Fields) -> Result<Option<u64>, InvalidLength> {
    fields.length
}

/// [`content_length`] read from the fields.
fn read_content_length(fields: &Fields) -> Result<Option<u64>, InvalidLength> {
    let mut length = None;
    for v in fields.get_all(Known::ContentLength) {
        for part in v.split(|&b| b == b',') {
            let digits = part.trim_ascii();
            if digits.is_empty() || !digits.iter().all(u8::is_ascii_digit) {
                return Err(InvalidLength);
            }
            let n = digits
                .iter()
                .try_fold(0u64, |n, &d| {
                    n.checked_mul(10)?.checked_add(u64::from(d - b'0'))
                })
                .ok_or(InvalidLength)?;
            if length.is_some_and(|l| l != n) {
                return Err(InvalidLength);
            }
            length = Some(n);
        }
    }
    Ok(length)
}

/// Whether `v`, a comma-separated list, has `token` (compared without case).
pub(crate) fn lists(v: &[u8], token: &[u8]) -> bool {
    v.split(|&b| b == b',')
        .any(|t| t.trim_ascii().eq_ignore_ascii_case(token))
}

/// Whether a `Connection` field lists `token` (`close`, `keep-alive`).
pub(crate) fn connection_lists(fields: &Fields, token: &[u8]) -> bool {
    fields.get_all(Known::Connection).any(|v| lists(v, token))
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// The fields of a head written as `name: value` lines, read as the proxy reads one.
    pub(crate) fn fields(lines: &[(&str, &str)]) -> Fields {
        let text: String = lines.iter().map(|(n, v)| format!("{n}: {v}\r\n")).collect();
        let mut buf = bytes::BytesMut::from(format!("{text}\r\n").as_bytes());
        let mut parsed = [httparse::EMPTY_HEADER; 16];
        let mut at = match httparse::parse_headers(&buf, &mut parsed).unwrap() {
            httparse::Status::Complete((_, parsed)) => Located::of(&buf, parsed),
            httparse::Status::Partial => panic!("a whole head"),
        };
        at.lowercase_names(&mut buf);
        Fields::new(buf.freeze(), at)
    }

    fn names(f: &Fields) -> Vec<String> {
        f.iter()
            .map(|(n, v)| format!("{n}={}", String::from_utf8_lossy(v)))
            .collect()
    }

    #[test]
    fn lengths_must_agree_and_be_digits() {
        assert_eq!(content_length(&fields(&[])), Ok(None));
        assert_eq!(
            content_length(&fields(&[("content-length", " 12 ")])),
            Ok(Some(12))
        );
        assert_eq!(
            content_length(&fields(&[
                ("Content-Length", "3, 3"),
                ("content-length", "3")
            ])),
            Ok(Some(3))
        );
        for bad in ["1, 2", "-1", "+1", "", "0x10", "99999999999999999999999"] {
            assert_eq!(
                content_length(&fields(&[("content-length", bad)])),
                Err(InvalidLength),
                "{bad:?}"
            );
        }
    }

    #[test]
    fn the_length_follows_edits_of_its_field() {
        let mut f = fields(&[("content-length", "12"), ("x", "1")]);
        assert_eq!(content_length(&f), Ok(Some(12)));
        f.remove(Known::Via);
        assert_eq!(content_length(&f), Ok(Some(12)));
        f.remove(Known::ContentLength);
        assert_eq!(content_length(&f), Ok(None));
        f.append(Known::ContentLength, FieldValue::from_static("7"));
        assert_eq!(content_length(&f), Ok(Some(7)));
        f.insert(Known::ContentLength, FieldValue::from_static("9"));
        assert_eq!(content_length(&f), Ok(Some(9)));
        f.append(Known::ContentLength, FieldValue::from_static("8"));
        assert_eq!(content_length(&f), Err(InvalidLength));
        f.remove_named(b"content-length");
        assert_eq!(content_length(&f), Ok(None));
        assert_eq!(content_length(&Fields::default()), Ok(None));
    }

    #[test]
    fn connection_tokens_are_found() {
        let h = fields(&[("connection", "keep-alive"), ("Connection", "x, Close")]);
        assert!(connection_lists(&h, b"close") && connection_lists(&h, b"keep-alive"));
        assert!(!connection_lists(&h, b"upgrade"));
    }

    #[test]
    fn names_are_read_in_lower_case_and_values_as_sent() {
        let f = fields(&[("X-A", "1"), ("Host", "Two"), ("x-a", "3"), ("HOST", "4")]);
        assert_eq!(names(&f), ["x-a=1", "host=Two", "x-a=3", "host=4"]);
        assert_eq!(f.get(Known::Host), Some(&b"Two"[..]));
        assert_eq!(
            f.get_all(Known::Host).collect::<Vec<_>>(),
            [&b"Two"[..], b"4"]
        );
        assert_eq!(f.get_str(Known::Host), Some("Two"));
        assert_eq!(f.get(Known::Via), None);
        let odd = fields(&[("via", "caf\u{e9}")]);
        assert_eq!(odd.get_str(Known::Via), None, "not visible ASCII");
        assert_eq!(odd.get(Known::Via), Some("caf\u{e9}".as_bytes()));
    }

    /// A head's fields as [`Fields::write_to`] writes them.
    fn written(f: &Fields) -> String {
        let mut out = BytesMut::new();
        f.write_to(&mut out);
        String::from_utf8(out.to_vec()).unwrap()
    }

    #[test]
    fn fields_are_written_as_their_parts_whether_copied_or_not() {
        let mut buf = BytesMut::from(
            &b"Host: a\r\nX-Tight:1\r\nx-b: two  \r\nAccept: */*\r\nx-c: 3\nx-d:\r\nx-e: 5\r\n\r\n"
                [..],
        );
        let mut parsed = [httparse::EMPTY_HEADER; 16];
        let mut at = match httparse::parse_headers(&buf, &mut parsed).unwrap() {
            httparse::Status::Complete((_, parsed)) => Located::of(&buf, parsed),
            httparse::Status::Partial => panic!("a whole head"),
        };
        at.lowercase_names(&mut buf);
        let mut f = Fields::new(buf.freeze(), at);
        let by_parts = |f: &Fields| {
            let mut out = BytesMut::new();
            for (n, v) in f.iter() {
                put_field(&mut out, n, v);
            }
            String::from_utf8(out.to_vec()).unwrap()
        };
        assert_eq!(
            written(&f),
            "host: a\r\nx-tight: 1\r\nx-b: two\r\naccept: */*\r\nx-c: 3\r\nx-d: \r\nx-e: 5\r\n"
        );
        assert_eq!(written(&f), by_parts(&f));
        f.insert(Known::Host, FieldValue::from_static("b"));
        f.remove(Known::Accept);
        f.append(Known::Via, FieldValue::from_static("1.1 p"));
        assert_eq!(
            written(&f),
            "host: b\r\nx-tight: 1\r\nx-b: two\r\nx-c: 3\r\nx-d: \r\nx-e: 5\r\nvia: 1.1 p\r\n"
        );
        assert_eq!(written(&f), by_parts(&f));
    }

    #[test]
    fn every_known_name_is_recognised_by_its_own_spelling() {
        let all = [
            Known::Accept,
            Known::AcceptEncoding,
            Known::Authorization,
            Known::CacheControl,
            Known::Connection,
            Known::ContentEncoding,
            Known::ContentLength,
            Known::ContentType,
            Known::Date,
            Known::Expect,
            Known::Forwarded,
            Known::Host,
            Known::KeepAlive,
            Known::McpProtocolVersion,
            Known::McpSessionId,
            Known::Origin,
            Known::ProxyAuthorization,
            Known::ProxyConnection,
            Known::RetryAfter,
            Known::Server,
            Known::Te,
            Known::Trailer,
            Known::TransferEncoding,
            Known::Upgrade,
            Known::UserAgent,
            Known::Via,
            Known::WwwAuthenticate,
            Known::XForwardedHost,
            Known::XForwardedProto,
        ];
        for k in all {
            assert_eq!(Known::of(k.as_str().as_bytes()), Some(k), "{k:?}");
        }
        assert_eq!(Known::of(b"x-unknown"), None);
        assert_eq!(Known::of(b"Host"), None, "only lower case is looked up");
    }

    #[test]
    fn edits_keep_the_order_a_header_map_had() {
        let mut f = fields(&[
            ("host", "a"),
            ("x-forwarded-host", "1"),
            ("x-private", "p"),
            ("x-forwarded-host", "2"),
            ("via", "v"),
        ]);
        f.insert(Known::XForwardedHost, FieldValue::from_static("new"));
        f.insert(Known::Host, FieldValue::from(Bytes::from_static(b"b")));
        f.insert(Known::Server, FieldValue::from_static("s"));
        f.append(Known::Via, FieldValue::from_static("1.1 p"));
        assert_eq!(
            names(&f),
            [
                "host=b",
                "x-forwarded-host=new",
                "x-private=p",
                "via=v",
                "server=s",
                "via=1.1 p"
            ]
        );
        let host = f.value_of(Known::Host).unwrap();
        f.insert(Known::XForwardedProto, host);
        f.remove(Known::Via);
        f.remove_named(b"x-private");
        f.remove_named(b"server");
        assert_eq!(
            names(&f),
            ["host=b", "x-forwarded-host=new", "x-forwarded-proto=b"]
        );
        assert!(!f.has_hop_by_hop());
        f.append(Known::Te, FieldValue::from_static("trailers"));
        assert!(f.has_hop_by_hop());
    }
}
