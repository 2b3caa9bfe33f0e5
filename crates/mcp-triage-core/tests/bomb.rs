//! Decompression bombs: a 10 GB stream of zeros, compressed as it is fed (never held whole,
//! never written to disk), must end in `LIMIT_EXCEEDED` long before its end, with the memory
//! the classifier holds bounded all the way. The test counts every allocation of this test
//! binary (a counting global allocator), so its peak is the classifier's, the decoder's and
//! the encoder's together; the scenarios run one after another in one test so that no other
//! test's allocations are counted.

use std::alloc::{GlobalAlloc, Layout, System};
use std::io::Write;
use std::sync::atomic::{AtomicUsize, Ordering};

use mcp_triage_core::{CallContext, Limits, Outcome, ResponseClassifier, ResponseHead, Verdict};

struct Counting;

static CURRENT: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let p = unsafe { System.alloc(layout) };
        if !p.is_null() {
            let now = CURRENT.fetch_add(layout.size(), Ordering::Relaxed) + layout.size();
            PEAK.fetch_max(now, Ordering::Relaxed);
        }
        p
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        unsafe { System.dealloc(ptr, layout) };
        CURRENT.fetch_sub(layout.size(), Ordering::Relaxed);
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let p = unsafe { System.realloc(ptr, layout, new_size) };
        if !p.is_null() {
            if new_size >= layout.size() {
                let grew = new_size - layout.size();
                let now = CURRENT.fetch_add(grew, Ordering::Relaxed) + grew;
                PEAK.fetch_max(now, Ordering::Relaxed);
            } else {
                CURRENT.fetch_sub(layout.size() - new_size, Ordering::Relaxed);
            }
        }
        p
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

/// Ten gigabytes of zeros: the bomb's decoded size, in 1 MiB steps.
const BOMB_BYTES: u64 = 10_000_000_000;
const STEP: usize = 1 << 20;

/// An encoder that compresses what is written to it into a buffer the test drains.
trait Bomb {
    fn write_zeros(&mut self, zeros: &[u8]);
    /// The compressed bytes made since the last call.
    fn drain(&mut self) -> Vec<u8>;
}

struct Gzip(flate2::write::GzEncoder<Vec<u8>>);
impl Bomb for Gzip {
    fn write_zeros(&mut self, zeros: &[u8]) {
        self.0.write_all(zeros).unwrap();
    }
    fn drain(&mut self) -> Vec<u8> {
        std::mem::take(self.0.get_mut())
    }
}

/// gzip inside gzip: `Content-Encoding: gzip, gzip`, about a million to one.
struct GzipTwice(flate2::write::GzEncoder<flate2::write::GzEncoder<Vec<u8>>>);
impl Bomb for GzipTwice {
    fn write_zeros(&mut self, zeros: &[u8]) {
        self.0.write_all(zeros).unwrap();
    }
    fn drain(&mut self) -> Vec<u8> {
        self.0.flush().unwrap();
        std::mem::take(self.0.get_mut().get_mut())
    }
}

struct Br(brotli::CompressorWriter<Vec<u8>>);
impl Bomb for Br {
    fn write_zeros(&mut self, zeros: &[u8]) {
        self.0.write_all(zeros).unwrap();
    }
    fn drain(&mut self) -> Vec<u8> {
        std::mem::take(self.0.get_mut())
    }
}

