//! JSON text written by hand, member by member, without serde's machinery: the one home of
//! the writers that the verdict (`Verdict::write_json`), the call record
//! (`CallRecord::write_json`) and the proxy's record line use.
//!
//! Why: a gateway writes one verdict per exchange and the proxy one record line per exchange,
//! and serde_json's derived serialisers spent most of their instructions escaping member names
//! that never need escaping (the proxy's record writer: 20k of its 24k instructions per
//! exchange, `bench/proxy-overhead.sh --instructions`). Every writer built on these is held
//! byte-equal to `serde_json::to_writer` of the same value by tests, so serde's derive stays the
//! definition of the format and a field added to a type and not to its writer fails them.

use std::io::{self, Write};

/// Writes JSON text a member at a time: `{` and `}`, and a `,` before every member but the
/// first.
pub struct ObjectWriter<'w, W: Write> {
    w: &'w mut W,
    first: bool,
}

impl<'w, W: Write> ObjectWriter<'w, W> {
    /// Writes `{`.
    #[inline(always)]
    pub fn open(w: &'w mut W) -> io::Result<Self> {
        w.write_all(b"{")?;
        Ok(ObjectWriter { w, first: true })
    }

    /// `"name":` (the name is one of ours: nothing in it needs escaping). Always inlined, as
    /// the helpers below: every name is a literal, and an inlined copy of a length known at
    /// compile time is a few moves instead of a `memcpy` call (a verdict has up to 25 members).
    ///
    /// `,"name":` is put together on the stack and written at once: three writes of a few bytes
    /// each cost a capacity check apiece, and a proxy's record line has about 70 members.
    #[inline(always)]
    pub fn key(&mut self, name: &str) -> io::Result<&mut W> {
        const ROOM: usize = 32;
        let n = name.len();
        if n + 4 > ROOM {
            // no name of ours is this long
            self.w.write_all(if self.first { b"\"" } else { b",\"" })?;
            self.first = false;
            self.w.write_all(name.as_bytes())?;
            self.w.write_all(b"\":")?;
            return Ok(self.w);
        }
        let mut text = [0u8; ROOM];
        text[0] = b',';
        text[1] = b'"';
        text[2..2 + n].copy_from_slice(name.as_bytes());
        text[2 + n] = b'"';
        text[3 + n] = b':';
        // two writes of constant lengths (the comma or not), each inlined as a few moves
        if self.first {
            self.first = false;
            self.w.write_all(&text[1..4 + n])?;
        } else {
            self.w.write_all(&text[..4 + n])?;
        }
        Ok(self.w)
    }

    /// `"name":` and a string.
    #[inline(always)]
    pub fn str(&mut self, name: &str, value: &str) -> io::Result<()> {
        let w = self.key(name)?;
        write_str(w, value)
    }

    /// `"name":` and a string from a closed set that needs no escaping: an enum's wire name
    /// (an outcome, a layer, a record kind). Written as it is, without the look for characters
    /// to escape that [`ObjectWriter::str`] takes (a record line has about ten such members).
    #[inline(always)]
    pub fn wire_name(&mut self, name: &str, value: &'static str) -> io::Result<()> {
        debug_assert_eq!(
            crate::scan::plain_len(value.as_bytes()),
            value.len(),
            "{value:?} needs escaping"
        );
        let w = self.key(name)?;
        w.write_all(b"\"")?;
        w.write_all(value.as_bytes())?;
        w.write_all(b"\"")
    }

    /// [`ObjectWriter::wire_name`] when there is a value; nothing (no member) when not.
    #[inline(always)]
    pub fn opt_wire_name(&mut self, name: &str, value: Option<&'static str>) -> io::Result<()> {
        match value {
            Some(v) => self.wire_name(name, v),
            None => Ok(()),
        }
    }

    /// [`ObjectWriter::str`] when there is a value; nothing (no member) when not.
    #[inline(always)]
    pub fn opt_str(&mut self, name: &str, value: Option<&str>) -> io::Result<()> {
        match value {
            Some(v) => self.str(name, v),
            None => Ok(()),
        }
    }

    /// `"name":` and an unsigned integer.
    #[inline(always)]
    pub fn uint(&mut self, name: &str, value: u64) -> io::Result<()> {
        let w = self.key(name)?;
        write_u64(w, value)
    }

