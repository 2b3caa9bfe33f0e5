//! Writes the golden vectors compressed, for the tests outside Rust (bindings/test.sh): every
//! line of `tests/golden/*.jsonl` that names no `Content-Encoding` of its own becomes three
//! lines of `OUTDIR/<same file name>`, its body compressed with gzip, br and zstd (as
//! `bodyBase64`, the coding in `headers`) and `plainLine`, the 1-based number of the line it
//! came from among the file's non-blank lines: whatever reads a coded line must give the verdict
//! of that plain line. The encoders are the ones `tests/golden_coded.rs` uses.
//!
//!     cargo run -p mcp-triage-core --example coded_golden -- OUTDIR

use std::io::Write;
use std::path::{Path, PathBuf};

use base64::Engine as _;
use serde_json::Value;

fn gzip(data: &[u8]) -> Vec<u8> {
    let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    e.write_all(data).expect("into memory");
    e.finish().expect("into memory")
}

fn br(data: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    {
        let mut w = brotli::CompressorWriter::new(&mut out, 4096, 5, 22);
        w.write_all(data).expect("into memory");
    }
    out
}

fn zstd(data: &[u8]) -> Vec<u8> {
    zstd::encode_all(data, 3).expect("into memory")
}

/// A compressor.
type Compress = fn(&[u8]) -> Vec<u8>;

const CODINGS: [(&str, Compress); 3] = [("gzip", gzip), ("br", br), ("zstd", zstd)];

/// The coded lines of one golden file.
fn coded(file: &Path) -> Result<String, String> {
    let text = std::fs::read_to_string(file).map_err(|e| format!("{}: {e}", file.display()))?;
    let b64 = base64::engine::general_purpose::STANDARD;
    let mut out = String::new();
    for (i, line) in text.lines().filter(|l| !l.trim().is_empty()).enumerate() {
        let case: Value =
            serde_json::from_str(line).map_err(|e| format!("{}:{}: {e}", file.display(), i + 1))?;
        if case["headers"].get("Content-Encoding").is_some() {
            continue;
        }
        let body = match (case["body"].as_str(), case["bodyBase64"].as_str()) {
            (Some(b), _) => b.as_bytes().to_vec(),
            (None, Some(b)) => b64.decode(b).map_err(|e| format!("{}: {e}", i + 1))?,
            (None, None) => Vec::new(),
        };
        for (name, compress) in CODINGS {
            let mut c = case.clone();
            let o = c.as_object_mut().expect("a golden line is an object");
            o.remove("body");
            o.insert("bodyBase64".into(), b64.encode(compress(&body)).into());
            let headers = o.entry("headers").or_insert(serde_json::json!({}));
            headers["Content-Encoding"] = name.into();
            o.insert("plainLine".into(), (i + 1).into());
            out.push_str(&c.to_string());
            out.push('\n');
        }
    }
    Ok(out)
}

fn main() -> Result<(), String> {
    let out_dir = PathBuf::from(
        std::env::args()
            .nth(1)
            .ok_or("usage: coded_golden OUTDIR")?,
    );
    std::fs::create_dir_all(&out_dir).map_err(|e| e.to_string())?;
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/golden");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .map_err(|e| e.to_string())?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|e| e == "jsonl"))
        .collect();
    files.sort();
    for f in files {
        let name = f.file_name().expect("a file");
        std::fs::write(out_dir.join(name), coded(&f)?).map_err(|e| e.to_string())?;
    }
    Ok(())
}
