//! Byte scanners shared by everything here that reads or writes JSON strings on a hot path: the
//! core's common-shape reader (`json/fast.rs`), its verdict writer, and the C ABI's request
//! reader and record writer (`mcp-triage-ffi`).
//!
//! Why one home: the token rule ("a JSON string runs to the first `"`, `\` or control
//! character") was written in three places, byte by byte, at about 10 instructions a byte; this
//! scans eight bytes per step (bench/nginx-module-overhead.sh, `ffi_bench gateway`).

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
pub fn plain_len(bytes: &[u8]) -> usize {
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

/// `bytes` as text: ASCII (what headers, ids and paths almost always are) is checked a word at
/// a time without the UTF-8 decoder's per-call setup; anything else goes through it.
pub fn utf8(bytes: &[u8]) -> Result<&str, std::str::Utf8Error> {
    if bytes.is_ascii() {
        // SAFETY: ASCII is UTF-8.
        Ok(unsafe { std::str::from_utf8_unchecked(bytes) })
    } else {
        std::str::from_utf8(bytes)
    }
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
            plain in proptest::collection::vec(0x20u8..=0xff, 0..40),
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
        fn utf8_agrees_with_std(bytes in proptest::collection::vec(any::<u8>(), 0..24)) {
            prop_assert_eq!(utf8(&bytes).ok(), std::str::from_utf8(&bytes).ok());
        }
    }
}