struct Zstd(zstd::stream::write::Encoder<'static, Vec<u8>>);
impl Bomb for Zstd {
    fn write_zeros(&mut self, zeros: &[u8]) {
        self.0.write_all(zeros).unwrap();
    }
    fn drain(&mut self) -> Vec<u8> {
        std::mem::take(self.0.get_mut())
    }
}

/// What one bomb did to the classifier.
struct Blast {
    verdict: Verdict,
    /// Zeros compressed before the verdict was known.
    zeros_written: u64,
    /// The most bytes allocated at once while it ran, beyond what was allocated before.
    peak: usize,
}

/// Feeds the bomb to a classifier in 16 KiB chunks as it is compressed, until the verdict is
/// known or the 10 GB are written; then ends the body.
fn detonate(bomb: &mut dyn Bomb, coding: &str, content_type: &str, limits: Limits) -> Blast {
    let zeros = vec![0u8; STEP];
    let head = ResponseHead::new(200)
        .content_type(content_type)
        .header("Content-Encoding", coding);
    let base = CURRENT.load(Ordering::Relaxed);
    PEAK.store(base, Ordering::Relaxed);
    let mut c = ResponseClassifier::new(&head, CallContext::new(1).with_limits(limits));
    let mut written = 0u64;
    while written < BOMB_BYTES && !c.is_decided() {
        bomb.write_zeros(&zeros);
        written += STEP as u64;
        for chunk in bomb.drain().chunks(16 << 10) {
            c.feed(chunk);
            if c.is_decided() {
                break;
            }
        }
    }
    let verdict = c.finish();
    let peak = PEAK.load(Ordering::Relaxed).saturating_sub(base);
    Blast {
        verdict,
        zeros_written: written,
        peak,
    }
}

fn assert_limit(blast: &Blast, what: &str, limit: &str, max_zeros: u64, max_peak: usize) {
    let v = &blast.verdict;
    assert_eq!(v.outcome, Outcome::LimitExceeded, "{what}: {v:?}");
    assert_eq!(v.limit.as_ref().unwrap().name, limit, "{what}: {v:?}");
    assert!(
        blast.zeros_written <= max_zeros,
        "{what}: {} zeros compressed before the verdict",
        blast.zeros_written
    );
    assert!(
        blast.peak <= max_peak,
        "{what}: {} bytes allocated at the peak (bound {max_peak})",
        blast.peak
    );
    eprintln!(
        "{what}: {limit} after {} MiB of zeros, peak {} KiB",
        blast.zeros_written >> 20,
        blast.peak >> 10
    );
}

#[test]
fn a_10_gb_bomb_is_limit_exceeded_in_bounded_memory() {
    let json = "application/json";
    let sse = "text/event-stream";
    let best = flate2::Compression::best();
    let gzip = || Gzip(flate2::write::GzEncoder::new(Vec::new(), best));

    // The default limits: past 1 MiB decoded the ratio (gzip's about 1,030:1 on zeros, over
    // the 1,000 allowed) stops it, whatever the media type. The encoders hold back a few MiB
    // of zeros' output, hence the bound on zeros written; the peak is about 1 MiB for JSON
    // (its buffer before compaction) and 8 MiB for SSE (one line of zeros, its buffer grown
    // by doubling, which maxEventBytes bounds for plain streams too).
    for (ct, peak) in [(json, 4 << 20), (sse, 16 << 20)] {
        let blast = detonate(&mut gzip(), "gzip", ct, Limits::DEFAULT);
        assert_limit(
            &blast,
            &format!("gzip {ct}"),
            "maxDecodedRatio",
            32 << 20,
            peak,
        );
    }
    let mut twice = GzipTwice(flate2::write::GzEncoder::new(
        flate2::write::GzEncoder::new(Vec::new(), best),
        best,
    ));
    let blast = detonate(&mut twice, "gzip, gzip", json, Limits::DEFAULT);
    assert_limit(&blast, "gzip, gzip", "maxDecodedRatio", 32 << 20, 4 << 20);
    let mut br = Br(brotli::CompressorWriter::new(Vec::new(), 4096, 1, 22));
    let blast = detonate(&mut br, "br", sse, Limits::DEFAULT);
    // the SSE line of zeros again, beside Brotli's 4 MiB window (22 bits)
    assert_limit(&blast, "br", "maxDecodedRatio", 32 << 20, 16 << 20);
    let mut zstd = Zstd(zstd::stream::write::Encoder::new(Vec::new(), 1).unwrap());
    let blast = detonate(&mut zstd, "zstd", json, Limits::DEFAULT);
    assert_limit(&blast, "zstd", "maxDecodedRatio", 32 << 20, 4 << 20);

    // Without the ratio, the body's own limit counts decoded bytes: a JSON body is compacted
    // past 1 MiB, so 64 MiB of zeros cost about that megabyte, not 64.
    let no_ratio = Limits {
        max_decoded_ratio: 0,
        ..Limits::DEFAULT
    };
    let blast = detonate(&mut gzip(), "gzip", json, no_ratio);
    assert_limit(&blast, "gzip, no ratio", "maxBodyBytes", 80 << 20, 4 << 20);
    // and maxDecodedBytes, when set, stops it sooner
    let own = Limits {
        max_decoded_ratio: 0,
        max_decoded_bytes: Some(4 << 20),
        ..Limits::DEFAULT
    };
    let blast = detonate(&mut gzip(), "gzip", sse, own);
    assert_limit(
        &blast,
        "gzip, maxDecodedBytes",
        "maxDecodedBytes",
        16 << 20,
        16 << 20,
    );
}
