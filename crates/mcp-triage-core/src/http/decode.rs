//! Content codings (RFC 9110 §8.4): `gzip` (and `x-gzip`), `deflate`, `br` and `zstd`, and lists
//! of them, undone incrementally so the classifier reads the body the server meant.
//!
//! Why in the core: a server behind compressing middleware, a CDN or nginx's `gzip on` answers
//! compressed whenever the client asks for it (most HTTP clients do by default), and every
//! embedding of the core (the proxy, the nginx modules, the C ABI, the Python and Node
//! packages, the ClickHouse functions) sees the bytes as sent. Decoding once here, from the
//! `Content-Encoding` the classifier is given, makes every one of them read the same body.
//!
//! Why push-style with a sink: the classifier is fed chunks as they arrive and must never hold
//! more than its own buffers do. [`ContentDecoder::feed`] takes the next encoded chunk and hands
//! the decoded bytes to a sink in pieces of at most [`PIECE`] bytes each; the sink may stop the
//! decoding (the verdict is known), and a chunk that decodes to gigabytes (a decompression
//! bomb) is cut by the limits ([`DecodeLimits`]) while it is being decoded, not after. Each
//! coding keeps only its own window: 32 KiB for gzip and deflate, at most 16 MiB for `br`
//! (RFC 7932's largest window; the large-window extension is refused), at most 8 MiB for `zstd`
//! (RFC 9659's limit for HTTP).
//!
//! Why these crates: flate2 over miniz_oxide and brotli-decompressor are pure Rust, so the C
//! ABI, the Python and Node packages and the ClickHouse functions build without another C
//! library; `zstd` is libzstd (compiled by the crate, no system library), because the pure-Rust
//! `ruzstd` keeps the last window of output (up to 8 MiB) until its frame ends, so the events of
//! a compressed SSE stream would reach the classifier only when the stream closes.

use std::fmt;
use std::ops::ControlFlow;

use brotli_decompressor::{BrotliDecompressStream, BrotliResult, BrotliState, StandardAlloc};
use flate2::{Crc, Decompress, FlushDecompress, Status};
use zstd::stream::raw::{DParameter, Decoder as ZstdDecoder, InBuffer, Operation, OutBuffer};

/// The most decoded bytes handed to the sink at once.
pub const PIECE: usize = 32 << 10;

/// The decoded/encoded ratio is checked only past this many decoded bytes: a small body may
/// shrink a thousandfold (a few hundred spaces, a repeated short text) without being a bomb.
pub const RATIO_CHECKED_AFTER: u64 = 1 << 20;

/// zstd's largest window for HTTP: RFC 9659 §3 limits the `zstd` content coding to 8 MiB
/// (a window log of 23), so a frame asking for more is refused before anything is allocated.
const ZSTD_WINDOW_LOG_MAX: u32 = 23;

/// The longest gzip member header accepted (its optional name, comment and extra field are
/// read past, never kept for long, but they must end somewhere).
const GZIP_MAX_HEADER: usize = 64 << 10;

/// One content coding the core decodes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Coding {
    /// `gzip` or `x-gzip` (RFC 1952; several members in a row are read as one stream).
    Gzip,
    /// `deflate`: zlib (RFC 1950) as RFC 9110 defines it, or raw deflate (RFC 1951) as
    /// browsers also accept it.
    Deflate,
    /// `br`: Brotli (RFC 7932).
    Br,
    /// `zstd`: Zstandard (RFC 8878, RFC 9659), one or more frames.
    Zstd,
}

impl Coding {
    /// The coding a `Content-Encoding` token names (case-insensitive), if the core decodes it.
    pub fn of(token: &str) -> Option<Coding> {
        let is = |name: &str| token.eq_ignore_ascii_case(name);
        if is("gzip") || is("x-gzip") {
            Some(Coding::Gzip)
        } else if is("deflate") {
            Some(Coding::Deflate)
        } else if is("br") {
            Some(Coding::Br)
        } else if is("zstd") {
            Some(Coding::Zstd)
        } else {
            None
        }
    }

    /// Its name in `Content-Encoding`.
    pub fn name(self) -> &'static str {
        match self {
            Coding::Gzip => "gzip",
            Coding::Deflate => "deflate",
            Coding::Br => "br",
            Coding::Zstd => "zstd",
        }
    }
}

impl fmt::Display for Coding {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// The names of the codings the core decodes, for sentences.
pub const DECODED_CODINGS: &str = "gzip, x-gzip, deflate, br, zstd and identity";

/// Why a body's content coding could not be undone.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DecodeError {
    /// A coding the core does not decode (`compress`, a typo), as sent.
    Unknown(String),
    /// The coded stream is not valid: the sentence says where it broke.
    Corrupt {
        /// The coding whose stream broke.
        coding: Coding,
        /// What was wrong, in the decoder's words.
        why: String,
    },
    /// The body ended before the coded stream did.
    Truncated(Coding),
    /// Decoding would pass a limit (`maxDecodedBytes`, `maxDecodedRatio`).
    Limit {
        /// The limit's name, as in [`crate::Limits`].
        name: &'static str,
        /// Its value.
        max: u64,
    },
}

