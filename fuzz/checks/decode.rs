//! The invariants of the core's content decoder (`mcp_triage_core::http::decode`): the
//! incremental wrapper around flate2, brotli-decompressor and libzstd is ours, so it is held to
//! the reference codecs. Shared by the fuzz target `decode` and the corpus test of
//! `mcp-triage-core` (`tests/fuzz_corpus.rs`), which includes this file by path.
//!
//! Input: 1 byte of knobs (bits 0-2: the coding list; bit 7: round trip), 1 byte (the piece
//! size - 1), then the body.
//! - round trip (bit 7 set): the body is plain text, encoded here with the reference encoders
//!   (flate2, brotli, zstd) in the list's order; decoded in pieces it must give the body back.
//! - coded (bit 7 clear): the body is taken as the coded stream, whatever it holds. No panic;
//!   decoding it whole and in pieces gives the same result (the same bytes when both end well,
//!   one output a prefix of the other when it breaks); never more decoded bytes than the limit;
//!   and where the single coding's reference decoder also reads it whole, the same bytes.

use std::io::{Read, Write};
use std::ops::ControlFlow;

use mcp_triage_core::http::decode::{ContentDecoder, DecodeError, DecodeLimits};

/// The coding lists the knobs choose from (each as sent in `Content-Encoding`).
const LISTS: [&str; 8] = [
    "gzip",
    "deflate",
    "br",
    "zstd",
    "x-gzip",
    "gzip, br",
    "zstd, deflate",
    "br, zstd, gzip",
];

/// The decoded-bytes limit of the check: large enough for every round trip (bodies ≤ 64 KiB),
/// small enough that a bomb in the coded mode ends at it quickly.
const MAX_DECODED: u64 = 1 << 20;

/// The longest plain body a round trip encodes.
const MAX_PLAIN: usize = 64 << 10;

/// Panics when the decoder breaks one of the invariants above on `data`.
pub fn check(data: &[u8]) {
    let [knobs, piece, body @ ..] = data else {
        return;
    };
    let list = LISTS[usize::from(knobs & 0x07)];
    let piece = usize::from(*piece) + 1;
    if knobs & 0x80 != 0 {
        round_trip(list, piece, &body[..body.len().min(MAX_PLAIN)]);
    } else {
        coded(list, piece, body);
    }
}

fn decoder(list: &str) -> ContentDecoder {
    let limits = DecodeLimits {
        max_decoded_bytes: MAX_DECODED,
        max_ratio: 0,
    };
    ContentDecoder::for_codings([list], limits)
        .expect("every list of the check is known")
        .expect("every list of the check codes something")
}

/// `body` fed in pieces of `piece` bytes (all at once for `usize::MAX`), then finished: the
/// decoded bytes and how it ended.
fn decode(list: &str, body: &[u8], piece: usize) -> (Vec<u8>, Result<(), DecodeError>) {
    let mut d = decoder(list);
    let mut out = Vec::new();
    for part in body.chunks(piece.max(1)) {
        let fed = d.feed(part, &mut |p: &[u8]| {
            out.extend_from_slice(p);
            Ok(ControlFlow::Continue(()))
        });
        match fed {
            Ok(_) => {}
            Err(e) => return (out, Err(e)),
        }
    }
    let end = d.finish();
    assert_eq!(
        d.decoded_bytes(),
        out.len() as u64,
        "decoded_bytes counts what the sink got"
    );
    (out, end)
}

fn round_trip(list: &str, piece: usize, plain: &[u8]) {
    let mut coded = plain.to_vec();
    for coding in list.split(',').map(str::trim) {
        coded = encode(coding, &coded);
    }
    let (out, end) = decode(list, &coded, piece);
    assert!(
        end.is_ok(),
        "{list}: a reference-encoded body fails: {end:?}"
    );
    assert!(
        out == plain,
        "{list}: a reference-encoded body decodes to other bytes"
    );
}

fn coded(list: &str, piece: usize, body: &[u8]) {
    let (whole, whole_end) = decode(list, body, usize::MAX);
    let (parts, parts_end) = decode(list, body, piece);
    assert!(whole.len() as u64 <= MAX_DECODED && parts.len() as u64 <= MAX_DECODED);
    match (&whole_end, &parts_end) {
        (Ok(()), Ok(())) => assert!(whole == parts, "{list}: whole and in pieces differ"),
        (Ok(()), Err(e)) | (Err(e), Ok(())) => {
            panic!("{list}: one way ends well, the other with {e} (pieces of {piece})")
        }
        (Err(_), Err(_)) => {
            let (short, long) = if whole.len() <= parts.len() {
                (&whole, &parts)
            } else {
                (&parts, &whole)
            };
            assert!(
                long.starts_with(short),
                "{list}: broken streams decode to different bytes"
            );
        }
    }
    if whole_end.is_ok() && !list.contains(',') {
        if let Some(reference) = reference_decode(list, body) {
            assert!(
                reference == whole,
                "{list}: the reference decoder reads other bytes"
            );
        }
    }
}

fn encode(coding: &str, data: &[u8]) -> Vec<u8> {
    match coding {
        "gzip" | "x-gzip" => {
            let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
            e.write_all(data).unwrap();
            e.finish().unwrap()
        }
        "deflate" => {
            let mut e = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::fast());
            e.write_all(data).unwrap();
            e.finish().unwrap()
        }
        "br" => {
            let mut out = Vec::new();
            {
                let mut w = brotli::CompressorWriter::new(&mut out, 4096, 4, 20);
                w.write_all(data).unwrap();
            }
            out
        }
        "zstd" => zstd::encode_all(data, 1).unwrap(),
        other => unreachable!("no list of the check names {other}"),
    }
}

/// The reference decoder's reading of a whole single-coded body, when it reads it to its end
/// without error (None otherwise: the core may be stricter or, for `deflate`, also read raw
/// deflate, which the reference zlib reader does not).
fn reference_decode(coding: &str, body: &[u8]) -> Option<Vec<u8>> {
    let mut out = Vec::new();
    let limit = MAX_DECODED + 1;
    let read = match coding {
        "gzip" | "x-gzip" => flate2::read::MultiGzDecoder::new(body)
            .take(limit)
            .read_to_end(&mut out),
        "deflate" => flate2::read::ZlibDecoder::new(body)
            .take(limit)
            .read_to_end(&mut out),
        "br" => brotli::Decompressor::new(body, 4096)
            .take(limit)
            .read_to_end(&mut out),
        "zstd" => return zstd::stream::decode_all(body).ok(),
        _ => return None,
    };
    read.ok()
        .filter(|_| out.len() as u64 <= MAX_DECODED)
        .map(|_| out)
}
