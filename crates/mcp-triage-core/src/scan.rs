//! Byte scanners shared by everything here that reads or writes JSON strings on a hot path: the
//! core's common-shape reader (`json/fast.rs`), its verdict writer, the C ABI's request
//! reader and record writer (`mcp-triage-ffi`), and the proxy's request reader; and
//! [`Scanner`], the token reader of JSON text of the common shape those readers stand on.
//!
//! Why one home: the token rule ("a JSON string runs to the first `"`, `\` or control
//! character") was written in three places, byte by byte, at about 10 instructions a byte; this
//! scans eight bytes per step (bench/nginx-module-overhead.sh, `ffi_bench gateway`).

mod scanner;
pub use scanner::Scanner;

const ONES: u64 = 0x0101_0101_0101_0101;
const HIGH: u64 = 0x8080_8080_8080_8080;

/// The high bit of each byte of `word` that is below `n` (n <= 0x80). A borrow can mark bytes
/// above a true match falsely, never one below it: the lowest mark is exact.
const fn below(word: u64, n: u8) -> u64 {
    word.wrapping_sub(ONES * n as u64) & !word & HIGH
}

/// The high bit of each byte of `word` equal to `b` (the lowest mark is exact, as above).
const fn equal(word: u64, b: u8) -> u64 {
    below(word ^ (ONES * b as u64), 1)
}

/// How many leading bytes of `bytes` a JSON string holds as they are: the index of the first
/// `"`, `\` or control character (U+0000-U+001F), or `bytes.len()` when there is none. Those
/// are exactly the bytes serde_json escapes when it writes, and the bytes that end or escape
/// a string when it reads.
#[inline]
pub fn plain_len(bytes: &[u8]) -> usize {
    #[cfg(target_arch = "x86_64")]
    {
        if bytes.len() >= 16 {
            return sse2::plain_len(bytes);
        }
    }
    plain_len_words(bytes)
}

/// [`plain_len`] eight bytes a step (any target; on x86_64 for text under 16 bytes).
fn plain_len_words(bytes: &[u8]) -> usize {
    let mut at = 0;
    let mut words = bytes.chunks_exact(8);
    for chunk in &mut words {
        let word = u64::from_le_bytes(chunk.try_into().expect("a chunk of 8 bytes"));
        let marks = equal(word, b'"') | equal(word, b'\\') | below(word, 0x20);
        if marks != 0 {
            return at + (marks.trailing_zeros() / 8) as usize;
        }
        at += 8;
    }
    let tail = words.remainder();
    if tail.is_empty() {
        return at;
    }
    if at >= 8 {
        // The last eight bytes as one word: the ones before the tail were checked above and
        // hold no mark, so the lowest mark is the tail's first (no byte loop for the rest).
        let start = bytes.len() - 8;
        let word = u64::from_le_bytes(bytes[start..].try_into().expect("eight bytes"));
        let marks = equal(word, b'"') | equal(word, b'\\') | below(word, 0x20);
        return if marks == 0 {
            bytes.len()
        } else {
            start + (marks.trailing_zeros() / 8) as usize
        };
    }
    at + tail
        .iter()
        .position(|&b| b == b'"' || b == b'\\' || b < 0x20)
        .unwrap_or(tail.len())
}

/// Sixteen bytes a step with SSE2, which every x86_64 processor has (it is part of the
/// architecture's baseline, so no feature check is needed). Why: the strings a gateway writes
/// and reads per exchange (ids, paths, tool names, the text of a result) are mostly 16-64
/// bytes, where a step of eight still cost about 1.5 instructions a byte
/// (bench/nginx-module-overhead.sh).
#[cfg(target_arch = "x86_64")]
mod sse2 {
    use std::arch::x86_64::{
        __m128i, _mm_cmpeq_epi8, _mm_loadu_si128, _mm_min_epu8, _mm_movemask_epi8, _mm_or_si128,
        _mm_set1_epi8,
    };

