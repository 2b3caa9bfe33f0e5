//! nginx as the reference: the same generated requests through nginx (a reverse proxy to its
//! own raw upstream), each request's fate (forwarded, refused with a status, connection closed)
//! set beside the proxy's.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use super::check::{Failure, Kind, Seen};
use super::gen::{self, Class};
use super::upstream::Upstream;
use super::Config;

/// The nginx binary, when one is installed.
pub fn find() -> Option<PathBuf> {
    let fixed = PathBuf::from("/usr/sbin/nginx");
    if fixed.exists() {
        return Some(fixed);
    }
    let out = Command::new("which").arg("nginx").output().ok()?;
    let p = String::from_utf8_lossy(&out.stdout).trim().to_string();
    (!p.is_empty()).then(|| PathBuf::from(p))
}

/// An nginx in the foreground, its files in a temp dir; killed (by its own pid) on drop.
pub struct Nginx {
    child: Child,
    pub addr: SocketAddr,
    dir: PathBuf,
}

impl Drop for Nginx {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

fn free_port() -> std::io::Result<u16> {
    Ok(std::net::TcpListener::bind("127.0.0.1:0")?
        .local_addr()?
        .port())
}

/// Starts nginx as a reverse proxy to `upstream`, listening on 127.0.0.1 only.
pub async fn start(bin: &Path, upstream: SocketAddr) -> Result<Nginx, String> {
    let dir = std::env::temp_dir().join(format!(
        "h1diff-nginx-{}-{}",
        std::process::id(),
        upstream.port()
    ));
    std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let port = free_port().map_err(|e| format!("a free port: {e}"))?;
    let d = dir.display();
    let conf = format!(
        "daemon off; master_process off; worker_processes 1; pid {d}/nginx.pid; error_log {d}/error.log warn;\n\
         events {{ worker_connections 1024; }}\n\
         http {{ access_log off; client_body_temp_path {d}/body; proxy_temp_path {d}/proxy;\n\
           fastcgi_temp_path {d}/fcgi; uwsgi_temp_path {d}/uwsgi; scgi_temp_path {d}/scgi;\n\
           client_header_timeout 2s; client_body_timeout 1s; keepalive_timeout 10s; send_timeout 5s;\n\
           client_max_body_size 10m;\n\
           server {{ listen 127.0.0.1:{port}; location / {{ proxy_pass http://{upstream};\n\
             proxy_http_version 1.1; proxy_buffering off; proxy_read_timeout 5s; }} }} }}\n"
    );
    let path = dir.join("nginx.conf");
    std::fs::write(&path, conf).map_err(|e| format!("{}: {e}", path.display()))?;
    let child = Command::new(bin)
        .arg("-p")
        .arg(&dir)
        .arg("-c")
        .arg(&path)
        .arg("-e")
        .arg(dir.join("error.log"))
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| format!("{} does not start: {e}", bin.display()))?;
    let addr: SocketAddr = ([127, 0, 0, 1], port).into();
    let n = Nginx { child, addr, dir };
    for _ in 0..200 {
        if tokio::net::TcpStream::connect(addr).await.is_ok() {
            return Ok(n);
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    Err(format!("nginx did not listen on {addr} within 2 s"))
}

/// Families where nginx 1.22 itself departs from the RFC, so it is no reference there:
/// `Transfer-Encoding:<HTAB>chunked` is `chunked` (a field value's leading OWS includes HTAB,
/// RFC 9110 §5.5), which nginx answers with 501.
const NGINX_OFF_RFC: [&str; 1] = ["TE leading tab"];

/// One row of the table of choices: a family where the RFC lets a server choose, and what
/// each chose.
pub type Choices = BTreeMap<(String, String, String), usize>;

/// Runs `cfg`'s cases through nginx and compares each request's fate with `proxy` (the proxy
/// run's outcomes of the same cases). Where the RFC leaves no choice (the request is valid,
/// or must be refused) a difference is a failure; elsewhere it is counted in the table.
pub async fn compare(
    bin: &Path,
    cfg: &Config,
    proxy: &[Seen],
) -> Result<(Vec<Failure>, Choices, u64), String> {
    let up = Upstream::start()
        .await
        .map_err(|e| format!("the upstream: {e}"))?;
    let ng = start(bin, up.addr).await?;
    let by: BTreeMap<(u64, usize), &Seen> = proxy
        .iter()
        .map(|s| ((s.index, tag_n(&s.tag)), s))
        .collect();
    let mut fails = Vec::new();
    let mut choices = Choices::new();
    let mut compared = 0;
    let idx = cfg.indexes();
    let workers = cfg.workers.clamp(1, idx.len().max(1));
    let mut tasks = Vec::new();
    for w in 0..workers {
        let mine: Vec<u64> = idx.iter().copied().skip(w).step_by(workers).collect();
        let (cfg, up, addr) = (cfg.clone(), up.clone(), ng.addr);
        tasks.push(tokio::spawn(async move {
            let mut out = Vec::new();
            for i in mine {
                let case = gen::case_with(cfg.seed, i, "n", cfg.valid_answers);
                let (_, seen) = super::one_case(addr, &up, &case, cfg.idle).await;
                out.push((i, case, seen));
            }
            out
        }));
    }
    let mut runs = Vec::new();
    for t in tasks {
        runs.extend(t.await.map_err(|e| format!("an nginx worker: {e}"))?);
    }
    runs.sort_by_key(|r| r.0);
    for (i, case, seen) in runs {
        for (j, s) in seen.iter().enumerate() {
            let Some(p) = by.get(&(i, j)) else { break };
            let (pw, nw) = (fate(p), fate(s));
            compared += 1;
            let q = &case.reqs[j];
            if taken(&pw) != taken(&nw) {
                match q.class {
                    _ if NGINX_OFF_RFC.contains(&q.family) => {
                        let family = format!("{} (nginx off the RFC)", q.family);
                        *choices.entry((family, pw.clone(), nw.clone())).or_default() += 1
                    }
                    Class::Choice => {
                        *choices
                            .entry((q.family.to_string(), pw.clone(), nw.clone()))
                            .or_default() += 1
                    }
                    _ => fails.push(Failure {
                        index: i,
                        family: q.family.to_string(),
                        kind: Kind::Nginx,
                        what: format!("request {j} ({:?}): the proxy {pw}, nginx {nw}", q.class),
                    }),
                }
            }
            if !taken(&nw) || !taken(&pw) {
                break;
            }
        }
    }
    Ok((fails, choices, compared))
}

/// Whether the request was taken: the upstream read it whole. Refusals by status, a closed
/// connection and an answer before a broken body all count as not taken (400, 501 and 431
/// are all refusals; which one is each server's choice).
fn fate(s: &Seen) -> String {
    if s.complete {
        return "forwarded".into();
    }
    match &s.verdict {
        super::check::Verdict::Own(st) => format!("did not forward ({st})"),
        _ => "did not forward (closed)".into(),
    }
}

fn taken(f: &str) -> bool {
    f == "forwarded"
}

fn tag_n(tag: &str) -> usize {
    tag.rsplit_once('-')
        .and_then(|(_, n)| n.parse().ok())
        .unwrap_or(usize::MAX)
}
