//! Finding a body's end in the bytes of a connection ([`BodyDecoder`]), for both directions:
//! the client's request body and the upstream's response body.

use bytes::{Bytes, BytesMut};

use super::chunked::{ChunkedDecoder, ChunkedError, Decoded};

/// How a body's end is found, and how far it is.
#[derive(Debug)]
pub(crate) enum BodyDecoder {
    /// This many bytes left.
    Length(u64),
    Chunked(ChunkedDecoder),
    /// Until the connection ends (responses only).
    UntilClose,
}

/// What one step of decoding found.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Step {
    /// Body bytes, split off the buffer.
    Data(Bytes),
    /// The buffer holds no more of the body: read more.
    NeedMore,
    /// The body is over.
    End,
}

impl BodyDecoder {
    /// True once the body's end was seen (never for [`BodyDecoder::UntilClose`]).
    pub(crate) fn at_end(&self) -> bool {
        match self {
            BodyDecoder::Length(left) => *left == 0,
            BodyDecoder::Chunked(d) => d.is_done(),
            BodyDecoder::UntilClose => false,
        }
    }

    /// The body's bytes still to come, when known.
    pub(crate) fn remaining(&self) -> Option<u64> {
        match self {
            BodyDecoder::Length(left) => Some(*left),
            _ => None,
        }
    }

    /// Takes the next body bytes (or framing) off the front of `buf`.
    pub(crate) fn step(&mut self, buf: &mut BytesMut) -> Result<Step, ChunkedError> {
        Ok(match self {
            BodyDecoder::Length(0) => Step::End,
            BodyDecoder::Length(_) | BodyDecoder::UntilClose if buf.is_empty() => Step::NeedMore,
            BodyDecoder::Length(left) => {
                let n = (*left).min(buf.len() as u64);
                *left -= n;
                Step::Data(buf.split_to(n as usize).freeze())
            }
            BodyDecoder::UntilClose => Step::Data(buf.split().freeze()),
            BodyDecoder::Chunked(d) => match d.decode(buf)? {
                Decoded::Data(b) => Step::Data(b),
                Decoded::NeedMore => Step::NeedMore,
                Decoded::End => Step::End,
            },
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_length_takes_its_bytes_and_leaves_the_rest() {
        let mut d = BodyDecoder::Length(5);
        let mut buf = BytesMut::from(&b"abc"[..]);
        assert_eq!(d.step(&mut buf), Ok(Step::Data(Bytes::from_static(b"abc"))));
        assert_eq!(d.step(&mut buf), Ok(Step::NeedMore));
        assert_eq!(d.remaining(), Some(2));
        buf.extend_from_slice(b"deGET");
        assert_eq!(d.step(&mut buf), Ok(Step::Data(Bytes::from_static(b"de"))));
        assert!(d.at_end());
        assert_eq!(d.step(&mut buf), Ok(Step::End));
        assert_eq!(&buf[..], b"GET");
    }

    #[test]
    fn until_close_takes_everything_and_never_ends() {
        let mut d = BodyDecoder::UntilClose;
        let mut buf = BytesMut::from(&b"xyz"[..]);
        assert_eq!(d.step(&mut buf), Ok(Step::Data(Bytes::from_static(b"xyz"))));
        assert_eq!(d.step(&mut buf), Ok(Step::NeedMore));
        assert!(!d.at_end());
    }
}