impl fmt::Display for DecodeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DecodeError::Unknown(c) => write!(
                f,
                "Content-Encoding {:?} is not a coding the classifier decodes (it decodes {DECODED_CODINGS})",
                crate::verdict::sanitize_line(c, 40)
            ),
            DecodeError::Corrupt { coding, why } => write!(f, "{coding} stream is corrupt: {why}"),
            DecodeError::Truncated(coding) => write!(
                f,
                "{coding} stream is truncated: the body ended before the {coding} stream did"
            ),
            DecodeError::Limit { name, max } => write!(f, "{name} = {max} was exceeded"),
        }
    }
}

impl std::error::Error for DecodeError {}

fn corrupt(coding: Coding, why: impl Into<String>) -> DecodeError {
    DecodeError::Corrupt {
        coding,
        why: why.into(),
    }
}

/// The limits on decoding one body.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DecodeLimits {
    /// Most decoded bytes (`maxDecodedBytes`); `u64::MAX`: no limit of its own.
    pub max_decoded_bytes: u64,
    /// Largest decoded/encoded ratio once more than [`RATIO_CHECKED_AFTER`] bytes are decoded
    /// (`maxDecodedRatio`); 0: not checked.
    pub max_ratio: u64,
}

impl DecodeLimits {
    /// No limit: the caller bounds the output itself.
    pub const NONE: DecodeLimits = DecodeLimits {
        max_decoded_bytes: u64::MAX,
        max_ratio: 0,
    };
}

/// Where decoded pieces go; `Break` stops the decoding (the caller needs no more).
pub type Sink<'s> = dyn FnMut(&[u8]) -> Result<ControlFlow<()>, DecodeError> + 's;

/// The decoder of one body's content codings: push encoded chunks in with
/// [`feed`](ContentDecoder::feed), take decoded pieces from the sink, and call
/// [`finish`](ContentDecoder::finish) at the end of the body to learn whether every coded
/// stream ended where it should.
pub struct ContentDecoder {
    /// In decoding order: the coding applied last comes first.
    layers: Vec<Layer>,
    /// The `Content-Encoding` list as applied, for sentences (`"gzip, br"`).
    names: String,
    limits: DecodeLimits,
    encoded: u64,
    decoded: u64,
}

impl fmt::Debug for ContentDecoder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ContentDecoder")
            .field("codings", &self.names)
            .field("encoded", &self.encoded)
            .field("decoded", &self.decoded)
            .finish()
    }
}

impl ContentDecoder {
    /// The decoder for these `Content-Encoding` values (every header line, in order; each a
    /// comma-separated list of codings in the order they were applied). `Ok(None)`: nothing to
    /// undo (no coding, or only `identity`). An unknown coding is an error naming it.
    pub fn for_codings<'a>(
        values: impl IntoIterator<Item = &'a str>,
        limits: DecodeLimits,
    ) -> Result<Option<ContentDecoder>, DecodeError> {
        let mut applied = Vec::new();
        for token in values.into_iter().flat_map(|v| v.split(',')) {
            let token = token.trim();
            if token.is_empty() || token.eq_ignore_ascii_case("identity") {
                continue;
            }
            match Coding::of(token) {
                Some(c) => applied.push(c),
                None => return Err(DecodeError::Unknown(token.to_string())),
            }
        }
        if applied.is_empty() {
            return Ok(None);
        }
        let names = applied
            .iter()
            .map(|c| c.name())
            .collect::<Vec<_>>()
            .join(", ");
        let layers = applied.iter().rev().map(|&c| Layer::new(c)).collect();
        Ok(Some(ContentDecoder {
            layers,
            names,
            limits,
            encoded: 0,
            decoded: 0,
        }))
    }

    /// The codings as applied, comma-separated (`"gzip, br"`).
    pub fn codings(&self) -> &str {
        &self.names
    }

    /// Encoded bytes fed so far.
    pub fn encoded_bytes(&self) -> u64 {
        self.encoded
    }

    /// Decoded bytes handed to the sink so far.
    pub fn decoded_bytes(&self) -> u64 {
        self.decoded
    }

    /// Decodes the next encoded chunk, handing the decoded bytes to `sink` piece by piece
    /// (at most [`PIECE`] bytes each). Returns `Break` when the sink stopped it.
    pub fn feed(
        &mut self,
        chunk: &[u8],
        sink: &mut Sink<'_>,
    ) -> Result<ControlFlow<()>, DecodeError> {
        self.encoded += chunk.len() as u64;
        let (limits, encoded, decoded) = (self.limits, self.encoded, &mut self.decoded);
        let mut counted = |piece: &[u8]| {
            *decoded += piece.len() as u64;
            check_limits(limits, encoded, *decoded)?;
            sink(piece)
        };
        push_through(&mut self.layers, chunk, &mut counted)
    }

    /// The body ended: `Ok` when every coded stream ended with it (a body of no bytes at all
    /// is an empty body, whatever its `Content-Encoding`), else the coding whose stream was cut.
    pub fn finish(&mut self) -> Result<(), DecodeError> {
        if self.encoded == 0 {
            return Ok(());
        }
        // Each layer handed everything it decoded to the next as it went; only whether each
        // stream reached its end is left to check, the outermost coding first.
        match self.layers.iter().find(|l| !l.ended()) {
            Some(l) => Err(DecodeError::Truncated(l.coding())),
            None => Ok(()),
        }
    }

    /// Decodes a whole body held in memory into one buffer (for a caller that needs the
    /// bytes, not a verdict: the proxy's batch responses); the limits bound the buffer.
    pub fn decode_all(&mut self, body: &[u8]) -> Result<Vec<u8>, DecodeError> {
        let mut out = Vec::new();
        // the sink never stops it: only an error ends it early
        let _ = self.feed(body, &mut |piece| {
            out.extend_from_slice(piece);
            Ok(ControlFlow::Continue(()))
        })?;
        self.finish()?;
        Ok(out)
    }
}

