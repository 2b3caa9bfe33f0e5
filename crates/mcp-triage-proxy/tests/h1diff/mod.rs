//! The differential harness for the proxy's HTTP/1.1 (issue 41): generated request and
//! response messages ([`gen`], [`hostile`]) sent through the real proxy on 127.0.0.1 from a
//! raw client ([`client`]) to a raw upstream that logs every byte it reads ([`upstream`]),
//! both reading strictly ([`wire`]); the invariants per case and the records ([`check`]);
//! nginx on the same traffic as the reference ([`nginx`]).
//!
//! Environment: `H1DIFF_SEED` (the run's seed, hex or decimal), `H1DIFF_CASES` (how many
//! cases), `H1DIFF_CASE` (run only that case: a failure's replay), `H1DIFF_WORKERS`
//! (connections at once), `H1DIFF_NGINX_CASES`, `H1DIFF_IDLE_MS`.
#![allow(dead_code)]

pub mod check;
pub mod client;
pub mod gen;
pub mod hostile;
pub mod nginx;
pub mod upstream;
pub mod wire;

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::time::{Duration, Instant};

use mcp_triage_proxy::http::{ProxyHandle, ProxyOptions};
use mcp_triage_proxy::{LogWriter, MemoryConsumer, Record};

use check::{Failure, Kind, Seen};
use upstream::Upstream;

/// The seed the test command runs when none is given (any failure prints its own).
pub const DEFAULT_SEED: u64 = 0x4131_6831_6469_6666;

#[derive(Debug, Clone)]
pub struct Config {
    pub seed: u64,
    pub cases: u64,
    pub only: Option<u64>,
    pub workers: usize,
    pub idle: Duration,
    /// Only valid answers (the nginx comparison).
    pub valid_answers: bool,
    /// Only valid requests and answers.
    pub valid_only: bool,
}

fn env_u64(name: &str) -> Result<Option<u64>, String> {
    match std::env::var(name) {
        Err(_) => Ok(None),
        Ok(v) => {
            let t = v.trim();
            let parsed = match t.strip_prefix("0x") {
                Some(h) => u64::from_str_radix(h, 16),
                None => t.parse(),
            };
            parsed
                .map(Some)
                .map_err(|e| format!("{name}={v:?} is not a number: {e}"))
        }
    }
}

impl Config {
    /// From the environment, `cases` unless `H1DIFF_CASES` says otherwise.
    pub fn from_env(cases: u64) -> Result<Config, String> {
        Ok(Config {
            seed: env_u64("H1DIFF_SEED")?.unwrap_or(DEFAULT_SEED),
            cases: env_u64("H1DIFF_CASES")?.unwrap_or(cases),
            only: env_u64("H1DIFF_CASE")?,
            workers: env_u64("H1DIFF_WORKERS")?.unwrap_or(12) as usize,
            idle: Duration::from_millis(env_u64("H1DIFF_IDLE_MS")?.unwrap_or(3000)),
            valid_answers: false,
            valid_only: false,
        })
    }

    pub fn indexes(&self) -> Vec<u64> {
        match self.only {
            Some(i) => vec![i],
            None => (0..self.cases).collect(),
        }
    }
}

/// A run's figures.
#[derive(Debug, Default)]
pub struct Figures {
    pub cases: u64,
    pub requests: u64,
    pub messages: u64,
    pub failures: Vec<Failure>,
    pub seen: Vec<Seen>,
    pub seconds: f64,
}

impl Figures {
    pub fn count(&self, kind: Kind) -> usize {
        self.failures.iter().filter(|f| f.kind == kind).count()
    }

    /// The one-line summary the bench script reads, and the first failures of each family
    /// with the line that replays them.
    pub fn report(&self, seed: u64, what: &str) -> String {
        let mut s = format!(
            "h1diff {what}: seed=0x{seed:x} cases={} requests={} messages={} desyncs={} extra_upstream_requests={} rfc_violations={} disagreements={} nginx_differences={} seconds={:.1}\n",
            self.cases,
            self.requests,
            self.messages,
            self.count(Kind::Desync),
            self.count(Kind::ExtraRequest),
            self.count(Kind::Rfc),
            self.count(Kind::Disagree),
            self.count(Kind::Nginx),
            self.seconds
        );
        let mut by: BTreeMap<(Kind, String), Vec<&Failure>> = BTreeMap::new();
        for f in &self.failures {
            by.entry((f.kind, f.family.clone())).or_default().push(f);
        }
        for ((kind, family), fs) in by {
            s += &format!("  {kind:?} [{family}] x{}\n", fs.len());
            for f in fs.iter().take(2) {
                let what: String = f.what.chars().take(320).collect();
                s += &format!(
                    "    H1DIFF_SEED=0x{seed:x} H1DIFF_CASE={}: {what}\n",
                    f.index
                );
            }
        }
        s
    }
}

/// A proxy in front of `upstream` with short timeouts, so a hostile case that leaves a body
/// unfinished costs a second, not thirty.
pub async fn proxy(upstream: SocketAddr) -> (ProxyHandle, MemoryConsumer, LogWriter) {
    let mut o = ProxyOptions::new(&format!("http://{upstream}")).expect("an upstream URL");
    o.drain_timeout = Duration::from_secs(1);
    o.header_read_timeout = Duration::from_secs(2);
    o.body_read_timeout = Duration::from_secs(1);
    o.response_timeout = Duration::from_secs(5);
    o.max_connections = 4096;
    let records = MemoryConsumer::default();
    let (sink, writer) = LogWriter::start(None, vec![Box::new(records.clone())]);
    let p = mcp_triage_proxy::http::start("127.0.0.1:0".parse().expect("addr"), o, sink)
        .await
        .expect("the proxy starts on 127.0.0.1");
    (p, records, writer)
}