    /// [`ObjectWriter::uint`] when there is a value; nothing when not.
    #[inline(always)]
    pub fn opt_uint(&mut self, name: &str, value: Option<u64>) -> io::Result<()> {
        match value {
            Some(v) => self.uint(name, v),
            None => Ok(()),
        }
    }

    /// `"name":` and `true` or `false`.
    #[inline(always)]
    pub fn bool(&mut self, name: &str, value: bool) -> io::Result<()> {
        let w = self.key(name)?;
        w.write_all(if value { b"true" } else { b"false" })
    }

    /// `"name":` and any JSON value, written by serde_json (ids, arguments and results are
    /// the peers' JSON: their text is serde_json's by definition).
    #[inline(always)]
    pub fn value(&mut self, name: &str, value: &serde_json::Value) -> io::Result<()> {
        let w = self.key(name)?;
        write_value(w, value)
    }

    /// [`ObjectWriter::value`] when there is a value; nothing when not.
    #[inline(always)]
    pub fn opt_value(&mut self, name: &str, value: Option<&serde_json::Value>) -> io::Result<()> {
        match value {
            Some(v) => self.value(name, v),
            None => Ok(()),
        }
    }

    /// `"name":` and a number as serde_json writes an `f64` (`null` when not finite).
    #[inline(always)]
    pub fn float(&mut self, name: &str, value: f64) -> io::Result<()> {
        let w = self.key(name)?;
        write_f64(w, value)
    }

    /// Writes `}`.
    #[inline(always)]
    pub fn close(self) -> io::Result<()> {
        self.w.write_all(b"}")
    }
}

/// A JSON string with serde_json's escaping: `"` and `\` escaped, the control characters
/// U+0000-U+001F as `\b \t \n \f \r` or `\u00xx` (lower-case hex), everything else as it is.
///
/// A string with nothing to escape (almost every string in a record line: ids, names, times,
/// hashes) is written in one piece without entering the escaping loop.
#[inline]
pub fn write_str<W: Write>(w: &mut W, s: &str) -> io::Result<()> {
    let plain = crate::scan::plain_len(s.as_bytes());
    w.write_all(b"\"")?;
    if plain == s.len() {
        w.write_all(s.as_bytes())?;
    } else {
        // `plain` is at an ASCII byte (a quote, a backslash or a control character): a char
        // boundary
        w.write_all(&s.as_bytes()[..plain])?;
        write_escaped(w, &s[plain..])?;
    }
    w.write_all(b"\"")
}

/// One JSON string made of `parts` one after the other, as [`write_str`] writes their
/// concatenation (escaping maps each character on its own, so the parts can be escaped apart):
/// a string such as `name@version` is written without building it first.
pub fn write_str_parts<W: Write>(w: &mut W, parts: &[&str]) -> io::Result<()> {
    w.write_all(b"\"")?;
    for part in parts {
        write_escaped(w, part)?;
    }
    w.write_all(b"\"")
}

/// The inside of a JSON string: `s` with serde_json's escaping, without the quotes.
fn write_escaped<W: Write>(w: &mut W, s: &str) -> io::Result<()> {
    let bytes = s.as_bytes();
    let mut start = 0;
    while start < bytes.len() {
        let i = start + crate::scan::plain_len(&bytes[start..]);
        if i == bytes.len() {
            break;
        }
        let b = bytes[i];
        let short: &[u8] = match b {
            b'"' => b"\\\"",
            b'\\' => b"\\\\",
            0x08 => b"\\b",
            0x09 => b"\\t",
            0x0a => b"\\n",
            0x0c => b"\\f",
            0x0d => b"\\r",
            _ => b"", // another control character (plain_len stops at nothing else)
        };
        w.write_all(&bytes[start..i])?;
        start = i + 1;
        if short.is_empty() {
            const HEX: &[u8; 16] = b"0123456789abcdef";
            w.write_all(&[
                b'\\',
                b'u',
                b'0',
                b'0',
                HEX[usize::from(b >> 4)],
                HEX[usize::from(b & 0xf)],
            ])?;
        } else {
            w.write_all(short)?;
        }
    }
    w.write_all(&bytes[start..])
}