fn check_limits(limits: DecodeLimits, encoded: u64, decoded: u64) -> Result<(), DecodeError> {
    if decoded > limits.max_decoded_bytes {
        return Err(DecodeError::Limit {
            name: "maxDecodedBytes",
            max: limits.max_decoded_bytes,
        });
    }
    if limits.max_ratio > 0
        && decoded > RATIO_CHECKED_AFTER
        && decoded > encoded.saturating_mul(limits.max_ratio)
    {
        return Err(DecodeError::Limit {
            name: "maxDecodedRatio",
            max: limits.max_ratio,
        });
    }
    Ok(())
}

/// Decodes `input` through `layers` (outermost first) into `sink`. Each layer's pieces go to
/// the next layer as they are made, so nothing is held between layers but one piece each.
fn push_through(
    layers: &mut [Layer],
    input: &[u8],
    sink: &mut Sink<'_>,
) -> Result<ControlFlow<()>, DecodeError> {
    match layers.split_first_mut() {
        None => sink(input),
        Some((first, rest)) => first.decode(input, &mut |piece| push_through(rest, piece, sink)),
    }
}

/// One coding's decoder and its output buffer.
enum Layer {
    Gzip(Box<Gzip>),
    Deflate(Box<Deflate>),
    Br(Box<Brotli>),
    Zstd(Box<Zstd>),
}

impl Layer {
    fn new(coding: Coding) -> Layer {
        match coding {
            Coding::Gzip => Layer::Gzip(Box::new(Gzip::new())),
            Coding::Deflate => Layer::Deflate(Box::new(Deflate::new())),
            Coding::Br => Layer::Br(Box::new(Brotli::new())),
            Coding::Zstd => Layer::Zstd(Box::new(Zstd::new())),
        }
    }

    fn coding(&self) -> Coding {
        match self {
            Layer::Gzip(_) => Coding::Gzip,
            Layer::Deflate(_) => Coding::Deflate,
            Layer::Br(_) => Coding::Br,
            Layer::Zstd(_) => Coding::Zstd,
        }
    }

    fn decode(
        &mut self,
        input: &[u8],
        emit: &mut Sink<'_>,
    ) -> Result<ControlFlow<()>, DecodeError> {
        match self {
            Layer::Gzip(g) => g.decode(input, emit),
            Layer::Deflate(d) => d.decode(input, emit),
            Layer::Br(b) => b.decode(input, emit),
            Layer::Zstd(z) => z.decode(input, emit),
        }
    }

    /// Whether the stream reached its end marker (and, for gzip, its trailer).
    fn ended(&self) -> bool {
        match self {
            Layer::Gzip(g) => matches!(g.part, GzPart::Ended),
            Layer::Deflate(d) => d.ended,
            Layer::Br(b) => b.ended,
            Layer::Zstd(z) => z.frame_ended,
        }
    }
}

/// What one run of inflate did.
struct Inflated {
    /// Input bytes consumed.
    used: usize,
    /// The deflate stream's last block was read.
    ended: bool,
    flow: ControlFlow<()>,
}

/// Inflates `input` as far as it goes, emitting every piece (and adding it to `crc`).
fn inflate(
    z: &mut Decompress,
    out: &mut [u8],
    input: &[u8],
    coding: Coding,
    mut crc: Option<&mut Crc>,
    emit: &mut Sink<'_>,
) -> Result<Inflated, DecodeError> {
    let mut used = 0;
    loop {
        let (in0, out0) = (z.total_in(), z.total_out());
        let status = z
            .decompress(&input[used..], out, FlushDecompress::None)
            .map_err(|e| corrupt(coding, deflate_error(&e)))?;
        let took = (z.total_in() - in0) as usize;
        let made = (z.total_out() - out0) as usize;
        used += took;
        if made > 0 {
            if let Some(crc) = crc.as_deref_mut() {
                crc.update(&out[..made]);
            }
            if emit(&out[..made])?.is_break() {
                return Ok(Inflated {
                    used,
                    ended: false,
                    flow: ControlFlow::Break(()),
                });
            }
        }
        let ended = status == Status::StreamEnd;
        if ended || (took == 0 && made == 0) {
            return Ok(Inflated {
                used,
                ended,
                flow: ControlFlow::Continue(()),
            });
        }
    }
}

