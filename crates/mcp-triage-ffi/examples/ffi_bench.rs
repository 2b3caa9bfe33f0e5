//! The cost of the C ABI over the core's own `classify`, for `bench/ffi-classify.sh`.
//!
//! ```text
//! ffi_bench core|ffi FILE [ROUNDS]   classify every exchange of FILE ROUNDS times (default 1)
//! ffi_bench time FILE [ROUNDS]       both, interleaved, timed: nanoseconds per exchange, ratio
//! ```
//!
//! FILE is an exchange file (`mcp-triage classify --batch` input, e.g. from
//! `make-exchanges.py`). Everything either side needs is prepared before the measured loop, in
//! the form its caller has it: for `core` the `ResponseHead` and `CallContext` (what a Rust
//! caller builds once), for `ffi` the `McptHeader` array and `McptCallOptions` over the same
//! bytes (what a C caller such as nginx has). The measured loops are `run_core` and `run_ffi`
//! (never inlined, so that `valgrind --tool=callgrind --toggle-collect='*run_core*'` counts
//! exactly one of them); the ABI's own work per call (checking and copying the arguments into
//! the core's types, boxing the verdict, freeing it) is the difference. Both print the outcome
//! counts, which the script compares, so both sides provably classified the same way.

use std::ffi::{c_char, CStr, CString};
use std::hint::black_box;
use std::time::{Instant, SystemTime};

use mcp_triage_core::exchange::Exchange;
use mcp_triage_core::{CallContext, RequestId, ResponseHead};
use mcp_triage_ffi::{
    mcpt_classify, mcpt_outcome_name, mcpt_verdict_free, mcpt_verdict_outcome, outcome_code,
    McptCallOptions, McptHeader, McptVerdict, MCPT_ID_NUMBER, MCPT_ID_STRING, MCPT_OK,
};

/// Verdicts per outcome code (1..=15; 0 unused): the same cheap bookkeeping on both sides.
type Counts = [u64; 16];

/// One exchange, prepared for both sides. The C views point into `head`, `body`, `id` and
/// `version`, which live as long as the case.
struct Case {
    head: ResponseHead,
    body: Vec<u8>,
    ctx: CallContext,
    id: String,
    version: Option<CString>,
    c_headers: Vec<McptHeader>,
    opts: McptCallOptions,
}

fn prepare(line: &[u8]) -> Result<Case, String> {
    let x = Exchange::parse(line).map_err(|e| e.to_string())?;
    if x.end.is_some() || x.output_schema.is_some() {
        return Err("the benchmark takes whole bodies without outputSchema".into());
    }
    let ctx = x.context(&CallContext::new(RequestId::Number(1)).with_now(SystemTime::UNIX_EPOCH));
    let now_ms = ctx
        .now
        .duration_since(SystemTime::UNIX_EPOCH)
        .map_err(|e| e.to_string())?
        .as_millis();
    let (kind, number, id) = match &x.expected_id {
        RequestId::Number(n) => (MCPT_ID_NUMBER, *n, String::new()),
        RequestId::String(s) => (MCPT_ID_STRING, 0, s.clone()),
    };
    let version = x
        .protocol_version
        .map(|v| CString::new(v.as_str()).expect("a revision has no NUL"));
    let mut case = Case {
        head: x.head.clone(),
        body: x.body.to_vec(),
        ctx,
        id,
        version,
        c_headers: Vec::new(),
        opts: McptCallOptions {
            expect_id_kind: kind,
            expect_id_number: number,
            expect_id_string: std::ptr::null(),
            expect_id_string_len: 0,
            protocol_version: std::ptr::null(),
            now_unix_ms: i64::try_from(now_ms).map_err(|e| e.to_string())?,
            limits_json: std::ptr::null(),
            output_schema_json: std::ptr::null(),
        },
    };
    // The strings do not move when `case` does (they are heap buffers), so the views stay valid.
    case.c_headers = case
        .head
        .headers
        .iter()
        .map(|(n, v)| McptHeader {
            name: n.as_ptr(),
            name_len: n.len(),
            value: v.as_ptr(),
            value_len: v.len(),
        })
        .collect();
    case.opts.expect_id_string = case.id.as_ptr();
    case.opts.expect_id_string_len = case.id.len();
    case.opts.protocol_version = case
        .version
        .as_ref()
        .map_or(std::ptr::null(), |v| v.as_ptr());
    Ok(case)
}

