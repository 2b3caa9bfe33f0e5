//! The chunked transfer coding (RFC 9112 §7.1) of the upstream's responses: [`ChunkedDecoder`]
//! takes the framing off as bytes arrive and hands the data on without copying it; and
//! [`encode_chunk`], the framing of a request body the client sent without a length.

use bytes::{Buf, Bytes, BytesMut};

/// The most bytes of chunk extensions on one size line, and of trailer fields in all, that are
/// skipped before the body counts as malformed: neither reaches the client (the data does), so
/// without a bound an upstream could keep the proxy reading forever inside one size line.
pub(crate) const MAX_SKIPPED_BYTES: u64 = 16 * 1024;

/// Why a chunked body could not be read.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub(crate) enum ChunkedError {
    #[error("a chunk size is not hexadecimal")]
    SizeNotHex,
    #[error("a chunk size does not fit in 64 bits")]
    SizeOverflow,
    #[error("a line of the chunked framing does not end in CRLF")]
    MissingCrlf,
    #[error("more than {MAX_SKIPPED_BYTES} bytes of chunk extensions or trailer fields")]
    TooMuchSkipped,
}

/// What [`ChunkedDecoder::decode`] found in the buffer.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Decoded {
    /// Chunk data, split off the buffer (no copy).
    Data(Bytes),
    /// The buffer ended inside the framing: read more.
    NeedMore,
    /// The last chunk and the trailer section were read: the body is over.
    End,
}

/// Where the decoding of one chunked body stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    /// In a chunk-size line: the size so far, whether a digit came, whether in extensions.
    Size {
        size: u64,
        digits: bool,
        extension: bool,
    },
    /// The size line's CR came; its LF is next.
    SizeLf {
        size: u64,
    },
    /// Chunk data, this many bytes left.
    Data(u64),
    /// The CR, then the LF, after chunk data.
    DataCr,
    DataLf,
    /// After the last chunk, at the start of a trailer line (an empty one ends the body).
    TrailerStart,
    /// The CR of the empty line that ends the trailer section came; its LF is next.
    TrailerEndLf,
    /// In a trailer line.
    TrailerLine,
    /// A trailer line's CR came; its LF is next.
    TrailerLineLf,
    Done,
}

/// Decodes one chunked body. Trailer fields are read and dropped: the proxy hands the client
/// the body's data only (hyper, which forwarded before, passed none on either: it sends
/// trailers only to a client that asked for them with `TE: trailers`, a hop-by-hop header the
/// proxy does not forward).
#[derive(Debug)]
pub(crate) struct ChunkedDecoder {
    state: State,
    /// Bytes of extensions and trailers skipped so far (see [`MAX_SKIPPED_BYTES`]).
    skipped: u64,
}

impl Default for ChunkedDecoder {
    fn default() -> Self {
        ChunkedDecoder {
            state: State::Size {
                size: 0,
                digits: false,
                extension: false,
            },
            skipped: 0,
        }
    }
}

impl ChunkedDecoder {
    /// True once the body's end was read.
    pub(crate) fn is_done(&self) -> bool {
        self.state == State::Done
    }

    /// Takes framing bytes off the front of `buf` until chunk data (split off and returned),
    /// the body's end, or the end of `buf`.
    pub(crate) fn decode(&mut self, buf: &mut BytesMut) -> Result<Decoded, ChunkedError> {
        loop {
            match self.state {
                State::Done => return Ok(Decoded::End),
                State::Data(left) => {
                    if buf.is_empty() {
                        return Ok(Decoded::NeedMore);
                    }
                    let n = left.min(buf.len() as u64);
                    self.state = if n == left {
                        State::DataCr
                    } else {
                        State::Data(left - n)
                    };
                    return Ok(Decoded::Data(buf.split_to(n as usize).freeze()));
                }
                _ => {
                    if !self.framing(buf)? {
                        return Ok(Decoded::NeedMore);
                    }
                }
            }
        }
    }