/// `n` in decimal.
#[inline]
pub fn write_u64<W: Write>(w: &mut W, n: u64) -> io::Result<()> {
    // most numbers in a verdict (stream counts) are one digit: one byte, no copy loop
    if n < 10 {
        return w.write_all(&[b'0' + n as u8]);
    }
    write_u64_long(w, n)
}

/// Two digits per division, from a table (what itoa does): a record line's ids, byte counts
/// and durations are mostly 2 to 5 digits, and a division per digit was about 30
/// instructions each.
fn write_u64_long<W: Write>(w: &mut W, n: u64) -> io::Result<()> {
    let (digits, start) = decimal_digits(n);
    w.write_all(&digits[start..])
}

/// "00" "01" … "99": two decimal digits per lookup.
pub const DIGIT_PAIRS: [u8; 200] = {
    let mut table = [0u8; 200];
    let mut k = 0;
    while k < 100 {
        table[2 * k] = b'0' + (k / 10) as u8;
        table[2 * k + 1] = b'0' + (k % 10) as u8;
        k += 1;
    }
    table
};

/// `n`'s decimal digits at the end of a buffer of `'0'`s, and the index they start at: the
/// `'0'`s before them are the padding a fixed width asks for (the C ABI's record line writes
/// time fields that way). Two digits per division, from [`DIGIT_PAIRS`].
pub fn decimal_digits(mut n: u64) -> ([u8; 20], usize) {
    let mut digits = [b'0'; 20];
    let mut i = digits.len();
    while n >= 100 {
        let pair = (n % 100) as usize * 2;
        n /= 100;
        i -= 2;
        digits[i..i + 2].copy_from_slice(&DIGIT_PAIRS[pair..pair + 2]);
    }
    if n >= 10 {
        let pair = n as usize * 2;
        i -= 2;
        digits[i..i + 2].copy_from_slice(&DIGIT_PAIRS[pair..pair + 2]);
    } else {
        i -= 1;
        digits[i] = b'0' + n as u8;
    }
    (digits, i)
}

/// `n` in decimal, with a `-` when negative.
pub fn write_i64<W: Write>(w: &mut W, n: i64) -> io::Result<()> {
    if n < 0 {
        w.write_all(b"-")?;
    }
    write_u64(w, n.unsigned_abs())
}

/// Any JSON value, as serde_json writes it. Integers and booleans are written here too: a
/// JSON-RPC id is one, written three times in a proxy's record line, and serde_json's
/// serialiser around its integer formatting cost about 150 instructions each time.
pub fn write_value<W: Write>(w: &mut W, value: &serde_json::Value) -> io::Result<()> {
    match value {
        serde_json::Value::String(s) => write_str(w, s),
        serde_json::Value::Null => w.write_all(b"null"),
        serde_json::Value::Bool(b) => w.write_all(if *b { b"true" } else { b"false" }),
        serde_json::Value::Number(n) => match (n.as_u64(), n.as_i64()) {
            (Some(u), _) => write_u64(w, u),
            (None, Some(i)) => write_i64(w, i),
            // a float: serde_json's own formatting
            (None, None) => serde_json::to_writer(w, n).map_err(io::Error::from),
        },
        other => serde_json::to_writer(w, other).map_err(io::Error::from),
    }
}

/// An `f64` as serde_json writes it: the shortest text that reads back as the same number
/// (`zmij`, which serde_json uses since 1.0.146; the tests fail if it changes formatter
/// again), `null` for NaN and the infinities.
pub fn write_f64<W: Write>(w: &mut W, value: f64) -> io::Result<()> {
    if value.is_finite() {
        let mut buf = zmij::Buffer::new();
        w.write_all(buf.format_finite(value).as_bytes())
    } else {
        w.write_all(b"null")
    }
}

