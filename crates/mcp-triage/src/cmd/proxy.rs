//! `mcp-triage proxy` and `mcp-triage wrap`: the observer (crate `mcp-triage-proxy`).

use crate::exit::Exit;
use std::io::Write;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use clap::Args;
use mcp_triage_core::Limits;
use mcp_triage_proxy::http::{start, HostCheck, ProxyError, ProxyOptions};
use mcp_triage_proxy::install::InstallError;
use mcp_triage_proxy::otel::OtlpError;
use mcp_triage_proxy::stdio::WrapOptions;
use mcp_triage_proxy::tls::TlsError;
use mcp_triage_proxy::{open_append, LogWriter, ObserveOptions, WriterStats};

pub const PROXY_EXAMPLES: &str = "\
Examples:
  mcp-triage proxy --listen 127.0.0.1:8766 --upstream http://127.0.0.1:8765 --log calls.jsonl
  # then point the client at http://127.0.0.1:8766/mcp instead of http://127.0.0.1:8765/mcp
  mcp-triage proxy --upstream http://127.0.0.1:3000 --redact-header X-Api-Key --log-arguments

Every byte passes unchanged; one JSON line per exchange goes to --log (stdout without it).
SIGTERM or Ctrl-C stops accepting, lets open exchanges finish (--drain-timeout) and writes
every record before exiting.";

pub const WRAP_EXAMPLES: &str = "\
Examples:
  mcp-triage wrap --log fs.jsonl -- npx -y @modelcontextprotocol/server-filesystem /tmp
  mcp-triage wrap --install filesystem --config ~/.cursor/mcp.json --log ~/fs.jsonl
  mcp-triage wrap --uninstall filesystem --config ~/.cursor/mcp.json

stdin and stdout are relayed unchanged line by line; records go only to --log. The exit code
is the server's.";

/// Options shared by proxy and wrap.
#[derive(Args)]
#[command(next_help_heading = "Records")]
pub struct RecordArgs {
    /// Append records (JSON Lines) to this file.
    #[arg(long, value_name = "FILE.jsonl")]
    log: Option<PathBuf>,
    /// Put tool arguments into records (otherwise only their SHA-256 and size).
    #[arg(long)]
    log_arguments: bool,
    /// Put request and response headers into records (redacted names left out).
    #[arg(long)]
    log_headers: bool,
    /// A header whose value never reaches a record or a capture (repeatable). Authorization,
    /// Proxy-Authorization, Cookie, Set-Cookie, X-Api-Key, Api-Key, X-Auth-Token,
    /// X-Access-Token, X-Amz-Security-Token, X-Goog-Api-Key, X-Csrf-Token, Private-Token,
    /// Ocp-Apim-Subscription-Key and X-Functions-Key always are.
    #[arg(long, value_name = "NAME")]
    redact_header: Vec<String>,
    /// Largest JSON response body classified; larger ones are forwarded but not classified.
    #[arg(long, value_name = "BYTES", default_value_t = Limits::DEFAULT.max_body_bytes)]
    max_body_bytes: u64,
    /// Largest SSE stream classified before its response.
    #[arg(long, value_name = "BYTES", default_value_t = Limits::DEFAULT.max_stream_bytes)]
    max_stream_bytes: u64,
    /// Largest request body (or stdio line) read to find its JSON-RPC message.
    #[arg(long, value_name = "BYTES", default_value_t = 4 << 20)]
    max_request_bytes: u64,
    /// Most open tasks remembered to link tasks/* exchanges and the task's end to the
    /// tools/call that created it; past it the least recently polled is recorded TASK_UNFINISHED.
    #[arg(long, value_name = "N", default_value_t = mcp_triage_proxy::tasks::DEFAULT_MAX_OPEN_TASKS as u64,
          value_parser = clap::value_parser!(u64).range(1..=1_000_000))]
    max_open_tasks: u64,
    /// Seconds an open task is remembered without a tasks/get before it is recorded
    /// TASK_UNFINISHED.
    #[arg(long, value_name = "SECS", default_value_t = mcp_triage_proxy::tasks::DEFAULT_OPEN_TASK_TTL.as_secs(),
          value_parser = clap::value_parser!(u64).range(1..=604_800))]
    open_task_ttl: u64,
    /// Read draft proposals into the records' verdicts, comma-separated: `tool-failure`
    /// (SEP #3313: a declared failure class in isError results), `sep-2145` (unknown-tool and
    /// output-schema failures as isError results); `all`, `none`.
    #[arg(long, value_name = "LIST", default_value = "none")]
    draft: mcp_triage_core::Drafts,
    /// Export spans and the mcp.client.operation.duration histogram to this OTLP/HTTP collector
    /// (http://host:4318 or https://host:4318; /v1/traces and /v1/metrics are appended). Headers
    /// the collector wants (an API key) come from OTEL_EXPORTER_OTLP_HEADERS (key=value,...).
    #[arg(help_heading = "OpenTelemetry", long, value_name = "URL")]
    otlp: Option<String>,
    /// PEM file of certificates to trust for an https --otlp collector, besides Mozilla's roots.
    /// Repeatable.
    #[arg(
        help_heading = "OpenTelemetry",
        long,
        value_name = "FILE",
        requires = "otlp"
    )]
    otlp_ca: Vec<PathBuf>,
    /// Seconds between metric exports.
    #[arg(
        help_heading = "OpenTelemetry",
        long,
        value_name = "SECS",
        default_value_t = 10.0
    )]
    otlp_metrics_interval: f64,
    #[command(flatten)]
    ui: super::ui_args::UiArgs,
}

