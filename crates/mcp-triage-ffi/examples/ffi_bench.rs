//! The cost of the C ABI over the core's own `classify`, for `bench/ffi-classify.sh`.
//!
//! ```text
//! ffi_bench core|ffi FILE [ROUNDS]   classify every exchange of FILE ROUNDS times (default 1)
//! ffi_bench time FILE [ROUNDS]       both, interleaved, timed: nanoseconds per exchange, ratio
//! ffi_bench gateway FILE [ROUNDS]    what a gateway module calls per exchange (below)
//! ```
//!
//! `gateway` (`run_gateway`) is the library's whole share of one exchange in the nginx module:
//! `mcpt_request_parse` of a `tools/call` request, `mcpt_classifier_new` with the head,
//! `mcpt_classifier_feed` with the body, `mcpt_classifier_finish`, `mcpt_record_write` of the
//! JSON line, and the frees; under callgrind it says where a gateway's instructions go without
//! starting nginx (bench/nginx-module-overhead.sh measures nginx itself).
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
    mcpt_classifier_feed, mcpt_classifier_finish, mcpt_classifier_free, mcpt_classifier_new,
    mcpt_classify, mcpt_outcome_name, mcpt_record_write, mcpt_request_free, mcpt_request_parse,
    mcpt_verdict_free, mcpt_verdict_outcome, outcome_code, McptCallOptions, McptClassifier,
    McptHeader, McptRecordFields, McptRequest, McptVerdict, MCPT_ID_NUMBER, MCPT_ID_STRING,
    MCPT_OK,
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
            request_method: std::ptr::null(),
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

/// The request every `gateway` exchange answers (the bench's own `tools/call`).
const GATEWAY_REQUEST: &[u8] =
    br#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"test_simple_text","arguments":{}}}"#;

fn check(what: &str, rc: i32) {
    if rc != MCPT_OK {
        fail(&format!("{what} returned {rc}: {}", last_error()));
    }
}

/// One exchange as the nginx module handles it (see the module documentation).
///
/// # Safety
/// Every pointer in `c` points into `c` (see `prepare`).
unsafe fn gateway_exchange(c: &Case, line: &mut [u8], counts: &mut Counts) {
    let mut req: *mut McptRequest = std::ptr::null_mut();
    let rc =
        unsafe { mcpt_request_parse(GATEWAY_REQUEST.as_ptr(), GATEWAY_REQUEST.len(), &mut req) };
    if rc != 1 {
        fail(&format!(
            "mcpt_request_parse returned {rc}: {}",
            last_error()
        ));
    }
    let mut cl: *mut McptClassifier = std::ptr::null_mut();
    let head = black_box(c.c_headers.as_ptr());
    check("mcpt_classifier_new", unsafe {
        mcpt_classifier_new(c.head.status, head, c.c_headers.len(), &c.opts, &mut cl)
    });
    check("mcpt_classifier_feed", unsafe {
        mcpt_classifier_feed(cl, black_box(c.body.as_ptr()), c.body.len())
    });
    let mut v: *mut McptVerdict = std::ptr::null_mut();
    check("mcpt_classifier_finish", unsafe {
        mcpt_classifier_finish(cl, &mut v)
    });
    let fields = McptRecordFields {
        record_id: b"0a1b2c3d4e5f6a7b8c9d0e1f".as_ptr(),
        record_id_len: 24,
        start_unix_s: 1_796_330_122.174,
        duration_ms: 2.0,
        path: b"/s/baseline/mcp?responseMode=json".as_ptr(),
        path_len: 33,
        session_id: b"ff2ac949c368d903edffc06928a80ccb".as_ptr(),
        session_id_len: 32,
        protocol_version: b"2025-11-25".as_ptr(),
        protocol_version_len: 10,
        http_status: c.head.status,
        request_bytes: GATEWAY_REQUEST.len() as u64,
        response_bytes: c.body.len() as u64,
        cancelled: 0,
    };
    let mut len = 0;
    check("mcpt_record_write", unsafe {
        mcpt_record_write(req, v, &fields, line.as_mut_ptr(), line.len(), &mut len)
    });
    black_box(&line[..len]);
    unsafe {
        counts[mcpt_verdict_outcome(v) as usize] += 1;
        mcpt_verdict_free(v);
        mcpt_classifier_free(cl);
        mcpt_request_free(req);
    }
}

/// The library's calls of a gateway exchange, for every case.
#[inline(never)]
fn run_gateway(cases: &[Case], rounds: usize) -> Counts {
    let mut counts = [0; 16];
    let mut line = vec![0u8; 64 * 1024];
    for _ in 0..rounds {
        for c in cases {
            // SAFETY: every pointer points into `c`, which outlives the call (see `prepare`).
            unsafe { gateway_exchange(c, &mut line, &mut counts) };
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
        fail("usage: ffi_bench core|ffi|time|gateway FILE [ROUNDS]");
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
        "gateway" => print_counts("gateway", &run_gateway(&cases, rounds)),
        m => fail(&format!("unknown mode {m:?} (core, ffi, time or gateway)")),
    }
}