    /// Reads framing bytes off the front of `buf` until chunk data or the end is next (true),
    /// or `buf` ends (false). The bytes are stepped through in place and taken off at once:
    /// one `advance` per byte was most of what a small chunked response's framing cost.
    fn framing(&mut self, buf: &mut BytesMut) -> Result<bool, ChunkedError> {
        let mut used = 0;
        let reached = loop {
            let Some(&b) = buf.get(used) else {
                break Ok(false);
            };
            used += 1;
            match self.step(b) {
                Ok(state) => {
                    self.state = state;
                    if matches!(state, State::Data(_) | State::Done) {
                        break Ok(true);
                    }
                }
                Err(e) => break Err(e),
            }
        };
        // a malformed byte is taken off too, as before
        buf.advance(used);
        reached
    }

    /// The state after framing byte `b`.
    fn step(&mut self, b: u8) -> Result<State, ChunkedError> {
        Ok(match self.state {
            State::Size {
                size,
                digits,
                extension,
            } => match b {
                b'\r' if digits => State::SizeLf { size },
                // Lines of the framing end in CRLF (RFC 9112 §7.1), as hyper reads them: a
                // bare LF read as a line's end would frame the body differently from a
                // front end that does not.
                b'\n' => return Err(ChunkedError::MissingCrlf),
                _ if extension => {
                    self.skip()?;
                    self.state
                }
                b';' | b' ' | b'\t' if digits => State::Size {
                    size,
                    digits,
                    extension: true,
                },
                _ => {
                    let d = (b as char).to_digit(16).ok_or(ChunkedError::SizeNotHex)?;
                    let size = size
                        .checked_mul(16)
                        .and_then(|s| s.checked_add(u64::from(d)))
                        .ok_or(ChunkedError::SizeOverflow)?;
                    State::Size {
                        size,
                        digits: true,
                        extension,
                    }
                }
            },
            State::SizeLf { size } if b == b'\n' => after_size(size),
            State::DataCr if b == b'\r' => State::DataLf,
            State::DataLf if b == b'\n' => State::Size {
                size: 0,
                digits: false,
                extension: false,
            },
            State::TrailerStart if b == b'\r' => State::TrailerEndLf,
            State::TrailerEndLf if b == b'\n' => State::Done,
            State::TrailerLine if b == b'\r' => State::TrailerLineLf,
            State::TrailerLineLf if b == b'\n' => State::TrailerStart,
            State::TrailerStart | State::TrailerLine if b != b'\n' => {
                self.skip()?;
                State::TrailerLine
            }
            State::SizeLf { .. }
            | State::DataCr
            | State::DataLf
            | State::TrailerStart
            | State::TrailerLine
            | State::TrailerEndLf
            | State::TrailerLineLf => return Err(ChunkedError::MissingCrlf),
            State::Data(_) | State::Done => unreachable!("decode handles data and the end"),
        })
    }

    fn skip(&mut self) -> Result<(), ChunkedError> {
        self.skipped += 1;
        if self.skipped > MAX_SKIPPED_BYTES {
            return Err(ChunkedError::TooMuchSkipped);
        }
        Ok(())
    }
}

fn after_size(size: u64) -> State {
    if size == 0 {
        State::TrailerStart
    } else {
        State::Data(size)
    }
}

/// Appends `data` to `out` as one chunk (nothing for empty data: an empty chunk would end the
/// body).
pub(crate) fn encode_chunk(out: &mut BytesMut, data: &[u8]) {
    if data.is_empty() {
        return;
    }
    let mut digits = [0u8; 16];
    let mut n = data.len();
    let mut i = digits.len();
    while n > 0 || i == digits.len() {
        i -= 1;
        digits[i] = b"0123456789abcdef"[n & 0xf];
        n >>= 4;
    }
    out.extend_from_slice(&digits[i..]);
    out.extend_from_slice(b"\r\n");
    out.extend_from_slice(data);
    out.extend_from_slice(b"\r\n");
}