fn load(path: &str) -> Vec<Case> {
    let text = std::fs::read(path).unwrap_or_else(|e| fail(&format!("{path}: {e}")));
    text.split(|&b| b == b'\n')
        .enumerate()
        .filter(|(_, l)| !l.iter().all(u8::is_ascii_whitespace))
        .map(|(i, l)| prepare(l).unwrap_or_else(|e| fail(&format!("{path}:{}: {e}", i + 1))))
        .collect()
}

/// The core's own classify over prepared arguments; the outcome counts.
#[inline(never)]
fn run_core(cases: &[Case], rounds: usize) -> Counts {
    let mut counts = [0; 16];
    for _ in 0..rounds {
        for c in cases {
            let v = mcp_triage_core::classify(black_box(&c.head), black_box(&c.body), &c.ctx);
            counts[outcome_code(v.outcome) as usize] += 1;
        }
    }
    counts
}

/// The same through the C ABI: mcpt_classify, the outcome accessor, mcpt_verdict_free.
#[inline(never)]
fn run_ffi(cases: &[Case], rounds: usize) -> Counts {
    let mut counts = [0; 16];
    for _ in 0..rounds {
        for c in cases {
            let mut v: *mut McptVerdict = std::ptr::null_mut();
            // SAFETY: every pointer points into `c`, which outlives the call (see `prepare`).
            let rc = unsafe {
                mcpt_classify(
                    c.head.status,
                    black_box(c.c_headers.as_ptr()),
                    c.c_headers.len(),
                    black_box(c.body.as_ptr()),
                    c.body.len(),
                    &c.opts,
                    &mut v,
                )
            };
            if rc != MCPT_OK {
                fail(&format!("mcpt_classify returned {rc}: {}", last_error()));
            }
            // SAFETY: `v` is the live verdict just returned, freed once and not used afterwards.
            unsafe {
                counts[mcpt_verdict_outcome(v) as usize] += 1;
                mcpt_verdict_free(v);
            }
        }
    }
    counts
}

fn last_error() -> String {
    // SAFETY: the library's own NUL-terminated string.
    unsafe { CStr::from_ptr(mcp_triage_ffi::mcpt_last_error() as *const c_char) }
        .to_string_lossy()
        .into_owned()
}

fn fail(message: &str) -> ! {
    eprintln!("ffi_bench: {message}");
    std::process::exit(2)
}

fn print_counts(mode: &str, counts: &Counts) {
    let list: Vec<String> = (1..16)
        .filter(|&code| counts[code] > 0)
        .map(|code| {
            // SAFETY: 1..=15 are outcome codes; their names are static strings.
            let name = unsafe { CStr::from_ptr(mcpt_outcome_name(code as i32)) };
            format!("{}={}", name.to_string_lossy(), counts[code])
        })
        .collect();
    println!("{mode} outcomes: {}", list.join(" "));
}

/// Both loops interleaved, `rounds` each per repetition, 5 repetitions: the medians.
fn time(cases: &[Case], rounds: usize) {
    let per = |f: &dyn Fn() -> Counts| {
        let start = Instant::now();
        black_box(f());
        start.elapsed().as_nanos() as f64 / (cases.len() * rounds) as f64
    };
    let (mut core, mut ffi) = (Vec::new(), Vec::new());
    for _ in 0..5 {
        core.push(per(&|| run_core(cases, rounds)));
        ffi.push(per(&|| run_ffi(cases, rounds)));
    }
    core.sort_by(f64::total_cmp);
    ffi.sort_by(f64::total_cmp);
    let (c, f) = (core[2], ffi[2]);
    println!(
        "wall time per exchange (median of 5): core {c:.0} ns, ffi {f:.0} ns, ratio {:.3}",
        f / c
    );
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if !(3..=4).contains(&args.len()) {
        fail("usage: ffi_bench core|ffi|time FILE [ROUNDS]");
    }
    let rounds = args.get(3).map_or(1, |r| {
        r.parse()
            .unwrap_or_else(|_| fail(&format!("ROUNDS {r:?} is not a count")))
    });
    let cases = load(&args[2]);
    match args[1].as_str() {
        "core" => print_counts("core", &run_core(&cases, rounds)),
        "ffi" => print_counts("ffi", &run_ffi(&cases, rounds)),
        "time" => time(&cases, rounds),
        m => fail(&format!("unknown mode {m:?} (core, ffi or time)")),
    }
}
