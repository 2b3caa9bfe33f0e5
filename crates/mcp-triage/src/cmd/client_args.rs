//! Arguments shared by the client commands (`call`, `list`, `probe`): where the server is and
//! how to talk to it. Turned into a `Target` and `ClientOptions` here; nothing else happens here.
//!
//! The options come in groups, one clap struct and one `--help` heading each (connection,
//! input rounds, retry policy, OAuth, limits), so that a command flattens only the groups it
//! reads and its `--help` offers nothing it would ignore: `list` calls no tool, so it has no
//! retry or input-round options.

use std::path::PathBuf;
use std::time::Duration;

use clap::Args;
use mcp_triage_client::{Answers, AnswersError, ClientOptions, Target, TargetError, VersionChoice};
use mcp_triage_core::retry::AnnotationTrust;

/// Where the server is and how to reach it: every client command flattens this first, since
/// it is all a first `list` or `call` needs.
#[derive(Args, Debug)]
#[command(next_help_heading = "Connection")]
pub struct ConnArgs {
    /// Spawn this server and speak newline-delimited JSON-RPC on its stdin/stdout.
    #[arg(long, value_name = "'CMD ARGS'", conflicts_with = "config")]
    pub stdio: Option<String>,

    /// Read the server from an mcp.json file (Claude Desktop/Cursor `mcpServers`, VS Code `servers`).
    #[arg(long, value_name = "FILE", requires = "server")]
    pub config: Option<PathBuf>,

    /// The entry of --config to use.
    #[arg(long, value_name = "NAME", requires = "config")]
    pub server: Option<String>,

    /// auto (2026-07-28 first, fall back to initialize), or a revision to force.
    #[arg(long, value_name = "V", default_value = "auto", value_parser = VersionChoice::parse)]
    pub protocol_version: VersionChoice,

    /// Bearer token for Authorization (never printed or logged).
    #[arg(
        long,
        value_name = "TOKEN",
        env = "MCP_TRIAGE_BEARER",
        hide_env_values = true
    )]
    pub bearer: Option<String>,

    /// Extra HTTP header NAME:VALUE (repeatable).
    #[arg(long = "header", value_name = "NAME:VALUE")]
    pub headers: Vec<String>,
}

/// Deadlines and sizes of one exchange. Last in `--help`: the defaults suit a first call.
#[derive(Args, Debug)]
#[command(next_help_heading = "Limits")]
pub struct LimitArgs {
    /// Deadline of one attempt, in seconds.
    #[arg(long, value_name = "SECONDS", default_value_t = 30.0)]
    pub timeout: f64,

    /// Largest response body in bytes.
    #[arg(long, value_name = "BYTES", default_value_t = 64 << 20)]
    pub max_body_bytes: u64,
}

/// When a failed tool call is sent again. Only commands that call tools (`call`, `probe
/// --call-read-only`) take it: the policy decides resends of `tools/call` alone.
#[derive(Args, Debug)]
#[command(next_help_heading = "Retry policy")]
pub struct RetryArgs {
    /// Most resends of one call.
    #[arg(long, value_name = "N", default_value_t = 2)]
    pub max_retries: u32,

    /// Longest single wait in seconds; a longer Retry-After gives up.
    #[arg(long, value_name = "SECONDS", default_value_t = 30.0)]
    pub max_wait: f64,

    /// Backoff base in milliseconds: the n-th resend waits between base×2^n and base×2^(n+1).
    #[arg(long, value_name = "MS", default_value_t = 200)]
    pub backoff_ms: u64,

    /// Believe readOnlyHint/idempotentHint of any server (default: only stdio and loopback).
    #[arg(long, conflicts_with = "distrust_annotations")]
    pub trust_annotations: bool,

    /// Never believe tool annotations.
    #[arg(long)]
    pub distrust_annotations: bool,

    /// A tool that is safe to resend (repeatable).
    #[arg(long = "safe-tool", value_name = "NAME")]
    pub safe_tools: Vec<String>,
}

/// Answers for what a server asks while a tool runs (MRTR `input_required` rounds, legacy
/// elicitation, sampling and roots requests). Only commands that call tools take it.
#[derive(Args, Debug)]
#[command(next_help_heading = "Input rounds")]
pub struct InputArgs {
    /// An input response KEY=JSON (KEY: the server's inputRequests key, or a method such as
    /// elicitation/create); repeatable.
    #[arg(long = "answer", value_name = "KEY=JSON")]
    pub answers: Vec<String>,

