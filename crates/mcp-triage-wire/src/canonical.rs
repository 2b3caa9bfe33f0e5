//! Canonical JSON text: object members sorted by name (by their UTF-16-agnostic byte order, as
//! Rust's `str` orders them), no white space, strings and numbers as `serde_json` writes them.
//!
//! Why not `serde_json::to_string`: its member order follows the map type, which a Cargo
//! feature (`preserve_order`) switches for the whole build; the digest of a call's arguments
//! must not change because some dependency turned that feature on.

use std::io::{self, Write};

use ring::digest::{Context, SHA256};
use serde_json::Value;

/// The canonical JSON text of `v`.
pub fn to_canonical_json(v: &Value) -> String {
    let mut out = Vec::new();
    write_canonical(v, &mut out).expect("writing into a Vec does not fail");
    String::from_utf8(out).expect("JSON text is UTF-8")
}

/// Writes the canonical text of `v` into `out` (a `String`'s bytes, or the digest's hasher).
fn write_canonical<W: Write>(v: &Value, out: &mut W) -> io::Result<()> {
    match v {
        Value::Object(m) => {
            let mut members: Vec<(&String, &Value)> = m.iter().collect();
            members.sort_unstable_by(|a, b| a.0.cmp(b.0));
            out.write_all(b"{")?;
            for (i, (k, v)) in members.into_iter().enumerate() {
                if i > 0 {
                    out.write_all(b",")?;
                }
                // serde_json's escaping of a string is canonical already (the shortest form)
                serde_json::to_writer(&mut *out, k)?;
                out.write_all(b":")?;
                write_canonical(v, out)?;
            }
            out.write_all(b"}")
        }
        Value::Array(a) => {
            out.write_all(b"[")?;
            for (i, v) in a.iter().enumerate() {
                if i > 0 {
                    out.write_all(b",")?;
                }
                write_canonical(v, out)?;
            }
            out.write_all(b"]")
        }
        // strings, numbers, booleans and null as serde_json writes them
        other => serde_json::to_writer(&mut *out, other).map_err(io::Error::from),
    }
}

/// The canonical text fed straight to SHA-256 as it is written, and counted: the digest of
/// the text without the text. Why: every proxied `tools/call` is digested, and the text was
/// built in a `String` only to be hashed and dropped.
struct Hashing {
    sha: Context,
    size: u64,
}

