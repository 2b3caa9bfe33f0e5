//! Replaying a fuzz target's checked-in corpus on stable (`fuzz/corpus/TARGET/`), and a bounded
//! run of seeded mutations of it, so the test command covers what the fuzzer found and a little
//! more: any input that once broke a check stays a test. Included by path by the corpus tests
//! of the crates (`tests/fuzz_corpus.rs`). `FUZZ_ROUNDS` sets the mutations per target,
//! `FUZZ_SEED` the seed (printed on failure, so a failure replays).

use std::path::PathBuf;

/// The corpus files of `target`, sorted by name.
pub fn corpus(target: &str) -> Vec<(String, Vec<u8>)> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../fuzz/corpus")
        .join(target);
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.expect("a directory entry").path())
        .collect();
    files.sort();
    files
        .into_iter()
        .map(|p| {
            let name = p.file_name().unwrap().to_string_lossy().into_owned();
            (name, std::fs::read(&p).unwrap())
        })
        .collect()
}

/// Runs `check` on every corpus file, then on `FUZZ_ROUNDS` (default `rounds`) mutations of
/// them; panics naming the file, or the seed and round, of an input that failed.
pub fn run(target: &str, rounds: u64, check: impl Fn(&[u8]) + std::panic::RefUnwindSafe) {
    let files = corpus(target);
    assert!(!files.is_empty(), "the corpus of {target} is empty");
    for (name, data) in &files {
        if std::panic::catch_unwind(|| check(data)).is_err() {
            panic!("{target}: the corpus file {name} fails its check");
        }
    }
    let rounds = std::env::var("FUZZ_ROUNDS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(rounds);
    let seed = std::env::var("FUZZ_SEED")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(0x5eed);
    let mut rng = seed;
    for round in 0..rounds {
        let input = mutate(&files, &mut rng);
        if std::panic::catch_unwind(|| check(&input)).is_err() {
            panic!(
                "{target}: mutation round {round} of FUZZ_SEED={seed} fails: {:?}",
                String::from_utf8_lossy(&input)
            );
        }
    }
}

/// Pieces of HTTP/1.1 and JSON a mutation splices in.
const TOKENS: &[&[u8]] = &[
    b"\r\n",
    b"\n",
    b"\r",
    b"\r\n\r\n",
    b"chunked",
    b"Chunked",
    b"identity",
    b"gzip, ",
    b"transfer-encoding: ",
    b"content-length: ",
    b"host: ",
    b"connection: ",
    b"close",
    b",",
    b" ",
    b"\t",
    b"\0",
    b"0",
    b"5",
    b"ff",
    b"0x",
    b"+",
    b"-",
    b";",
    b":",
    b"\"",
    b"\\",
    b"\\u0041",
    b"{",
    b"}",
    b"[",
    b"]",
    b"null",
    b"true",
    b"1e5",
    b"1.5",
    b"99999999999999999999",
];

/// splitmix64.
fn next(s: &mut u64) -> u64 {
    *s = s.wrapping_add(0x9e37_79b9_7f4a_7c15);
    let mut z = *s;
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// A corpus file changed at one to four places: a byte flipped, a byte dropped, a token put in,
/// or a piece of another file spliced on.
fn mutate(files: &[(String, Vec<u8>)], rng: &mut u64) -> Vec<u8> {
    let pick = |rng: &mut u64, n: usize| (next(rng) % n.max(1) as u64) as usize;
    let mut data = files[pick(rng, files.len())].1.clone();
    for _ in 0..1 + pick(rng, 4) {
        let at = pick(rng, data.len() + 1);
        match pick(rng, 4) {
            0 if at < data.len() => data[at] ^= 1 << pick(rng, 8),
            1 if at < data.len() => {
                data.remove(at);
            }
            2 => {
                let t = TOKENS[pick(rng, TOKENS.len())];
                data.splice(at..at, t.iter().copied());
            }
            _ => {
                let other = &files[pick(rng, files.len())].1;
                let from = pick(rng, other.len());
                data.truncate(at);
                data.extend_from_slice(&other[from..]);
            }
        }
    }
    data
}