/// flate2's error in words: miniz_oxide's message when it gives one.
fn deflate_error(e: &flate2::DecompressError) -> String {
    if e.needs_dictionary().is_some() {
        return "it asks for a preset dictionary, which HTTP never supplies".to_string();
    }
    let text = e.to_string();
    let text = text
        .strip_prefix("deflate decompression error: ")
        .unwrap_or(&text);
    if text.is_empty() || text == "deflate decompression error" {
        "invalid deflate data".to_string()
    } else {
        text.to_string()
    }
}

/// Where a gzip stream is.
enum GzPart {
    /// A member's header, its bytes so far.
    Header(Vec<u8>),
    /// A member's deflate data.
    Body,
    /// A member's 8-byte trailer (CRC-32 and size), its bytes so far.
    Trailer(Vec<u8>),
    /// A member ended; another may follow.
    Ended,
}

struct Gzip {
    part: GzPart,
    z: Decompress,
    crc: Crc,
    out: Vec<u8>,
}

impl Gzip {
    fn new() -> Gzip {
        Gzip {
            part: GzPart::Header(Vec::new()),
            z: Decompress::new(false),
            crc: Crc::new(),
            out: vec![0; PIECE],
        }
    }

    fn decode(
        &mut self,
        mut input: &[u8],
        emit: &mut Sink<'_>,
    ) -> Result<ControlFlow<()>, DecodeError> {
        while !input.is_empty() {
            match &mut self.part {
                GzPart::Ended => {
                    // RFC 1952 §2.2: a gzip file is a series of members.
                    self.part = GzPart::Header(Vec::new());
                    self.z.reset(false);
                    self.crc.reset();
                }
                GzPart::Header(buf) => {
                    let take = gzip_header_take(buf, input)?;
                    buf.extend_from_slice(&input[..take]);
                    input = &input[take..];
                    if let Need::Done = gzip_header_need(buf)? {
                        self.part = GzPart::Body;
                    } else if buf.len() > GZIP_MAX_HEADER {
                        return Err(corrupt(Coding::Gzip, "its header is longer than 64 KiB"));
                    }
                }
                GzPart::Body => {
                    let r = inflate(
                        &mut self.z,
                        &mut self.out,
                        input,
                        Coding::Gzip,
                        Some(&mut self.crc),
                        emit,
                    )?;
                    input = &input[r.used..];
                    if r.flow.is_break() {
                        return Ok(r.flow);
                    }
                    if r.ended {
                        self.part = GzPart::Trailer(Vec::with_capacity(8));
                    } else if !input.is_empty() {
                        return Err(corrupt(Coding::Gzip, "the deflate data stopped advancing"));
                    }
                }
                GzPart::Trailer(buf) => {
                    let take = (8 - buf.len()).min(input.len());
                    buf.extend_from_slice(&input[..take]);
                    input = &input[take..];
                    if buf.len() == 8 {
                        let crc = u32::from_le_bytes([buf[0], buf[1], buf[2], buf[3]]);
                        let size = u32::from_le_bytes([buf[4], buf[5], buf[6], buf[7]]);
                        if crc != self.crc.sum() {
                            return Err(corrupt(
                                Coding::Gzip,
                                "its CRC-32 does not match the decoded data",
                            ));
                        }
                        if size != self.crc.amount() {
                            return Err(corrupt(
                                Coding::Gzip,
                                "its trailer's size does not match the decoded data",
                            ));
                        }
                        self.part = GzPart::Ended;
                    }
                }
            }
        }
        Ok(ControlFlow::Continue(()))
    }
}

/// How much more of a gzip header is needed.
enum Need {
    /// Exactly this many more bytes at least.
    Bytes(usize),
    /// Everything up to and including the next zero byte (a name or comment).
    ThroughZero,
    /// The header is complete.
    Done,
}

const FHCRC: u8 = 0x02;
const FEXTRA: u8 = 0x04;
const FNAME: u8 = 0x08;
const FCOMMENT: u8 = 0x10;