    /// The marks (`"`, `\`, below U+0020) among the 16 bytes at `bytes[at..at + 16]`, one bit
    /// a byte.
    #[inline(always)]
    fn marks(bytes: &[u8], at: usize) -> u32 {
        let chunk = &bytes[at..at + 16];
        // SAFETY: SSE2 is baseline on x86_64; `chunk` is 16 readable bytes and the load is
        // unaligned.
        unsafe {
            let v = _mm_loadu_si128(chunk.as_ptr().cast::<__m128i>());
            let quote = _mm_cmpeq_epi8(v, _mm_set1_epi8(b'"' as i8));
            let backslash = _mm_cmpeq_epi8(v, _mm_set1_epi8(b'\\' as i8));
            // unsigned v <= 0x1f exactly when min(v, 0x1f) == v
            let control = _mm_cmpeq_epi8(_mm_min_epu8(v, _mm_set1_epi8(0x1f)), v);
            _mm_movemask_epi8(_mm_or_si128(_mm_or_si128(quote, backslash), control)) as u32
        }
    }

    /// `super::plain_len` for at least 16 bytes.
    pub(super) fn plain_len(bytes: &[u8]) -> usize {
        let mut at = 0;
        while at + 16 <= bytes.len() {
            let m = marks(bytes, at);
            if m != 0 {
                return at + m.trailing_zeros() as usize;
            }
            at += 16;
        }
        if at == bytes.len() {
            return at;
        }
        // the last 16 bytes: those before `at` hold no mark, so the lowest mark is past it
        let start = bytes.len() - 16;
        match marks(bytes, start) {
            0 => bytes.len(),
            m => start + m.trailing_zeros() as usize,
        }
    }

    /// Whether any of `bytes` has its high bit set (16 at a time; the rest a byte at a time).
    pub(super) fn has_non_ascii(bytes: &[u8]) -> bool {
        let mut at = 0;
        while at + 16 <= bytes.len() {
            let chunk = &bytes[at..at + 16];
            // SAFETY: as in `marks`.
            let high = unsafe { _mm_movemask_epi8(_mm_loadu_si128(chunk.as_ptr().cast())) };
            if high != 0 {
                return true;
            }
            at += 16;
        }
        !bytes[at..].is_ascii()
    }
}

/// The JSON integer at the start of `bytes` when it is a short one: at most 18 digits (so it
/// fits an i64), no leading zero, not `-0`, and no fraction or exponent after it. Returns the
/// value and how many bytes it took; `None` means "not this simple shape" (the caller's serde
/// path reads it), not "invalid". The token rule of the core's fast reader and the C ABI's
/// request reader, kept here once.
pub fn short_integer(bytes: &[u8]) -> Option<(i64, usize)> {
    let negative = bytes.first() == Some(&b'-');
    let start = usize::from(negative);
    let mut end = start;
    let mut n: i64 = 0;
    while let Some(d @ b'0'..=b'9') = bytes.get(end) {
        // wraps only past 18 digits, which give up below
        n = n.wrapping_mul(10).wrapping_add(i64::from(d - b'0'));
        end += 1;
    }
    let digits = end - start;
    if digits == 0 || digits > 18 || (digits > 1 && bytes[start] == b'0') {
        return None;
    }
    if matches!(bytes.get(end), Some(b'.' | b'e' | b'E')) || (negative && n == 0) {
        return None;
    }
    Some((if negative { -n } else { n }, end))
}

/// `bytes` as text when they are ASCII, else `None`: a header value or a token that must be
/// ASCII, checked once (not checked as ASCII and then again as UTF-8).
pub fn ascii(bytes: &[u8]) -> Option<&str> {
    // SAFETY: ASCII is UTF-8.
    is_ascii(bytes).then(|| unsafe { std::str::from_utf8_unchecked(bytes) })
}

/// `bytes` as text: ASCII (what headers, ids and paths almost always are) is checked a word at
/// a time without the UTF-8 decoder's per-call setup; anything else goes through it.
pub fn utf8(bytes: &[u8]) -> Result<&str, std::str::Utf8Error> {
    match ascii(bytes) {
        Some(text) => Ok(text),
        None => std::str::from_utf8(bytes),
    }
}