async fn finish(p: ProxyHandle, records: MemoryConsumer, writer: LogWriter) -> Vec<Record> {
    p.shutdown().await;
    let _ = tokio::task::spawn_blocking(move || writer.drain()).await;
    let v = records.0.lock().unwrap_or_else(|e| e.into_inner()).clone();
    v
}

/// Runs one case through `front` (the proxy or nginx) to `up`; its failures and outcomes.
pub async fn one_case(
    front: SocketAddr,
    up: &Upstream,
    case: &gen::Case,
    idle: Duration,
) -> (Vec<Failure>, Vec<Seen>) {
    for (q, r) in case.reqs.iter().zip(&case.resps) {
        up.script(&q.tag, r.clone());
    }
    let key = upstream::case_key(&case.reqs[0].tag).to_string();
    let client = match client::run(front, case, idle).await {
        Ok(c) => c,
        Err(e) => {
            let f = Failure {
                index: case.index,
                family: "client".into(),
                kind: Kind::Disagree,
                what: e,
            };
            return (vec![f], Vec::new());
        }
    };
    let log = up.settle(&key, Duration::from_secs(3)).await;
    if std::env::var_os("H1DIFF_DUMP").is_some() {
        dump(case, &client, &log);
    }
    up.forget(&key, case.reqs.iter().map(|q| q.tag.clone()));
    check::case(case, &client, &log)
}

/// Runs the configured cases through the proxy, `workers` connections at once, each worker
/// with its own proxy and upstream (so its records are its own).
pub async fn run_proxy(cfg: &Config) -> Figures {
    let started = Instant::now();
    let idx = cfg.indexes();
    let workers = cfg.workers.clamp(1, idx.len().max(1));
    let mut tasks = Vec::new();
    for w in 0..workers {
        let mine: Vec<u64> = idx.iter().copied().skip(w).step_by(workers).collect();
        let cfg = cfg.clone();
        tasks.push(tokio::spawn(async move { worker(&cfg, &mine).await }));
    }
    let mut f = Figures::default();
    for t in tasks {
        let part = t.await.expect("a worker ran to its end");
        f.cases += part.cases;
        f.requests += part.requests;
        f.messages += part.messages;
        f.failures.extend(part.failures);
        f.seen.extend(part.seen);
    }
    f.failures.sort_by_key(|x| x.index);
    f.seconds = started.elapsed().as_secs_f64();
    f
}

/// Cases per proxy: its records are checked and dropped after each batch, so a million
/// messages do not hold a million records.
const BATCH: usize = 500;

async fn worker(cfg: &Config, mine: &[u64]) -> Figures {
    let up = Upstream::start()
        .await
        .expect("the upstream listens on 127.0.0.1");
    let mut f = Figures::default();
    let keep_seen = cfg.indexes().len() <= 5000;
    for batch in mine.chunks(BATCH) {
        let (p, records, writer) = proxy(up.addr).await;
        let mut seen = Vec::new();
        for &i in batch {
            let case = if cfg.valid_only {
                gen::valid_case(cfg.seed, i, "p")
            } else {
                gen::case_with(cfg.seed, i, "p", cfg.valid_answers)
            };
            f.cases += 1;
            f.requests += case.reqs.len() as u64;
            f.messages += case.messages() as u64;
            let (fails, s) = one_case(p.local_addr(), &up, &case, cfg.idle).await;
            f.failures.extend(fails.into_iter().map(short));
            seen.extend(s);
        }
        let recs = finish(p, records, writer).await;
        f.failures
            .extend(check::records(&seen, &recs).into_iter().map(short));
        if keep_seen {
            f.seen.extend(seen);
        }
    }
    for o in up.orphans() {
        let what = format!("on a connection with no readable request: {o}");
        f.failures.push(short(Failure {
            index: mine.first().copied().unwrap_or(0),
            family: "upstream".into(),
            kind: Kind::Rfc,
            what,
        }));
    }
    f
}

/// A failure's text cut to a readable length (a long run may hold many).
fn short(mut f: Failure) -> Failure {
    if f.what.len() > 400 {
        f.what = f.what.chars().take(400).collect::<String>() + "…";
    }
    f
}

/// `H1DIFF_DUMP=1`: a replayed case's bytes both ways, to read a failure by.
fn dump(case: &gen::Case, client: &client::ClientSide, log: &upstream::CaseLog) {
    println!(
        "case {} (pipelined {}, cuts {:?})",
        case.index, case.pipelined, case.cuts
    );
    for (q, r) in case.reqs.iter().zip(&case.resps) {
        println!(
            "-- request {} [{} {:?}]\n{}",
            q.tag,
            q.family,
            q.class,
            String::from_utf8_lossy(&q.bytes)
        );
        println!(
            "-- scripted answer [{}]\n{}",
            r.family,
            String::from_utf8_lossy(&r.bytes)
        );
    }
    for u in &log.reqs {
        println!(
            "== upstream read {} (complete {}, {} body bytes)\n{}",
            u.tag,
            u.complete,
            u.body.len(),
            u.head
        );
    }
    println!("== upstream errors {:?}", log.errors);
    for g in &client.got {
        println!(
            "<< client got {} {:?} ({} body bytes)\n{}",
            g.status,
            g.marker,
            g.body.len(),
            g.head
        );
    }
    println!(
        "<< client end {:?}, extra {:?}",
        client.end,
        upstream::show(&client.extra)
    );
}