    /// A JSON object file of KEY: input response.
    #[arg(long, value_name = "FILE")]
    pub input: Option<PathBuf>,

    /// Accept a form elicitation without a configured answer with its schema's defaults.
    #[arg(long)]
    pub accept_defaults: bool,

    /// Never ask on the terminal for input the server requests (answers only from --answer,
    /// --input, --accept-defaults). Prompts are used only when stdin is a terminal anyway.
    #[arg(long)]
    pub no_prompt: bool,

    /// Most input rounds per call.
    #[arg(long, value_name = "N", default_value_t = 8)]
    pub max_rounds: u32,

    /// A root offered to roots/list (repeatable).
    #[arg(long = "root", value_name = "PATH|URI")]
    pub roots: Vec<String>,
}

/// OAuth for servers that answer 401 (the MCP authorization spec).
#[derive(Args, Debug)]
#[command(next_help_heading = "OAuth")]
pub struct OAuthArgs {
    /// Authorize on a 401 (discovery, registration, browser, token cache). On by default when
    /// stdin and stderr are terminals, or when any other OAuth flag is given.
    #[arg(long, conflicts_with = "no_oauth")]
    pub oauth: bool,

    /// Never authorize: only report a 401/403 challenge.
    #[arg(long)]
    pub no_oauth: bool,

    /// A pre-registered OAuth client id (skips registration).
    #[arg(long, value_name = "ID")]
    pub client_id: Option<String>,

    /// The environment variable holding the client secret (never a flag, so that it stays out
    /// of the process list and shell history).
    #[arg(long, value_name = "VAR", requires = "client_id")]
    pub client_secret_env: Option<String>,

    /// A PEM (PKCS#8) ES256 private key file: authenticate with a signed JWT (private_key_jwt,
    /// RFC 7523) where the server takes it, instead of a secret.
    #[arg(long, value_name = "PEM", requires = "client_id")]
    pub client_key_file: Option<PathBuf>,

    /// The URL of a client ID metadata document this client publishes; used as the client id
    /// where the server supports them.
    #[arg(long, value_name = "URL")]
    pub client_metadata_url: Option<String>,

    /// authorization-code (a person approves in a browser), client-credentials (a machine
    /// client: --client-id and --client-secret-env), jwt-bearer (a workload identity token as
    /// the assertion: --identity-token-file) or enterprise-managed (the enterprise IdP trades
    /// the user's ID token for an ID-JAG: --identity-token-file, --idp-token-endpoint,
    /// --idp-client-id, --client-id).
    #[arg(long, value_name = "GRANT", value_parser = ["authorization-code", "client-credentials", "jwt-bearer", "enterprise-managed"])]
    pub grant: Option<String>,

    /// The identity token file of --grant jwt-bearer (the workload's JWT) or enterprise-managed
    /// (the user's ID token from the IdP); read once, never printed.
    #[arg(long, value_name = "FILE")]
    pub identity_token_file: Option<PathBuf>,

    /// The enterprise IdP's token endpoint, where --grant enterprise-managed gets the ID-JAG.
    #[arg(long, value_name = "URL")]
    pub idp_token_endpoint: Option<String>,

    /// This client's id at the enterprise IdP.
    #[arg(long, value_name = "ID")]
    pub idp_client_id: Option<String>,

    /// The environment variable holding the client's secret at the IdP.
    #[arg(long, value_name = "VAR", requires = "idp_client_id")]
    pub idp_client_secret_env: Option<String>,

    /// Bind tokens to a DPoP key (RFC 9449): auto (when the authorization server lists ES256
    /// in dpop_signing_alg_values_supported), always or never.
    #[arg(long, value_name = "WHEN", value_parser = mcp_triage_client::DpopMode::parse)]
    pub dpop: Option<mcp_triage_client::DpopMode>,

    /// How to show the authorization page: browser, print (the URL on stderr) or follow
    /// (fetch it and follow its redirects, for servers that approve without a person).
    #[arg(long, value_name = "MODE", value_parser = mcp_triage_client::AuthorizeMode::parse)]
    pub authorize: Option<mcp_triage_client::AuthorizeMode>,

    /// Print the authorization URL instead of opening a browser (= --authorize print).
    #[arg(long, conflicts_with = "authorize")]
    pub no_browser: bool,