/// The last chunk and an empty trailer section: the end of a chunked body.
pub(crate) const LAST_CHUNK: &[u8] = b"0\r\n\r\n";

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// Decodes `wire` fed in pieces of `step` bytes: the data, and the bytes left after the end.
    fn decode_all(wire: &[u8], step: usize) -> Result<(Vec<u8>, Vec<u8>), ChunkedError> {
        let mut d = ChunkedDecoder::default();
        let mut buf = BytesMut::new();
        let mut data = Vec::new();
        let mut fed = 0;
        loop {
            match d.decode(&mut buf)? {
                Decoded::Data(b) => data.extend_from_slice(&b),
                Decoded::End => {
                    let mut rest = buf.to_vec();
                    rest.extend_from_slice(&wire[fed..]);
                    return Ok((data, rest));
                }
                Decoded::NeedMore if fed < wire.len() => {
                    let end = (fed + step).min(wire.len());
                    buf.extend_from_slice(&wire[fed..end]);
                    fed = end;
                }
                Decoded::NeedMore => return Ok((data, Vec::new())),
            }
        }
    }

    #[test]
    fn data_extensions_and_trailers() {
        let wire = b"5;ext=1\r\nhello\r\nA\r\n0123456789\r\n0\r\nx-t: 1\r\n\r\nNEXT";
        for step in [1, 3, wire.len()] {
            let (data, rest) = decode_all(wire, step).unwrap();
            assert_eq!(data, b"hello0123456789", "step {step}");
            assert_eq!(rest, b"NEXT", "step {step}");
        }
    }

    #[test]
    fn malformed_framing_is_named() {
        assert_eq!(decode_all(b"zz\r\n", 4), Err(ChunkedError::SizeNotHex));
        assert_eq!(
            decode_all(b"1\r\nab\r\n", 7),
            Err(ChunkedError::MissingCrlf)
        );
        assert_eq!(
            decode_all(b"11111111111111111\r\n", 19),
            Err(ChunkedError::SizeOverflow)
        );
        let mut long = b"1;".to_vec();
        long.extend(std::iter::repeat_n(b'x', MAX_SKIPPED_BYTES as usize + 1));
        assert_eq!(decode_all(&long, 64), Err(ChunkedError::TooMuchSkipped));
    }

    #[test]
    fn every_framing_line_must_end_in_crlf() {
        for wire in [
            &b"5\nhello\r\n0\r\n\r\n"[..],
            b"5\r\nhello\n0\r\n\r\n",
            b"5;a=b\nhello\r\n0\r\n\r\n",
            b"0\n\r\n",
            b"0\r\n\n",
            b"0\r\nx-t: 1\n\r\n",
            b"0\r\n\rX",
            b"5\r\nhelloX\r\n",
        ] {
            for step in [1, wire.len()] {
                assert_eq!(
                    decode_all(wire, step),
                    Err(ChunkedError::MissingCrlf),
                    "{:?} in steps of {step}",
                    String::from_utf8_lossy(wire)
                );
            }
        }
    }

    #[test]
    fn size_tricks_are_refused() {
        assert_eq!(decode_all(b"0x5\r\n", 8), Err(ChunkedError::SizeNotHex));
        assert_eq!(decode_all(b"+5\r\n", 8), Err(ChunkedError::SizeNotHex));
        assert_eq!(decode_all(b"-5\r\n", 8), Err(ChunkedError::SizeNotHex));
        assert_eq!(decode_all(b"\r\n", 8), Err(ChunkedError::SizeNotHex));
        assert_eq!(
            decode_all(b"ffffffffffffffffff\r\n", 32),
            Err(ChunkedError::SizeOverflow)
        );
        let (data, rest) = decode_all(b"0005\r\nhello\r\n0\r\n\r\n", 3).unwrap();
        assert_eq!((data, rest), (b"hello".to_vec(), Vec::new()));
    }

    #[test]
    fn an_unfinished_body_is_not_done() {
        let mut d = ChunkedDecoder::default();
        let mut buf = BytesMut::from(&b"3\r\nab"[..]);
        assert_eq!(
            d.decode(&mut buf),
            Ok(Decoded::Data(Bytes::from_static(b"ab")))
        );
        assert_eq!(d.decode(&mut buf), Ok(Decoded::NeedMore));
        assert!(!d.is_done());
    }

    proptest! {
        /// Any data, cut into any chunks and fed in any piece size, comes out whole and only
        /// the bytes after the body are left.
        #[test]
        fn encoded_chunks_decode_to_the_data(
            chunks in proptest::collection::vec(proptest::collection::vec(any::<u8>(), 0..300), 0..8),
            step in 1usize..64,
        ) {
            let mut wire = BytesMut::new();
            for c in &chunks {
                encode_chunk(&mut wire, c);
            }
            wire.extend_from_slice(LAST_CHUNK);
            wire.extend_from_slice(b"GET");
            let (data, rest) = decode_all(&wire, step).unwrap();
            prop_assert_eq!(data, chunks.concat());
            prop_assert_eq!(rest, b"GET".to_vec());
        }
    }
}