/// What the gzip header in `buf` still needs (RFC 1952 §2.3), or why it is no gzip header.
fn gzip_header_need(buf: &[u8]) -> Result<Need, DecodeError> {
    let prefix = [0x1f, 0x8b, 0x08];
    let n = buf.len().min(3);
    if buf[..n] != prefix[..n] {
        return Err(corrupt(
            Coding::Gzip,
            if n >= 3 && buf[..2] == prefix[..2] {
                "its compression method is not deflate"
            } else {
                "it does not start with the gzip magic bytes 1f 8b"
            },
        ));
    }
    if buf.len() < 10 {
        return Ok(Need::Bytes(10 - buf.len()));
    }
    let flags = buf[3];
    if flags & 0xe0 != 0 {
        return Err(corrupt(Coding::Gzip, "its header sets reserved flags"));
    }
    let mut pos = 10;
    if flags & FEXTRA != 0 {
        if buf.len() < pos + 2 {
            return Ok(Need::Bytes(pos + 2 - buf.len()));
        }
        pos += 2 + u16::from_le_bytes([buf[pos], buf[pos + 1]]) as usize;
        if buf.len() < pos {
            return Ok(Need::Bytes(pos - buf.len()));
        }
    }
    for flag in [FNAME, FCOMMENT] {
        if flags & flag != 0 {
            match memchr::memchr(0, &buf[pos..]) {
                Some(i) => pos += i + 1,
                None => return Ok(Need::ThroughZero),
            }
        }
    }
    if flags & FHCRC != 0 {
        pos += 2;
        if buf.len() < pos {
            return Ok(Need::Bytes(pos - buf.len()));
        }
    }
    Ok(Need::Done)
}

/// How many bytes of `input` the header in `buf` takes next (never past the header's end).
fn gzip_header_take(buf: &[u8], input: &[u8]) -> Result<usize, DecodeError> {
    Ok(match gzip_header_need(buf)? {
        Need::Bytes(n) => n.min(input.len()),
        Need::ThroughZero => memchr::memchr(0, input).map_or(input.len(), |i| i + 1),
        Need::Done => 0,
    })
}

struct Deflate {
    /// The first bytes, until there are two to tell zlib from raw deflate.
    head: Vec<u8>,
    z: Option<Decompress>,
    out: Vec<u8>,
    ended: bool,
}

impl Deflate {
    fn new() -> Deflate {
        Deflate {
            head: Vec::new(),
            z: None,
            out: vec![0; PIECE],
            ended: false,
        }
    }

    fn decode(
        &mut self,
        mut input: &[u8],
        emit: &mut Sink<'_>,
    ) -> Result<ControlFlow<()>, DecodeError> {
        if self.z.is_none() {
            // RFC 9110's deflate is zlib; some servers send raw deflate, which browsers also
            // accept: a zlib header is CM 8, CINFO at most 7 and a multiple of 31.
            let take = (2 - self.head.len()).min(input.len());
            self.head.extend_from_slice(&input[..take]);
            input = &input[take..];
            if self.head.len() < 2 {
                return Ok(ControlFlow::Continue(()));
            }
            let (cmf, flg) = (self.head[0], self.head[1]);
            let zlib = cmf & 0x0f == 8
                && cmf >> 4 <= 7
                && (u16::from(cmf) << 8 | u16::from(flg)) % 31 == 0;
            self.z = Some(Decompress::new(zlib));
            let head = std::mem::take(&mut self.head);
            if self.inflate_more(&head, emit)?.is_break() {
                return Ok(ControlFlow::Break(()));
            }
        }
        if input.is_empty() {
            return Ok(ControlFlow::Continue(()));
        }
        if self.ended {
            return Err(corrupt(
                Coding::Deflate,
                "there are bytes after the end of the deflate stream",
            ));
        }
        self.inflate_more(input, emit)
    }

    fn inflate_more(
        &mut self,
        input: &[u8],
        emit: &mut Sink<'_>,
    ) -> Result<ControlFlow<()>, DecodeError> {
        let z = self.z.as_mut().expect("set before inflating");
        let r = inflate(z, &mut self.out, input, Coding::Deflate, None, emit)?;
        if r.flow.is_break() {
            return Ok(r.flow);
        }
        self.ended = r.ended;
        if r.used < input.len() {
            return Err(corrupt(
                Coding::Deflate,
                if r.ended {
                    "there are bytes after the end of the deflate stream"
                } else {
                    "the deflate data stopped advancing"
                },
            ));
        }
        Ok(ControlFlow::Continue(()))
    }
}

struct Brotli {
    state: Box<BrotliState<StandardAlloc, StandardAlloc, StandardAlloc>>,
    out: Vec<u8>,
    ended: bool,
}

impl Brotli {
    fn new() -> Brotli {
        let mut state = Box::new(BrotliState::new(
            StandardAlloc::default(),
            StandardAlloc::default(),
            StandardAlloc::default(),
        ));
        // RFC 7932's windows only (at most 16 MiB); the large-window extension, which
        // brotli-decompressor accepts by default, could ask for 1 GiB and is no HTTP coding.
        state.large_window = false;
        Brotli {
            state,
            out: vec![0; PIECE],
            ended: false,
        }
    }