/// Whether every byte is ASCII: sixteen bytes a step with SSE2 on x86_64.
fn is_ascii(bytes: &[u8]) -> bool {
    #[cfg(target_arch = "x86_64")]
    return !sse2::has_non_ascii(bytes);
    #[cfg(not(target_arch = "x86_64"))]
    return bytes.is_ascii();
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    fn slow(bytes: &[u8]) -> usize {
        bytes
            .iter()
            .position(|&b| b == b'"' || b == b'\\' || b < 0x20)
            .unwrap_or(bytes.len())
    }

    #[test]
    fn finds_the_first_byte_that_ends_or_escapes_a_string() {
        for (text, want) in [
            (&b""[..], 0),
            (b"plain", 5),
            (b"sixteen bytes ok", 16),
            (b"abcdefgh\"", 8),
            (b"abcdefg\\h", 7),
            (b"\x1f", 0),
            (b"\x7f\x80\xff\x20!\"", 5),
            (b"a\x00\x00\x00\x00\x00\x00\x00\x00\"", 1),
            // a match in the first word must win over a borrow-marked byte above it
            (b"\x01\x21\x22xxxxx", 0),
            (b"xxxxxxx\x1f\"", 7),
        ] {
            assert_eq!(plain_len(text), want, "{text:?}");
        }
    }

    #[test]
    fn short_integers_and_what_is_left_to_serde() {
        assert_eq!(short_integer(b"0,"), Some((0, 1)));
        assert_eq!(short_integer(b"-42}"), Some((-42, 3)));
        assert_eq!(
            short_integer(b"123456789012345678"),
            Some((123_456_789_012_345_678, 18))
        );
        for other in [
            &b"1234567890123456789"[..],
            b"-0",
            b"01",
            b"1.5",
            b"2e3",
            b"-",
            b"x",
            b"",
        ] {
            assert_eq!(short_integer(other), None, "{other:?}");
        }
    }

    #[test]
    fn ascii_and_utf8_are_text_and_bad_bytes_are_not() {
        assert_eq!(utf8(b"Content-Type").unwrap(), "Content-Type");
        assert_eq!(utf8("é 😀".as_bytes()).unwrap(), "é 😀");
        assert_eq!(utf8(b"a\xffb").unwrap_err().valid_up_to(), 1);
    }

    proptest! {
        #[test]
        fn plain_len_agrees_with_a_byte_loop(bytes in proptest::collection::vec(
            prop_oneof![Just(b'"'), Just(b'\\'), 0u8..0x21, any::<u8>()], 0..40)) {
            prop_assert_eq!(plain_len(&bytes), slow(&bytes));
        }

        #[test]
        fn plain_len_finds_a_mark_after_a_long_plain_run(
            plain in proptest::collection::vec(0x20u8..=0xff, 0..70),
            mark in prop_oneof![Just(b'"'), Just(b'\\'), 0u8..0x20],
            rest in proptest::collection::vec(any::<u8>(), 0..9),
        ) {
            let plain: Vec<u8> = plain.into_iter().filter(|&b| b != b'"' && b != b'\\').collect();
            let mut bytes = plain.clone();
            prop_assert_eq!(plain_len(&bytes), plain.len());
            bytes.push(mark);
            bytes.extend(rest);
            prop_assert_eq!(plain_len(&bytes), plain.len());
        }

        #[test]
        fn the_word_reader_agrees_with_a_byte_loop(bytes in proptest::collection::vec(
            prop_oneof![Just(b'"'), Just(b'\\'), 0u8..0x21, 0x20u8..=0xff], 0..40)) {
            prop_assert_eq!(plain_len_words(&bytes), slow(&bytes));
        }

        #[test]
        fn utf8_finds_a_late_byte_that_is_not_ascii(
            ascii in proptest::collection::vec(0u8..0x80, 0..70),
            rest in proptest::collection::vec(any::<u8>(), 0..4),
        ) {
            let mut bytes = ascii;
            bytes.extend(rest);
            prop_assert_eq!(utf8(&bytes).ok(), std::str::from_utf8(&bytes).ok());
        }

        #[test]
        fn utf8_agrees_with_std(bytes in proptest::collection::vec(
            prop_oneof![0u8..0x80, any::<u8>()], 0..72)) {
            prop_assert_eq!(utf8(&bytes).ok(), std::str::from_utf8(&bytes).ok());
        }

        #[test]
        fn ascii_is_text_only_when_every_byte_is_ascii(
            head in proptest::collection::vec(0u8..0x80, 0..70),
            rest in proptest::collection::vec(any::<u8>(), 0..4),
        ) {
            let mut bytes = head;
            bytes.extend(rest);
            let want = bytes.is_ascii().then(|| std::str::from_utf8(&bytes).unwrap());
            prop_assert_eq!(ascii(&bytes), want);
        }
    }
}