    /// The loopback redirect port (default: any free port, or the one registered before).
    #[arg(long, value_name = "PORT")]
    pub redirect_port: Option<u16>,

    /// How long to wait for the authorization redirect, in seconds.
    #[arg(long, value_name = "SECONDS", default_value_t = 300.0)]
    pub authorize_timeout: f64,

    /// Most authorizations (including scope step-ups) for one request; once one request gives
    /// up, later ones do not authorize again.
    #[arg(long, value_name = "N", default_value_t = 2)]
    pub max_authorizations: u32,

    /// The token cache file (default: oauth-tokens.json in the user's config directory).
    #[arg(long, value_name = "PATH", conflicts_with = "no_token_store")]
    pub token_store: Option<PathBuf>,

    /// Keep tokens in memory only.
    #[arg(long)]
    pub no_token_store: bool,
}

/// Client options given on the command line that cannot be used.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ArgsError {
    /// `--client-secret-env` names a variable that is not set.
    #[error("--client-secret-env {0}: the variable is not set (or not UTF-8)")]
    SecretEnv(String),
    /// `--client-key-file` cannot be read.
    #[error("--client-key-file {}: {source}", path.display())]
    KeyFile {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// `--grant client-credentials` without a client and a credential.
    #[error(
        "--grant client-credentials needs --client-id and --client-secret-env or --client-key-file"
    )]
    ClientCredentials,
    /// `--grant jwt-bearer` without the workload's token.
    #[error("--grant jwt-bearer needs --identity-token-file (the workload identity token)")]
    JwtBearer,
    /// `--grant enterprise-managed` without the ID token, the IdP or the client.
    #[error("--grant enterprise-managed needs --identity-token-file (the ID token), --idp-token-endpoint, --idp-client-id and --client-id")]
    EnterpriseManaged,
    /// `--identity-token-file` cannot be read, or is empty.
    #[error("--identity-token-file {}: {source}", path.display())]
    IdentityTokenFile {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// `--idp-client-secret-env` names a variable that is not set.
    #[error("--idp-client-secret-env {0}: the variable is not set (or not UTF-8)")]
    IdpSecretEnv(String),
    /// `--max-authorizations 0`.
    #[error("--max-authorizations must be at least 1")]
    MaxAuthorizations,
    /// A duration option out of range (the option's name without `--`).
    #[error("--{0} must be a positive number of seconds below a day")]
    Seconds(&'static str),
    /// The target cannot be used.
    #[error(transparent)]
    Target(#[from] TargetError),
    /// No target given.
    #[error("give a URL, --stdio 'CMD ARGS', or --config FILE --server NAME")]
    NoTarget,
    /// A URL and --stdio or --config.
    #[error("give either a URL or --stdio/--config, not both")]
    TwoTargets,
    /// A `--header` without a colon.
    #[error("--header {0:?} is not NAME:VALUE")]
    Header(String),
    /// `--header` with a stdio target.
    #[error("--header applies to HTTP targets only")]
    HeaderNotHttp,
    /// The `--input` file cannot be read.
    #[error("--input {}: {source}", path.display())]
    Input {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// The `--input` file is not JSON.
    #[error("--input {}: not JSON: {source}", path.display())]
    InputNotJson {
        /// The file.
        path: PathBuf,
        /// The parser's error.
        source: serde_json::Error,
    },
    /// An `--input` document or `--answer` that gives no usable answer.
    #[error(transparent)]
    Answers(#[from] AnswersError),
    /// The tokio runtime did not start.
    #[error("could not start the async runtime: {0}")]
    Runtime(#[source] std::io::Error),
}

impl OAuthArgs {
    /// The OAuth options, or `None` when OAuth is off.
    pub fn options(&self) -> Result<Option<mcp_triage_client::OAuthOptions>, ArgsError> {
        use mcp_triage_client::{oauth::store, AuthorizeMode, Grant, OAuthOptions};
        use std::io::IsTerminal;
        let asked = self.oauth
            || self.client_id.is_some()
            || self.client_key_file.is_some()
            || self.client_metadata_url.is_some()
            || self.grant.is_some()
            || self.identity_token_file.is_some()
            || self.idp_token_endpoint.is_some()
            || self.dpop.is_some()
            || self.authorize.is_some()
            || self.no_browser
            || self.redirect_port.is_some()
            || self.token_store.is_some();
        let interactive = std::io::stdin().is_terminal() && std::io::stderr().is_terminal();
        if self.no_oauth || !(asked || interactive) {
            return Ok(None);
        }
        let client_secret = match &self.client_secret_env {
            Some(var) => Some(std::env::var(var).map_err(|_| ArgsError::SecretEnv(var.clone()))?),
            None => None,
        };
        let client_key_pem = match &self.client_key_file {
            Some(f) => Some(
                std::fs::read_to_string(f).map_err(|source| ArgsError::KeyFile {
                    path: f.clone(),
                    source,
                })?,
            ),
            None => None,
        };
        let identity_token = self.identity_token()?;
        let idp = self.idp()?;
        let grant = match self.grant.as_deref() {
            Some("client-credentials") => {
                if self.client_id.is_none() || (client_secret.is_none() && client_key_pem.is_none())
                {
                    return Err(ArgsError::ClientCredentials);
                }
                Grant::ClientCredentials
            }
            Some("jwt-bearer") if identity_token.is_none() => return Err(ArgsError::JwtBearer),
            Some("jwt-bearer") => Grant::JwtBearer,
            Some("enterprise-managed") => {
                if identity_token.is_none() || idp.is_none() || self.client_id.is_none() {
                    return Err(ArgsError::EnterpriseManaged);
                }
                Grant::EnterpriseManaged
            }
            _ => Grant::AuthorizationCode,
        };
        let mode = match (self.authorize, self.no_browser) {
            (Some(m), _) => m,
            (None, true) => AuthorizeMode::Print,
            (None, false) if interactive => AuthorizeMode::Browser,
            (None, false) => AuthorizeMode::Print,
        };
        let store = if self.no_token_store {
            store::TokenStore::memory()
        } else if let Some(p) = &self.token_store {
            store::TokenStore::file(p.clone())
        } else {
            match store::default_path() {
                Some(p) => store::TokenStore::file(p),
                None => store::TokenStore::memory(),
            }
        };
        if self.max_authorizations == 0 {
            return Err(ArgsError::MaxAuthorizations);
        }
        Ok(Some(OAuthOptions {
            grant,
            client_id: self.client_id.clone(),
            client_secret,
            client_key_pem,
            client_metadata_url: self.client_metadata_url.clone(),
            mode,
            redirect_port: self.redirect_port.unwrap_or(0),
            authorize_timeout: seconds("authorize-timeout", self.authorize_timeout)?,
            max_authorizations: self.max_authorizations,
            store,
            dpop: self.dpop.unwrap_or_default(),
            identity_token,
            idp,
            ..OAuthOptions::default()
        }))
    }

    /// The `--identity-token-file` contents without surrounding white space (token files
    /// usually end in a newline); an empty file is an error, not a token.
    fn identity_token(&self) -> Result<Option<String>, ArgsError> {
        let Some(path) = &self.identity_token_file else {
            return Ok(None);
        };
        let fail = |source| ArgsError::IdentityTokenFile {
            path: path.clone(),
            source,
        };
        let text = std::fs::read_to_string(path).map_err(fail)?;
        let token = text.trim();
        if token.is_empty() {
            return Err(fail(std::io::Error::new(
                std::io::ErrorKind::InvalidData,
                "the file is empty",
            )));
        }
        Ok(Some(token.to_string()))
    }

    /// The enterprise IdP client, when both its token endpoint and client id are given.
    fn idp(&self) -> Result<Option<mcp_triage_client::IdpClient>, ArgsError> {
        let (Some(token_endpoint), Some(client_id)) =
            (&self.idp_token_endpoint, &self.idp_client_id)
        else {
            return Ok(None);
        };
        let client_secret = match &self.idp_client_secret_env {
            Some(var) => {
                Some(std::env::var(var).map_err(|_| ArgsError::IdpSecretEnv(var.clone()))?)
            }
            None => None,
        };
        Ok(Some(mcp_triage_client::IdpClient {
            token_endpoint: token_endpoint.clone(),
            client_id: client_id.clone(),
            client_secret,
        }))
    }
}

fn seconds(name: &'static str, s: f64) -> Result<Duration, ArgsError> {
    if !(s.is_finite() && s > 0.0 && s < 86_400.0) {
        return Err(ArgsError::Seconds(name));
    }
    Ok(Duration::from_secs_f64(s))
}

impl ConnArgs {
    /// True when the target comes from --stdio or --config (no URL positional).
    pub fn has_target_flag(&self) -> bool {
        self.stdio.is_some() || self.config.is_some()
    }

    pub fn target(&self, url: Option<&str>) -> Result<Target, ArgsError> {
        let mut t = match (&self.stdio, &self.config, url) {
            (Some(cmd), _, None) => Target::stdio(cmd)?,
            (None, Some(file), None) => {
                let name = self.server.as_deref().unwrap_or_default();
                Target::from_config_file(file, name)?
            }
            (None, None, Some(u)) => Target::url(u)?,
            (None, None, None) => return Err(ArgsError::NoTarget),
            _ => return Err(ArgsError::TwoTargets),
        };
        if let Target::Http { headers, .. } = &mut t {
            for h in &self.headers {
                let (k, v) = h
                    .split_once(':')
                    .ok_or_else(|| ArgsError::Header(h.clone()))?;
                headers.push((k.trim().to_string(), v.trim().to_string()));
            }
        } else if !self.headers.is_empty() {
            return Err(ArgsError::HeaderNotHttp);
        }
        Ok(t)
    }

    /// The client options of a command that only connects and lists (`list`): the target's
    /// protocol and credentials, OAuth and limits; the retry and input-round options keep
    /// their defaults, since no tool is called.
    pub fn options(
        &self,
        oauth: &OAuthArgs,
        limits: &LimitArgs,
    ) -> Result<ClientOptions, ArgsError> {
        let mut o = ClientOptions {
            protocol: self.protocol_version,
            bearer: self.bearer.clone().filter(|b| !b.is_empty()),
            timeout: seconds("timeout", limits.timeout)?,
            ..ClientOptions::default()
        };
        o.limits.max_body_bytes = limits.max_body_bytes;
        o.oauth = oauth.options()?;
        Ok(o)
    }
}

impl RetryArgs {
    /// Sets the retry policy of `o`.
    pub fn apply(&self, o: &mut ClientOptions) -> Result<(), ArgsError> {
        o.retry.max_retries = self.max_retries;
        o.retry.max_wait_ms = seconds("max-wait", self.max_wait)?.as_millis() as u64;
        o.retry.backoff_base_ms = self.backoff_ms;
        o.retry.safe_tools = self.safe_tools.clone();
        o.retry.trust = if self.trust_annotations {
            AnnotationTrust::Trust
        } else if self.distrust_annotations {
            AnnotationTrust::Distrust
        } else {
            AnnotationTrust::LocalOnly
        };
        Ok(())
    }
}

impl InputArgs {
    /// Sets the answers, rounds, roots and terminal prompter of `o`; a bad `--input` file or
    /// `--answer` is an error naming it.
    pub fn apply(&self, o: &mut ClientOptions) -> Result<(), ArgsError> {
        o.max_rounds = self.max_rounds;
        o.accept_defaults = self.accept_defaults;
        o.roots = self.roots.clone();
        let mut answers = Answers::default();
        if let Some(f) = &self.input {
            let text = std::fs::read_to_string(f).map_err(|source| ArgsError::Input {
                path: f.clone(),
                source,
            })?;
            let doc = serde_json::from_str(&text).map_err(|source| ArgsError::InputNotJson {
                path: f.clone(),
                source,
            })?;
            answers.add_object(doc)?;
        }
        for a in &self.answers {
            answers.add_pair(a)?;
        }
        o.answers = answers;
        if !self.no_prompt && std::io::IsTerminal::is_terminal(&std::io::stdin()) {
            o.prompter = Some(mcp_triage_client::SharedPrompter(std::sync::Arc::new(
                super::prompt::TerminalPrompter::new(),
            )));
        }
        Ok(())
    }
}

/// A tokio runtime for one command.
pub fn runtime() -> Result<tokio::runtime::Runtime, ArgsError> {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(ArgsError::Runtime)
}

/// The "server stderr (last lines)" block every client command prints after a stdio server's
/// failure (empty when there is nothing): one format, so `call`, `list` and `probe` show a
/// dying server's last words the same way.
pub fn stderr_block(tail: &[String]) -> String {
    if tail.is_empty() {
        return String::new();
    }
    let mut s = String::from("server stderr (last lines):\n");
    for l in tail {
        s.push_str(&format!("  | {l}\n"));
    }
    s
}