impl Write for Hashing {
    fn write(&mut self, bytes: &[u8]) -> io::Result<usize> {
        self.sha.update(bytes);
        self.size += bytes.len() as u64;
        Ok(bytes.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// The digest of a tool call's arguments: SHA-256 of their canonical JSON text, and that
/// text's length. Records, captures and the kitchen's journal name a call's arguments by it,
/// so identical calls (a retry) can be recognised without storing the arguments.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ArgumentsDigest {
    /// SHA-256 of the canonical text, 64 lowercase hex digits.
    pub hex: String,
    /// Bytes of the canonical text.
    pub size: u64,
}

impl ArgumentsDigest {
    /// The digest of `arguments`.
    pub fn of(arguments: &Value) -> ArgumentsDigest {
        let mut hashing = Hashing {
            sha: Context::new(&SHA256),
            size: 0,
        };
        write_canonical(arguments, &mut hashing).expect("hashing does not fail");
        ArgumentsDigest {
            hex: hex(hashing.sha.finish().as_ref()),
            size: hashing.size,
        }
    }

    /// `sha256:<hex>`: the form a capture line stores in place of hashed arguments, so a
    /// reader can tell a digest from an argument that happens to be a hex string.
    pub fn prefixed(&self) -> String {
        format!("sha256:{}", self.hex)
    }
}

/// Lowercase hex of `bytes`: the form of `argumentsHash` (a SHA-256 digest) in records. One
/// allocation, not one per byte: the proxy computes it for every `tools/call` it forwards.
pub fn hex(bytes: &[u8]) -> String {
    // Into a buffer of the final size, a byte's two digits at a time from a table (pushing
    // chars cost about 800 instructions for a SHA-256, once per proxied call; nibble by
    // nibble about 350).
    let mut out = vec![0u8; bytes.len() * 2];
    for (pair, b) in out.chunks_exact_mut(2).zip(bytes) {
        pair.copy_from_slice(&HEX_PAIRS[usize::from(*b)]);
    }
    String::from_utf8(out).expect("hex digits are ASCII")
}

/// The two lowercase hex digits of every byte value.
const HEX_PAIRS: [[u8; 2]; 256] = {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut pairs = [[0u8; 2]; 256];
    let mut b = 0;
    while b < 256 {
        pairs[b] = [DIGITS[b >> 4], DIGITS[b & 0x0f]];
        b += 1;
    }
    pairs
};

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use serde_json::json;

    #[test]
    fn hex_is_lowercase_two_digits_a_byte() {
        assert_eq!(hex(&[0x00, 0x0f, 0xa5, 0xff]), "000fa5ff");
        assert_eq!(hex(&[]), "");
        let every: Vec<u8> = (0..=255).collect();
        let by_format: String = every.iter().map(|b| format!("{b:02x}")).collect();
        assert_eq!(hex(&every), by_format);
    }

    #[test]
    fn members_are_sorted_at_every_depth_and_nothing_else_changes() {
        let v: Value =
            serde_json::from_str(r#"{ "b": [ {"y":1, "x":"é\n"} , 2.5 ], "a": null, "A": -0 }"#)
                .unwrap();
        assert_eq!(
            to_canonical_json(&v),
            r#"{"A":-0.0,"a":null,"b":[{"x":"é\n","y":1},2.5]}"#
        );
    }

    /// The digest every record, capture and journal written before this crate existed carries
    /// for these arguments: the crate must not change a stored value.
    #[test]
    fn the_digest_is_the_one_already_written() {
        let d = ArgumentsDigest::of(&json!({"message": "hi"}));
        // `printf '{"message":"hi"}' | sha256sum`
        assert_eq!(
            d.hex,
            "adbd982b8fe0bbd8477f09262028d3ac264001dc36e3c7579905e72c0b718755"
        );
        // `printf '{}' | sha256sum`: the digest of a call without arguments
        assert_eq!(
            ArgumentsDigest::of(&json!({})).hex,
            "44136fa355b3678a1146ad16f7e8649e94fb4fc21fe77e8310c060f61caaff8a"
        );
        assert_eq!(d.size, 16);
        assert_eq!(d.prefixed(), format!("sha256:{}", d.hex));
        assert_eq!(
            ArgumentsDigest::of(&json!({"a":1,"b":[1,2]})),
            ArgumentsDigest::of(&serde_json::from_str(r#"{"b":[1,2],"a":1}"#).unwrap())
        );
        assert_ne!(
            ArgumentsDigest::of(&json!({"a":1})),
            ArgumentsDigest::of(&json!({"a":2}))
        );
    }

    fn arb_json() -> impl Strategy<Value = Value> {
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::from),
            any::<i64>().prop_map(Value::from),
            // dyadic fractions: exact in text both ways (serde_json's default float parser is
            // not exact for every f64, which is no concern of the canonical form)
            (any::<i32>(), 0..20i32).prop_map(|(n, e)| Value::from(f64::from(n) / 2f64.powi(e))),
            ".*".prop_map(Value::from),
        ];
        leaf.prop_recursive(4, 64, 8, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..8).prop_map(Value::Array),
                prop::collection::btree_map(".*", inner, 0..8)
                    .prop_map(|m| Value::Object(m.into_iter().collect())),
            ]
        })
    }

    proptest! {
        /// Canonical text is JSON and (with serde_json's sorted maps, as this build has them)
        /// equals the compact text serde_json writes: the digests written so far stay valid.
        #[test]
        fn canonical_text_round_trips_and_matches_the_old_digest(v in arb_json()) {
            let text = to_canonical_json(&v);
            // parses (the value itself is not compared: serde_json's default float parser is
            // not exact for every f64, which is no concern of the canonical form)
            prop_assert!(serde_json::from_str::<Value>(&text).is_ok());
            // the digest is SHA-256 of that very text (in one piece), hashed as it is written
            let d = ArgumentsDigest::of(&v);
            prop_assert_eq!(&d.hex, &hex(ring::digest::digest(&SHA256, text.as_bytes()).as_ref()));
            prop_assert_eq!(d.size, text.len() as u64);
            prop_assert_eq!(text, serde_json::to_string(&v).unwrap());
        }
    }
}