    fn decode(
        &mut self,
        input: &[u8],
        emit: &mut Sink<'_>,
    ) -> Result<ControlFlow<()>, DecodeError> {
        if self.ended {
            return Err(corrupt(
                Coding::Br,
                "there are bytes after the end of the br stream",
            ));
        }
        let (mut in_left, mut in_at) = (input.len(), 0usize);
        let mut total = 0usize;
        loop {
            let (mut out_left, mut out_at) = (self.out.len(), 0usize);
            let result = BrotliDecompressStream(
                &mut in_left,
                &mut in_at,
                input,
                &mut out_left,
                &mut out_at,
                &mut self.out,
                &mut total,
                &mut self.state,
            );
            if out_at > 0 && emit(&self.out[..out_at])?.is_break() {
                return Ok(ControlFlow::Break(()));
            }
            match result {
                BrotliResult::NeedsMoreOutput => {}
                BrotliResult::NeedsMoreInput => return Ok(ControlFlow::Continue(())),
                BrotliResult::ResultSuccess => {
                    self.ended = true;
                    if in_left > 0 {
                        return Err(corrupt(
                            Coding::Br,
                            "there are bytes after the end of the br stream",
                        ));
                    }
                    return Ok(ControlFlow::Continue(()));
                }
                BrotliResult::ResultFailure => {
                    return Err(corrupt(Coding::Br, brotli_error(&self.state)));
                }
            }
        }
    }
}

/// brotli-decompressor's error code in words (`BROTLI_DECODER_ERROR_FORMAT_PADDING_1` →
/// `format error (padding 1)`).
fn brotli_error(state: &BrotliState<StandardAlloc, StandardAlloc, StandardAlloc>) -> String {
    let code = format!("{:?}", state.error_code);
    let code = code.strip_prefix("BROTLI_DECODER_ERROR_").unwrap_or(&code);
    match code.split_once('_') {
        Some((kind, what)) => format!(
            "{} error ({})",
            kind.to_ascii_lowercase(),
            what.to_ascii_lowercase().replace('_', " ")
        ),
        None => code.to_ascii_lowercase().replace('_', " "),
    }
}

struct Zstd {
    /// `None` when libzstd could not make a context (out of memory).
    z: Option<ZstdDecoder<'static>>,
    out: Vec<u8>,
    /// The last frame ended (libzstd's hint was 0) and nothing of another one came yet.
    frame_ended: bool,
}

impl Zstd {
    fn new() -> Zstd {
        let z = ZstdDecoder::new().ok().and_then(|mut d| {
            d.set_parameter(DParameter::WindowLogMax(ZSTD_WINDOW_LOG_MAX))
                .ok()?;
            Some(d)
        });
        Zstd {
            z,
            out: vec![0; PIECE],
            frame_ended: false,
        }
    }

    fn decode(
        &mut self,
        input: &[u8],
        emit: &mut Sink<'_>,
    ) -> Result<ControlFlow<()>, DecodeError> {
        let Some(z) = self.z.as_mut() else {
            return Err(corrupt(
                Coding::Zstd,
                "libzstd could not allocate a decoder",
            ));
        };
        let mut inb = InBuffer::around(input);
        loop {
            let before = inb.pos();
            let mut outb = OutBuffer::around(&mut self.out[..]);
            let hint = z
                .run(&mut inb, &mut outb)
                .map_err(|e| corrupt(Coding::Zstd, zstd_error(&e)))?;
            let made = outb.pos();
            // libzstd's hint is 0 once a frame is decoded and flushed; a call that moved
            // nothing (after a frame's end) says nothing about the frame.
            if made > 0 || inb.pos() > before {
                self.frame_ended = hint == 0;
            }
            if made > 0 && emit(&self.out[..made])?.is_break() {
                return Ok(ControlFlow::Break(()));
            }
            if inb.pos() == input.len() && made < PIECE {
                return Ok(ControlFlow::Continue(()));
            }
        }
    }
}