impl RecordArgs {
    fn observe(&self) -> ObserveOptions {
        ObserveOptions {
            log_arguments: self.log_arguments,
            log_headers: self.log_headers,
            redact_headers: self.redact_header.clone(),
            limits: Limits {
                max_body_bytes: self.max_body_bytes,
                max_stream_bytes: self.max_stream_bytes,
                ..Limits::DEFAULT
            },
            max_request_bytes: self.max_request_bytes,
            max_open_tasks: self.max_open_tasks as usize,
            open_task_ttl: std::time::Duration::from_secs(self.open_task_ttl),
            drafts: self.draft,
        }
    }

    /// The OpenTelemetry consumer, when --otlp is given. Built before the runtime exists: its
    /// blocking HTTP client must not live on a runtime thread.
    fn consumers(
        &self,
        peer: mcp_triage_proxy::otel::Peer,
    ) -> Result<Vec<Box<dyn mcp_triage_proxy::RecordConsumer>>, RunError> {
        let Some(url) = &self.otlp else {
            return Ok(Vec::new());
        };
        let secs = self.otlp_metrics_interval;
        if !(secs.is_finite() && secs > 0.0) {
            return Err(RunError::OtlpInterval);
        }
        let mut ca = Vec::new();
        for path in &self.otlp_ca {
            let pem = std::fs::read(path).map_err(|source| RunError::OtlpCa {
                path: path.clone(),
                source,
            })?;
            let source = format!("--otlp-ca {}", path.display());
            ca.extend(mcp_triage_proxy::tls::certificates_from_pem(&pem, &source)?);
        }
        let c = mcp_triage_proxy::otel::OtlpConsumer::new(
            url,
            peer,
            Duration::from_secs_f64(secs),
            &ca,
        )?;
        Ok(vec![Box::new(c)])
    }

    /// The record writer on --log (stdout without it, when `stdout_default`). A log whose last
    /// line was torn (an earlier proxy killed mid-write) gets its next record on a new line.
    fn start_writer(
        &self,
        stdout_default: bool,
        consumers: Vec<Box<dyn mcp_triage_proxy::RecordConsumer>>,
    ) -> Result<(mcp_triage_proxy::RecordSink, LogWriter), RunError> {
        let (out, torn): (Option<Box<dyn Write + Send>>, bool) = match &self.log {
            Some(p) => {
                let log = open_append(p).map_err(|source| RunError::Log {
                    path: p.clone(),
                    source,
                })?;
                (Some(Box::new(log.file)), log.torn)
            }
            None if stdout_default => (Some(Box::new(std::io::stdout())), false),
            None => (None, false),
        };
        Ok(LogWriter::start_after(out, torn, consumers))
    }
}