/// A JSON array of `items`, each written by `each`.
pub fn write_array<W: Write, T>(
    w: &mut W,
    items: &[T],
    mut each: impl FnMut(&mut W, &T) -> io::Result<()>,
) -> io::Result<()> {
    w.write_all(b"[")?;
    for (i, item) in items.iter().enumerate() {
        if i > 0 {
            w.write_all(b",")?;
        }
        each(w, item)?;
    }
    w.write_all(b"]")
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    fn text(write: impl FnOnce(&mut Vec<u8>) -> io::Result<()>) -> String {
        let mut out = Vec::new();
        write(&mut out).unwrap();
        String::from_utf8(out).unwrap()
    }

    /// Members are written `"name":` first and `,"name":` after, long names included.
    #[test]
    fn objects_separate_their_members() {
        let long = "a_member_name_longer_than_the_buffer_for_names";
        let t = text(|w| {
            let mut o = ObjectWriter::open(w)?;
            o.uint("a", 1)?;
            o.str(long, "x")?;
            o.bool("sessionPostCount", true)?;
            o.close()
        });
        assert_eq!(
            t,
            format!(r#"{{"a":1,"{long}":"x","sessionPostCount":true}}"#)
        );
        let t = text(|w| {
            let mut o = ObjectWriter::open(w)?;
            o.str(long, "y")?;
            o.close()
        });
        assert_eq!(t, format!(r#"{{"{long}":"y"}}"#));
    }

    #[test]
    fn decimal_digits_end_a_buffer_padded_with_zeros() {
        for n in [0u64, 7, 42, 100, 65_535, u64::MAX] {
            let (digits, start) = decimal_digits(n);
            assert_eq!(&digits[start..], n.to_string().as_bytes());
            assert!(digits[..start].iter().all(|&b| b == b'0'));
        }
        assert_eq!(
            &decimal_digits(7).0[16..],
            b"0007",
            "zero padding to a width"
        );
    }

    #[test]
    fn numbers_are_written_as_display_writes_them() {
        let powers = (1..20).flat_map(|e| {
            let p = 10u64.pow(e);
            [p - 1, p, p + 1]
        });
        for n in (0u64..=120).chain(powers).chain([65_535, u64::MAX]) {
            assert_eq!(text(|w| write_u64(w, n)), n.to_string());
        }
        for n in [0i64, -1, -32_603, i64::MIN, i64::MAX] {
            assert_eq!(text(|w| write_i64(w, n)), n.to_string());
        }
    }

    #[test]
    fn floats_are_written_as_serde_writes_them() {
        for f in [
            0.0,
            -0.0,
            1.0,
            0.1,
            12.345_678,
            1e21,
            1e-7,
            f64::MAX,
            f64::MIN_POSITIVE,
            f64::NAN,
            f64::INFINITY,
            f64::NEG_INFINITY,
        ] {
            assert_eq!(
                text(|w| write_f64(w, f)),
                serde_json::to_string(&f).unwrap(),
                "{f}"
            );
        }
    }

    proptest! {
        #[test]
        fn generated_floats_are_written_as_serde_writes_them(f in any::<f64>()) {
            prop_assert_eq!(text(|w| write_f64(w, f)), serde_json::to_string(&f).unwrap());
        }

        #[test]
        fn generated_scalars_are_written_as_serde_writes_them(
            u in any::<u64>(), i in any::<i64>(), f in any::<f64>(), b in any::<bool>()
        ) {
            for v in [serde_json::json!(u), serde_json::json!(i), serde_json::json!(f), serde_json::json!(b)] {
                prop_assert_eq!(text(|w| write_value(w, &v)), serde_json::to_string(&v).unwrap());
            }
        }

        #[test]
        fn generated_strings_are_written_as_serde_writes_them(s in prop_oneof![
            "[ -~]{0,12}", "[\\x00-\\x1f\"\\\\a]{0,8}", any::<String>()
        ]) {
            prop_assert_eq!(text(|w| write_str(w, &s)), serde_json::to_string(&s).unwrap());
            let v = serde_json::Value::String(s);
            prop_assert_eq!(text(|w| write_value(w, &v)), serde_json::to_string(&v).unwrap());
        }

        /// Parts escaped apart make the string of their concatenation, wherever it is cut.
        #[test]
        fn string_parts_are_written_as_their_concatenation(
            parts in proptest::collection::vec(prop_oneof![
                "[ -~]{0,12}", "[\\x00-\\x1f\"\\\\a]{0,8}", any::<String>()
            ], 0..4)
        ) {
            let refs: Vec<&str> = parts.iter().map(String::as_str).collect();
            prop_assert_eq!(
                text(|w| write_str_parts(w, &refs)),
                serde_json::to_string(&parts.concat()).unwrap()
            );
        }
    }
}