fn zstd_error(e: &std::io::Error) -> String {
    let text = e.to_string();
    if text.contains("too much memory") || text.contains("Window") {
        format!("{text} (a window over 8 MiB, more than RFC 9659 allows the zstd coding)")
    } else {
        text
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    fn gzip(data: &[u8]) -> Vec<u8> {
        let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
        e.write_all(data).unwrap();
        e.finish().unwrap()
    }

    fn zlib(data: &[u8]) -> Vec<u8> {
        let mut e = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::default());
        e.write_all(data).unwrap();
        e.finish().unwrap()
    }

    fn raw_deflate(data: &[u8]) -> Vec<u8> {
        let mut e = flate2::write::DeflateEncoder::new(Vec::new(), flate2::Compression::default());
        e.write_all(data).unwrap();
        e.finish().unwrap()
    }

    fn br(data: &[u8]) -> Vec<u8> {
        let mut out = Vec::new();
        {
            let mut w = brotli::CompressorWriter::new(&mut out, 4096, 5, 22);
            w.write_all(data).unwrap();
        }
        out
    }

    fn zstd(data: &[u8]) -> Vec<u8> {
        zstd::encode_all(data, 3).unwrap()
    }

    fn decoder(codings: &str) -> ContentDecoder {
        ContentDecoder::for_codings([codings], DecodeLimits::NONE)
            .unwrap()
            .unwrap()
    }

    /// Decodes `body` fed in `chunk`-byte pieces.
    fn decode_chunked(codings: &str, body: &[u8], chunk: usize) -> Result<Vec<u8>, DecodeError> {
        let mut d = decoder(codings);
        let mut out = Vec::new();
        for c in body.chunks(chunk.max(1)) {
            let _ = d.feed(c, &mut |p| {
                assert!(p.len() <= PIECE);
                out.extend_from_slice(p);
                Ok(ControlFlow::Continue(()))
            })?;
        }
        d.finish()?;
        Ok(out)
    }

    const TEXT: &[u8] = br#"{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"hello hello hello hello"}]}}"#;

    #[test]
    fn every_coding_decodes_whole_and_byte_by_byte() {
        let big: Vec<u8> = (0..200_000u32).flat_map(|i| i.to_le_bytes()).collect();
        for data in [TEXT, &big[..], b""] {
            for (name, coded) in [
                ("gzip", gzip(data)),
                ("x-gzip", gzip(data)),
                ("deflate", zlib(data)),
                ("deflate", raw_deflate(data)),
                ("br", br(data)),
                ("zstd", zstd(data)),
            ] {
                for chunk in [coded.len().max(1), 7, 1] {
                    if chunk == 1 && data.len() > 1000 {
                        continue;
                    }
                    let got = decode_chunked(name, &coded, chunk)
                        .unwrap_or_else(|e| panic!("{name} in {chunk}-byte chunks: {e}"));
                    assert!(got == data, "{name} in {chunk}-byte chunks");
                }
            }
        }
    }

    #[test]
    fn lists_are_undone_in_reverse_and_identity_is_skipped() {
        let coded = br(&gzip(TEXT));
        assert_eq!(decode_chunked("gzip, br", &coded, 5).unwrap(), TEXT);
        let d = ContentDecoder::for_codings(["identity, GZIP", "Br"], DecodeLimits::NONE)
            .unwrap()
            .unwrap();
        assert_eq!(d.codings(), "gzip, br");
        assert!(
            ContentDecoder::for_codings(["identity", ""], DecodeLimits::NONE)
                .unwrap()
                .is_none()
        );
        let err = ContentDecoder::for_codings(["gzip, compress"], DecodeLimits::NONE).unwrap_err();
        assert_eq!(err, DecodeError::Unknown("compress".into()));
        assert!(
            err.to_string().contains("\"compress\" is not a coding"),
            "{err}"
        );
    }

    #[test]
    fn several_gzip_members_and_zstd_frames_are_one_stream() {
        let mut two = gzip(b"first ");
        two.extend(gzip(b"second"));
        assert_eq!(decode_chunked("gzip", &two, 3).unwrap(), b"first second");
        let mut frames = zstd(b"first ");
        frames.extend(zstd(b"second"));
        assert_eq!(decode_chunked("zstd", &frames, 3).unwrap(), b"first second");
    }

    #[test]
    fn a_gzip_header_with_every_optional_field_is_read_past() {
        let mut e = flate2::GzBuilder::new()
            .filename("body.json")
            .comment("a comment")
            .extra(vec![1, 2, 3])
            .write(Vec::new(), flate2::Compression::default());
        e.write_all(TEXT).unwrap();
        let coded = e.finish().unwrap();
        assert_eq!(decode_chunked("gzip", &coded, 1).unwrap(), TEXT);
    }

    #[test]
    fn corrupt_and_truncated_streams_name_their_coding() {
        for (name, coded) in [
            ("gzip", gzip(TEXT)),
            ("deflate", zlib(TEXT)),
            ("br", br(TEXT)),
            ("zstd", zstd(TEXT)),
        ] {
            let cut = &coded[..coded.len() - 3];
            let e = decode_chunked(name, cut, 4).unwrap_err();
            assert!(
                matches!(e, DecodeError::Truncated(c) if c.name() == name)
                    || matches!(&e, DecodeError::Corrupt { coding, .. } if coding.name() == name),
                "{name}: {e}"
            );
            assert!(
                e.to_string().starts_with(&format!("{name} stream is ")),
                "{e}"
            );

            let mut garbage = coded.clone();
            garbage.extend_from_slice(b"trailing garbage");
            let e = decode_chunked(name, &garbage, 4).unwrap_err();
            assert!(
                e.to_string()
                    .starts_with(&format!("{name} stream is corrupt: ")),
                "{e}"
            );
        }
        let e = decode_chunked("gzip", b"{\"jsonrpc\":\"2.0\"}", 4).unwrap_err();
        assert_eq!(
            e.to_string(),
            "gzip stream is corrupt: it does not start with the gzip magic bytes 1f 8b"
        );
        let mut bad_crc = gzip(TEXT);
        let at = bad_crc.len() - 8;
        bad_crc[at] ^= 1;
        let e = decode_chunked("gzip", &bad_crc, 16).unwrap_err();
        assert!(e.to_string().contains("CRC-32"), "{e}");
        let e = decode_chunked("br", b"\xff\xff\xff\xff not brotli", 3).unwrap_err();
        assert!(e.to_string().starts_with("br stream is corrupt: "), "{e}");
        let e = decode_chunked("zstd", b"not a zstd frame at all", 3).unwrap_err();
        assert!(e.to_string().starts_with("zstd stream is corrupt: "), "{e}");
    }

    #[test]
    fn an_empty_body_is_empty_whatever_its_coding() {
        let mut d = decoder("gzip");
        assert_eq!(d.finish(), Ok(()));
    }

    #[test]
    fn a_zstd_window_over_8_mib_is_refused() {
        let data = vec![7u8; 64];
        let mut enc = zstd::stream::raw::Encoder::new(3).unwrap();
        enc.set_parameter(zstd::stream::raw::CParameter::WindowLog(27))
            .unwrap();
        let mut w = zstd::stream::zio::Writer::new(Vec::new(), enc);
        w.write_all(&data).unwrap();
        w.finish().unwrap();
        let coded = w.into_inner().0;
        let e = decode_chunked("zstd", &coded, 1000).unwrap_err();
        assert!(e.to_string().contains("RFC 9659"), "{e}");
    }

    #[test]
    fn the_limits_stop_a_bomb_while_it_is_decoded() {
        let zeros = vec![0u8; 8 << 20];
        let coded = gzip(&zeros);
        let mut d = ContentDecoder::for_codings(
            ["gzip"],
            DecodeLimits {
                max_decoded_bytes: u64::MAX,
                max_ratio: 100,
            },
        )
        .unwrap()
        .unwrap();
        let mut seen = 0u64;
        let e = d
            .feed(&coded, &mut |p| {
                seen += p.len() as u64;
                Ok(ControlFlow::Continue(()))
            })
            .unwrap_err();
        assert_eq!(
            e,
            DecodeError::Limit {
                name: "maxDecodedRatio",
                max: 100
            }
        );
        assert!(seen <= RATIO_CHECKED_AFTER + PIECE as u64, "{seen}");

        let mut d = ContentDecoder::for_codings(
            ["gzip"],
            DecodeLimits {
                max_decoded_bytes: 100_000,
                max_ratio: 0,
            },
        )
        .unwrap()
        .unwrap();
        let e = d.decode_all(&coded).unwrap_err();
        assert_eq!(
            e,
            DecodeError::Limit {
                name: "maxDecodedBytes",
                max: 100_000
            }
        );
    }

    /// What decoding `body` in pieces of these sizes gives: the bytes, or the error's text.
    fn outcome(codings: &str, body: &[u8], cuts: &[usize]) -> Result<Vec<u8>, String> {
        let mut d = decoder(codings);
        let mut out = Vec::new();
        let mut rest = body;
        let mut sink = |p: &[u8]| {
            out.extend_from_slice(p);
            Ok(ControlFlow::Continue(()))
        };
        for &n in cuts.iter().cycle().take(body.len() + 1) {
            if rest.is_empty() {
                break;
            }
            let (now, later) = rest.split_at(n.clamp(1, rest.len()));
            rest = later;
            if let Err(e) = d.feed(now, &mut sink) {
                return Err(e.to_string());
            }
        }
        d.finish().map_err(|e| e.to_string())?;
        Ok(out)
    }

    proptest::proptest! {
        /// Any bytes under any coding: never a panic, and the same bytes or the same error
        /// however the body is cut (a valid stream cut anywhere too).
        #[test]
        fn any_bytes_any_cuts_one_outcome(
            junk in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..300),
            cuts in proptest::collection::vec(1usize..40, 1..6),
            which in 0usize..4,
            valid in proptest::prelude::any::<bool>(),
        ) {
            let (name, coded) = match which {
                0 => ("gzip", gzip(&junk)),
                1 => ("deflate", zlib(&junk)),
                2 => ("br", br(&junk)),
                _ => ("zstd", zstd(&junk)),
            };
            let body = if valid { coded } else { junk.clone() };
            let whole = outcome(name, &body, &[body.len().max(1)]);
            proptest::prop_assert_eq!(&outcome(name, &body, &cuts), &whole);
            if valid {
                proptest::prop_assert_eq!(whole, Ok(junk));
            }
        }
    }

    #[test]
    fn the_sink_stops_the_decoding() {
        let coded = gzip(&vec![b'x'; 1 << 20]);
        let mut d = decoder("gzip");
        let mut pieces = 0;
        let flow = d
            .feed(&coded, &mut |_| {
                pieces += 1;
                Ok(if pieces == 2 {
                    ControlFlow::Break(())
                } else {
                    ControlFlow::Continue(())
                })
            })
            .unwrap();
        assert!(flow.is_break());
        assert_eq!(pieces, 2);
        assert_eq!(d.decoded_bytes(), 2 * PIECE as u64);
    }
}