#[derive(Args)]
pub struct ProxyArgs {
    /// Address to listen on (port 0 picks a free port).
    #[arg(
        help_heading = "Listening and upstream",
        long,
        value_name = "ADDR",
        default_value = "127.0.0.1:8766"
    )]
    listen: SocketAddr,
    /// The server's origin, http://host:port or https://host:port; path and query come from
    /// each request.
    #[arg(help_heading = "Listening and upstream", long, value_name = "ORIGIN")]
    upstream: String,
    /// PEM file of certificates to trust for an https upstream, besides Mozilla's roots (a
    /// private CA or a self-signed server certificate). Repeatable.
    #[arg(help_heading = "Listening and upstream", long, value_name = "FILE")]
    upstream_ca: Vec<PathBuf>,
    /// Seconds reaching the upstream may take (TCP connect, and the TLS handshake for https);
    /// past it the client gets a 502 and the record a CONNECTION_ERROR.
    #[arg(
        help_heading = "Listening and upstream",
        long,
        value_name = "SECS",
        default_value_t = 10.0
    )]
    connect_timeout: f64,
    /// DNS-rebinding protection: refuse (403, and a REFUSED record) requests whose Host is not a
    /// loopback name (localhost, 127.0.0.0/8 in any form such as 127.1, [::1]) and requests
    /// whose Origin, when present, is not a loopback origin. auto: on when --listen is a
    /// loopback address.
    #[arg(help_heading = "Host and Origin checks", long, value_name = "WHEN", value_enum, default_value_t = HostCheckArg::Auto)]
    host_check: HostCheckArg,
    /// A Host name to accept besides loopback names (repeatable); also accepted as the host of an
    /// Origin.
    #[arg(help_heading = "Host and Origin checks", long, value_name = "NAME")]
    allow_host: Vec<String>,
    /// An Origin to accept besides loopback origins, scheme://host[:port] (repeatable).
    #[arg(help_heading = "Host and Origin checks", long, value_name = "ORIGIN")]
    allow_origin: Vec<String>,
    /// Seconds the proxy waits for the next bytes of a request body (a client that stalls
    /// mid-body); past it the client gets a 408 and the record a TIMEOUT.
    #[arg(
        help_heading = "Limits",
        long,
        value_name = "SECS",
        default_value_t = 30.0
    )]
    body_read_timeout: f64,
    /// Seconds a whole request body may take from its head (a client that trickles a byte at a
    /// time, each gap within --body-read-timeout); past it the client gets a 408 and the record
    /// a TIMEOUT. 0: no limit.
    #[arg(
        help_heading = "Limits",
        long,
        value_name = "SECS",
        default_value_t = 300.0
    )]
    body_deadline: f64,
    /// Seconds the proxy waits for the upstream's response head once the request was sent;
    /// past it the client gets a 504 and the record a TIMEOUT. 0: no limit. A response that has
    /// begun (an SSE stream) is never cut by it.
    #[arg(
        help_heading = "Limits",
        long,
        value_name = "SECS",
        default_value_t = 300.0
    )]
    response_timeout: f64,
    /// Most client connections open at once (each also holds an upstream connection); past it a
    /// new connection gets a 503 and is closed.
    #[arg(help_heading = "Limits", long, value_name = "N", default_value_t = mcp_triage_proxy::http::DEFAULT_MAX_CONNECTIONS as u32,
          value_parser = clap::value_parser!(u32).range(1..=1_000_000))]
    max_connections: u32,
    /// On shutdown, seconds open exchanges may still take before they are closed.
    #[arg(
        help_heading = "Limits",
        long,
        value_name = "SECS",
        default_value_t = 10.0
    )]
    drain_timeout: f64,
    /// A query parameter whose value records and captures show as REDACTED (repeatable),
    /// besides access_token, refresh_token, id_token, token, code, code_verifier,
    /// client_secret, key, api_key, apikey, api-key, password, passwd, secret, signature, sig,
    /// auth, X-Amz-Signature, X-Amz-Security-Token and X-Goog-Signature, which always are. The
    /// upstream still gets the value.
    #[arg(help_heading = "Records", long, value_name = "NAME")]
    redact_query_param: Vec<String>,
    #[command(flatten)]
    records: RecordArgs,
    #[command(flatten)]
    capture: super::capture_args::CaptureArgs,
    /// Threads that forward traffic. One is the default: each client connection and its upstream
    /// connection run as one task, so a second thread only helps when one core is saturated
    /// (many busy connections); next to a server on a small machine it mostly adds wakeups
    /// between threads (measured in bench/proxy-overhead.sh). With one thread a response is
    /// observed after it was written to the client; with several, before (so a resend on
    /// another connection can never overtake the record of the attempt it repeats).
    #[arg(help_heading = "Forwarding threads", long, value_name = "N", default_value_t = 1, value_parser = clap::value_parser!(u16).range(1..=1024))]
    threads: u16,
    /// After traffic, keep the forwarding thread polling its sockets for up to this many
    /// microseconds before it sleeps, yielding the core to any other runnable thread at each
    /// turn; 0: sleep at once. On a virtual machine a sleeping thread takes tens of microseconds
    /// to wake, twice per exchange; polling removed nearly all of the proxy's added latency at
    /// one exchange at a time in bench/proxy-overhead.sh. The window adapts below this ceiling
    /// as Linux's guest halt-polling does: quiet periods the ceiling would have caught open it,
    /// longer ones close it, so a slow server or a client that calls now and then costs no
    /// polling. Default 200 with one forwarding thread; with --threads above 1 only 0 is
    /// accepted.
    #[arg(help_heading = "Forwarding threads", long, value_name = "MICROS", value_parser = clap::value_parser!(u64).range(0..=10_000))]
    spin_us: Option<u64>,
}

#[derive(Clone, Copy, clap::ValueEnum)]
enum HostCheckArg {
    Auto,
    On,
    Off,
}

#[derive(Args)]
pub struct WrapArgs {
    /// Rewrite server NAME of --config to start through this wrapper (a backup is kept).
    #[arg(long, value_name = "NAME", conflicts_with_all = ["uninstall", "command"], requires = "config")]
    install: Option<String>,
    /// Undo --install for server NAME of --config.
    #[arg(
        long,
        value_name = "NAME",
        conflicts_with = "command",
        requires = "config"
    )]
    uninstall: Option<String>,
    /// The mcp.json to change (Claude/Cursor `mcpServers` or VS Code `servers`).
    #[arg(long, value_name = "FILE")]
    config: Option<PathBuf>,
    #[command(flatten)]
    records: RecordArgs,
    #[command(flatten)]
    capture: super::capture_args::CaptureArgs,
    /// The server command and its arguments, after `--`.
    #[arg(last = true, value_name = "CMD")]
    command: Vec<String>,
}

/// Why `proxy` or `wrap` did not run (lost records are exit 1, not this).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum RunError {
    /// `--otlp-metrics-interval` not above 0.
    #[error("--otlp-metrics-interval must be a number of seconds > 0")]
    OtlpInterval,
    /// An `--otlp-ca` file cannot be read.
    #[error("cannot read --otlp-ca {}: {source}", path.display())]
    OtlpCa {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// A CA file holds no usable certificate.
    #[error(transparent)]
    Tls(#[from] TlsError),
    /// The OTLP exporter cannot be set up.
    #[error(transparent)]
    Otlp(#[from] OtlpError),
    /// The `--log` file cannot be opened.
    #[error("cannot open --log {}: {source}", path.display())]
    Log {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// The tokio runtime did not start.
    #[error("cannot start the runtime: {0}")]
    Runtime(#[source] std::io::Error),
    /// The upstream, its CA or the listener cannot be used.
    #[error(transparent)]
    Proxy(#[from] ProxyError),
    /// An `--upstream-ca` file cannot be read.
    #[error("--upstream-ca {}: {source}", path.display())]
    UpstreamCa {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// `--upstream-ca` with a plain-HTTP upstream.
    #[error("--upstream-ca applies to an https:// --upstream only")]
    UpstreamCaNotHttps,
    /// `--drain-timeout` below 0.
    #[error("--drain-timeout must be a number of seconds >= 0")]
    DrainTimeout,
    /// `--connect-timeout` out of range.
    #[error("--connect-timeout must be a number of seconds above 0 and at most 3600")]
    ConnectTimeout,
    /// `--spin-us` with more than one forwarding thread.
    #[error("--spin-us works with one forwarding thread: leave out --threads or use --threads 1")]
    SpinWithThreads,
    /// An `--allow-origin` that is not an origin.
    #[error("--allow-origin {0:?}: an origin is scheme://host[:port] (http or https, no path)")]
    AllowOrigin(String),
    /// An `--allow-host` with a scheme, path or space.
    #[error("--allow-host {0:?}: give a host name without scheme or path")]
    AllowHost(String),
    /// A limit in seconds where 0 means no limit, out of range.
    #[error("{0} must be a number of seconds from 0 (no limit) to 86400")]
    SecondsOrOff(&'static str),
    /// A limit in seconds, out of range.
    #[error("{0} must be a number of seconds above 0 and at most 86400")]
    Seconds(&'static str),
    /// `--capture` did not start (the capture writer's own sentence).
    #[error(transparent)]
    Capture(#[from] mcp_triage_proxy::capture::CaptureError),
    /// The `--ui` listener did not start.
    #[error(transparent)]
    Ui(#[from] super::ui_args::UiError),
    /// `wrap --install`: this binary's path is unknown.
    #[error("cannot find this binary: {0}")]
    CurrentExe(#[source] std::io::Error),
    /// `wrap --install`: a path cannot be made absolute.
    #[error(transparent)]
    Path(std::io::Error),
    /// `wrap --install` or `--uninstall` failed.
    #[error(transparent)]
    Install(#[from] InstallError),
    /// `wrap` without a server command.
    #[error("wrap needs a server command after `--`, or --install/--uninstall NAME --config FILE")]
    NoCommand,
    /// The wrapped server could not be run or relayed.
    #[error(transparent)]
    Wrap(std::io::Error),
}

fn runtime() -> Result<tokio::runtime::Runtime, RunError> {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(RunError::Runtime)
}

/// The forwarding options `proxy`'s flags set, each checked (the capture is added later).
fn proxy_options(args: &ProxyArgs) -> Result<ProxyOptions, RunError> {
    let mut options = ProxyOptions::new(&args.upstream)?;
    for path in &args.upstream_ca {
        let pem = std::fs::read(path).map_err(|source| RunError::UpstreamCa {
            path: path.clone(),
            source,
        })?;
        options.add_upstream_ca_pem(&pem, &path.display().to_string())?;
    }
    if !args.upstream_ca.is_empty() && options.upstream.scheme_str() != Some("https") {
        return Err(RunError::UpstreamCaNotHttps);
    }
    if !(args.drain_timeout.is_finite() && args.drain_timeout >= 0.0) {
        return Err(RunError::DrainTimeout);
    }
    options.drain_timeout = Duration::from_secs_f64(args.drain_timeout);
    if !(args.connect_timeout.is_finite()
        && args.connect_timeout > 0.0
        && args.connect_timeout <= 3600.0)
    {
        return Err(RunError::ConnectTimeout);
    }
    options.connect_timeout = Duration::from_secs_f64(args.connect_timeout);
    options.spin = match args.spin_us {
        Some(us) if us > 0 && args.threads > 1 => return Err(RunError::SpinWithThreads),
        Some(us) => Duration::from_micros(us),
        None if args.threads > 1 => Duration::ZERO,
        None => mcp_triage_proxy::http::DEFAULT_SPIN,
    };
    options.observe = args.records.observe();
    options.host_check = match args.host_check {
        HostCheckArg::Auto => HostCheck::Auto,
        HostCheckArg::On => HostCheck::On,
        HostCheckArg::Off => HostCheck::Off,
    };
    for origin in &args.allow_origin {
        let authority = origin
            .strip_prefix("http://")
            .or_else(|| origin.strip_prefix("https://"))
            .map(|a| a.trim_end_matches('/'));
        if authority.is_none_or(|a| a.is_empty() || a.contains(['/', '?', '#', '@'])) {
            return Err(RunError::AllowOrigin(origin.clone()));
        }
    }
    if let Some(bad) = args
        .allow_host
        .iter()
        .find(|h| h.is_empty() || h.contains(['/', ' ']))
    {
        return Err(RunError::AllowHost(bad.clone()));
    }
    options.allowed_hosts = args.allow_host.clone();
    options.allowed_origins = args.allow_origin.clone();
    options.redact_query_params = args.redact_query_param.clone();
    options.body_read_timeout = seconds("--body-read-timeout", args.body_read_timeout, false)?;
    options.body_deadline = seconds("--body-deadline", args.body_deadline, true)?;
    options.response_timeout = seconds("--response-timeout", args.response_timeout, true)?;
    options.max_connections = args.max_connections as usize;
    Ok(options)
}

pub fn run_proxy(args: ProxyArgs) -> Result<ExitCode, RunError> {
    let mut options = proxy_options(&args)?;
    let peer = mcp_triage_proxy::otel::Peer {
        address: options.upstream.host().map(str::to_string),
        port: Some(options.upstream_port()),
    };
    let capture = args
        .capture
        .start(&args.records.redact_header, &args.redact_query_param)?;
    options.capture = capture.as_ref().map(|(c, _)| c.clone());
    let capture_writer = capture.map(|(_, w)| w);
    let mut consumers = args.records.consumers(peer)?;
    let ui_hub = args.records.ui.hub(
        options
            .upstream
            .authority()
            .map_or_else(|| args.upstream.clone(), |a| a.to_string()),
    );
    super::ui_args::UiArgs::add_consumer(ui_hub.as_ref(), &mut consumers);
    let ui_guard = mcp_triage_proxy::ui::UiGuard {
        host_check: options.host_check,
        allowed_hosts: options.allowed_hosts.clone(),
        allowed_origins: options.allowed_origins.clone(),
        token: None, // from --ui-token, by UiArgs::start
    };
    let (sink, writer) = args.records.start_writer(true, consumers)?;
    let rt = if args.threads == 1 {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
    } else {
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(usize::from(args.threads))
            .enable_all()
            .build()
    }
    .map_err(RunError::Runtime)?;
    let spin = options.spin;
    rt.block_on(async move {
        let handle = start(args.listen, options, sink).await?;
        let spin = if spin.is_zero() {
            "off".to_string()
        } else {
            format!("adaptive, up to {} µs", spin.as_micros())
        };
        eprintln!(
            "mcp-triage proxy: {} -> {} (allocator: {}, spin: {spin})",
            handle.base_url(),
            args.upstream.trim_end_matches('/'),
            crate::allocator::name()
        );
        let ui = args
            .records
            .ui
            .start("mcp-triage proxy", ui_hub, ui_guard)
            .await?;
        shutdown_signal().await;
        eprintln!("mcp-triage proxy: stopping; draining open exchanges");
        let refused = handle.refused_connections();
        if refused > 0 {
            eprintln!(
                "mcp-triage proxy: {refused} connection(s) were refused with 503 at the --max-connections limit"
            );
        }
        handle.shutdown().await;
        if let Some(ui) = ui {
            ui.shutdown().await;
        }
        Ok::<_, RunError>(())
    })?;
    drop(rt);
    let stats = writer.drain();
    let code = report_records("mcp-triage proxy", &stats);
    if let Some(w) = capture_writer {
        if !super::capture_args::report_capture("mcp-triage proxy", &w.drain()) {
            return Ok(Exit::Failed.into());
        }
    }
    Ok(code)
}

pub fn run_wrap(args: WrapArgs) -> Result<ExitCode, RunError> {
    if let (Some(name), Some(config)) = (args.install.as_ref(), args.config.as_ref()) {
        let exe = std::env::current_exe().map_err(RunError::CurrentExe)?;
        let log = match &args.records.log {
            Some(l) => std::path::absolute(l).map_err(RunError::Path)?,
            None => std::path::absolute(config)
                .map_err(RunError::Path)?
                .with_file_name(format!("mcp-triage-{name}.jsonl")),
        };
        mcp_triage_proxy::install::install(config, name, &exe, &log)?;
        eprintln!(
            "mcp-triage wrap: {name} in {} now starts through the wrapper, records to {} (backup: {})",
            config.display(),
            log.display(),
            mcp_triage_proxy::install::backup_path(config).display()
        );
        return Ok(ExitCode::SUCCESS);
    }
    if let (Some(name), Some(config)) = (args.uninstall.as_ref(), args.config.as_ref()) {
        mcp_triage_proxy::install::uninstall(config, name)?;
        eprintln!("mcp-triage wrap: {name} in {} restored", config.display());
        return Ok(ExitCode::SUCCESS);
    }
    let Some((command, rest)) = args.command.split_first() else {
        return Err(RunError::NoCommand);
    };
    let capture = args.capture.start(&args.records.redact_header, &[])?;
    let options = WrapOptions {
        command: command.clone(),
        args: rest.to_vec(),
        observe: args.records.observe(),
        capture: capture.as_ref().map(|(c, _)| c.clone()),
    };
    let capture_writer = capture.map(|(_, w)| w);
    // Records never go to stdout: it carries the protocol.
    let mut consumers = args
        .records
        .consumers(mcp_triage_proxy::otel::Peer::default())?;
    let ui_server = std::path::Path::new(command)
        .file_name()
        .map_or_else(|| command.clone(), |n| n.to_string_lossy().into_owned());
    let ui_hub = args.records.ui.hub(ui_server);
    super::ui_args::UiArgs::add_consumer(ui_hub.as_ref(), &mut consumers);
    let (sink, writer) = args.records.start_writer(false, consumers)?;
    let rt = runtime()?;
    let _ui = rt.block_on(args.records.ui.start(
        "mcp-triage wrap",
        ui_hub,
        mcp_triage_proxy::ui::UiGuard::default(),
    ))?;
    let code = rt.block_on(mcp_triage_proxy::stdio::run(options, sink));
    // The relay tasks hold no sink once run returns; shut the runtime down so stdin's blocking
    // reader thread does not keep the process alive.
    rt.shutdown_timeout(Duration::from_millis(100));
    let exit = code.map_err(RunError::Wrap)?;
    let mut code = exit.code;
    if let Some(problem) = exit.relay.problem() {
        // Output the server wrote did not reach the client: not a clean run, whatever the
        // server's own exit code says.
        eprintln!("mcp-triage wrap: {problem}");
        if code == 0 {
            code = 1;
        }
    }
    let stats = writer.drain();
    if let Some(w) = capture_writer {
        // `options` (and so the capture handle) went with the runtime's tasks.
        if !super::capture_args::report_capture("mcp-triage wrap", &w.drain()) && code == 0 {
            report_records("mcp-triage wrap", &stats);
            return Ok(Exit::Failed.into());
        }
    }
    if stats.write_errors > 0 {
        // The server's exit code is the wrapper's, except that a clean exit with lost records
        // is not clean.
        report_records("mcp-triage wrap", &stats);
        if code == 0 {
            return Ok(Exit::Failed.into());
        }
    }
    // the wrapped server's own status (a status past 255 cannot be passed on: Failed)
    Ok(u8::try_from(code).map_or(Exit::Failed.into(), ExitCode::from))
}

/// A limit in seconds: finite, above 0 (or 0 when `zero_is_off`), at most a day.
fn seconds(flag: &'static str, secs: f64, zero_is_off: bool) -> Result<Duration, RunError> {
    let ok = secs.is_finite() && secs <= 86_400.0 && (secs > 0.0 || (zero_is_off && secs == 0.0));
    if !ok {
        return Err(if zero_is_off {
            RunError::SecondsOrOff(flag)
        } else {
            RunError::Seconds(flag)
        });
    }
    Ok(Duration::from_secs_f64(secs))
}

/// Says how many records reached the log and how many a write error lost; a loss is exit
/// status 1 (a log that silently misses records is worse than a failed run).
fn report_records(who: &str, stats: &WriterStats) -> ExitCode {
    if stats.write_errors == 0 {
        eprintln!("{who}: {} record(s) written", stats.records);
        return ExitCode::SUCCESS;
    }
    eprintln!(
        "{who}: {} record(s) written, {} lost: {} write(s) to the log failed",
        stats.records, stats.lost, stats.write_errors
    );
    Exit::Failed.into()
}

async fn shutdown_signal() {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{signal, SignalKind};
        match signal(SignalKind::terminate()) {
            Ok(mut term) => {
                tokio::select! {
                    _ = tokio::signal::ctrl_c() => {}
                    _ = term.recv() => {}
                }
            }
            Err(_) => {
                let _ = tokio::signal::ctrl_c().await;
            }
        }
    }
    #[cfg(not(unix))]
    {
        let _ = tokio::signal::ctrl_c().await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cmd::args_testing::parsed;

    /// `--draft` reaches the observer's options, which every classifier context of the proxy
    /// and of `wrap` reads; without it every draft is off, so records do not change.
    #[test]
    fn draft_reaches_the_observer() {
        let p: ProxyArgs = parsed(&[
            "--upstream",
            "http://127.0.0.1:9",
            "--draft",
            "tool-failure",
        ]);
        let o = p.records.observe();
        assert!(o.drafts.tool_failure && !o.drafts.sep_2145);
        let w: WrapArgs = parsed(&["--draft", "all", "--", "server"]);
        assert_eq!(w.records.observe().drafts, mcp_triage_core::Drafts::ALL);
        let p: ProxyArgs = parsed(&["--upstream", "http://127.0.0.1:9"]);
        assert!(!p.records.observe().drafts.any());
    }
}
