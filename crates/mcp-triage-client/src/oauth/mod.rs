//! OAuth 2.1 for MCP servers (the MCP authorization spec, 2025-03-26 … 2026-07-28): on a
//! 401 or an `insufficient_scope` 403 the client discovers the protected-resource metadata
//! (RFC 9728) and the authorization server's metadata (RFC 8414 / OpenID discovery, with the
//! 2025-03-26 fallbacks), registers (a client ID metadata document URL, else dynamic client
//! registration RFC 7591, else the configured client id), runs the authorization code grant
//! with PKCE S256 and a loopback redirect (or, for machine clients, the client credentials
//! grant, the JWT bearer grant with a workload identity token (SEP-1933), or the
//! enterprise-managed authorization of SEP-990: an ID-JAG from the enterprise IdP by token
//! exchange, then the JWT bearer grant), names the resource (RFC 8707), and caches the tokens
//! per server, refreshing them before they expire and on a 401. Where the authorization server
//! offers DPoP (RFC 9449) the tokens are bound to an ephemeral key ([`dpop`]).
//!
//! Tokens, secrets and codes never leave this module except in the `Authorization` header of a
//! request to the MCP server and in the token store file: errors and notes name endpoints,
//! scopes and error codes only, and every type holding a secret has a redacting `Debug`.

pub mod discovery;
pub mod dpop;
mod grants;
pub mod jwt;
pub mod pkce;
pub mod redirect;
pub mod store;

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use base64::Engine;
use mcp_triage_core::AuthChallenge;
use reqwest::Url;
use serde_json::{json, Value};

use discovery::TokenAuthMethod;
use dpop::{Dpop, DpopMode, Role};
use store::{StoreData, StoredClient, StoredToken, TokenStore};

/// Largest metadata or token response read.
const MAX_DOC_BYTES: usize = 1 << 20;
/// A token this close to its expiry is refreshed before it is sent (at most half its
/// lifetime, so that a short-lived token is not refreshed before every request).
const REFRESH_MARGIN_SECS: u64 = 60;

/// Whether `tok` should be refreshed before use at `now`.
fn refresh_due(tok: &StoredToken, now: u64) -> bool {
    let Some(exp) = tok.expires_at else {
        return false;
    };
    let lifetime = tok.issued_at.map(|i| exp.saturating_sub(i)).unwrap_or(0);
    exp <= now + REFRESH_MARGIN_SECS.min(lifetime / 2)
}

/// Which grant gets the token.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Grant {
    /// Authorization code with PKCE: a user approves in a browser.
    #[default]
    AuthorizationCode,
    /// Client credentials (a machine client with `--client-id` and a secret).
    ClientCredentials,
    /// The JWT bearer grant (RFC 7523 §2.1) with a workload identity token as the assertion
    /// (workload identity federation, SEP-1933): a workload that already holds a token from
    /// its platform's issuer trades it for an access token, with no secret of its own.
    JwtBearer,
    /// Enterprise-managed authorization (SEP-990): the user's ID token from the enterprise
    /// IdP is exchanged there for an ID-JAG (RFC 8693 token exchange), which the MCP server's
    /// authorization server takes as a JWT bearer assertion (RFC 7523); the IdP decides, no
    /// browser is involved.
    EnterpriseManaged,
}

impl Grant {
    /// The grant as the `AUTHORIZED` note names it.
    fn describe(self) -> &'static str {
        match self {
            Grant::AuthorizationCode => "authorization code + PKCE",
            Grant::ClientCredentials => "client credentials",
            Grant::JwtBearer => "JWT bearer",
            Grant::EnterpriseManaged => "enterprise-managed: ID-JAG + JWT bearer",
        }
    }
}

/// How the authorization page reaches the user.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum AuthorizeMode {
    /// Open the system browser (and print the URL too).
    #[default]
    Browser,
    /// Print the URL on stderr and wait for the redirect (`--no-browser`).
    Print,
    /// Fetch the URL and follow its redirects to the loopback listener: for authorization
    /// servers that approve without a person (test servers, the conformance suite).
    Follow,
}

impl AuthorizeMode {
    /// Parses `browser`, `print` or `follow`.
    pub fn parse(s: &str) -> Result<AuthorizeMode, UnknownAuthorizeMode> {
        match s {
            "browser" => Ok(AuthorizeMode::Browser),
            "print" => Ok(AuthorizeMode::Print),
            "follow" => Ok(AuthorizeMode::Follow),
            _ => Err(UnknownAuthorizeMode(s.to_string())),
        }
    }
}

/// An `--authorize` value that is not `browser`, `print` or `follow`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0:?} is not browser, print or follow")]
pub struct UnknownAuthorizeMode(pub String);

/// The error of parsing a URL (the `url` crate's, through reqwest).
pub type UrlParseError = <Url as std::str::FromStr>::Err;

/// An HTTP exchange with an authorization server that did not yield a JSON document. `what`
/// names the request (`GET URL`, `the token endpoint URL`, …); messages carry the OAuth
/// `error` and `error_description` only, never a body.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum FetchError {
    /// The request could not be sent or got no answer.
    #[error("{what}: {}", crate::wire::error_chain(.source))]
    Send {
        /// The request.
        what: String,
        /// The transport error.
        #[source]
        source: reqwest::Error,
    },
    /// The answer's body broke off.
    #[error("{what}: the response broke off: {}", crate::wire::error_chain(.source))]
    BrokeOff {
        /// The request.
        what: String,
        /// The transport error.
        #[source]
        source: reqwest::Error,
    },
    /// The answer's body is larger than the limit.
    #[error("{what}: the response is larger than {limit} bytes")]
    TooLarge {
        /// The request.
        what: String,
        /// The limit in bytes.
        limit: usize,
    },
    /// A non-2xx answer.
    #[error("{what} refused: {}", oauth_error_text(*.status, .error.as_deref(), .description.as_deref()))]
    Refused {
        /// The request.
        what: String,
        /// The HTTP status.
        status: u16,
        /// The OAuth `error`, sanitized.
        error: Option<String>,
        /// The OAuth `error_description`, sanitized.
        description: Option<String>,
    },
    /// A 2xx answer that is not JSON.
    #[error("{what}: the answer is not JSON ({source})")]
    NotJson {
        /// The request.
        what: String,
        /// The parse error.
        #[source]
        source: serde_json::Error,
    },
}

/// Discovery of the protected resource's and the authorization server's metadata failed, or
/// what it found must not be used.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum DiscoveryError {
    /// A metadata document could not be fetched.
    #[error(transparent)]
    Fetch(#[from] FetchError),
    /// A metadata document is not JSON.
    #[error("GET {url}: the metadata is not JSON: {source}")]
    NotJson {
        /// The document's URL.
        url: String,
        /// The parse error.
        #[source]
        source: serde_json::Error,
    },
    /// A metadata document is JSON but not an object.
    #[error("GET {url}: the metadata is not a JSON object")]
    NotAnObject {
        /// The document's URL.
        url: String,
    },
    /// The protected-resource metadata has no `resource`.
    #[error("the protected-resource metadata at {prm_url} has no resource")]
    NoResource {
        /// The metadata's URL.
        prm_url: String,
    },
    /// The protected-resource metadata describes another resource.
    #[error(
        "the protected-resource metadata at {prm_url} describes {}, not {expected}: refusing to authorize (a token for one resource is never sent to another)",
        clean(.resource)
    )]
    ResourceMismatch {
        /// The metadata's URL.
        prm_url: String,
        /// The resource it names.
        resource: String,
        /// The canonical resource of the MCP server.
        expected: String,
    },
    /// The protected-resource metadata names no authorization server.
    #[error("the protected-resource metadata at {prm_url} names no authorization server")]
    NoAuthorizationServer {
        /// The metadata's URL.
        prm_url: String,
    },
    /// The authorization server named by the protected-resource metadata is not usable.
    #[error("{} (named by {prm_url})", clean(&.source.to_string()))]
    AuthorizationServerNamed {
        /// The metadata's URL.
        prm_url: String,
        /// What is wrong with the URL.
        #[source]
        source: discovery::AuthorizationServerUrlError,
    },
    /// The authorization server metadata names another issuer.
    #[error(
        "the authorization server metadata at {url} names issuer {:?}, not {:?} (RFC 8414 §3.3): refusing to use it",
        clean(.found),
        clean(.expected)
    )]
    IssuerMismatch {
        /// The metadata's URL.
        url: String,
        /// The issuer it names.
        found: String,
        /// The issuer it was fetched for.
        expected: String,
    },
    /// No metadata URL of the issuer answered.
    #[error("no authorization server metadata for {} (tried {})", clean(.issuer), .tried.join(", "))]
    NoMetadata {
        /// The issuer.
        issuer: String,
        /// The URLs tried.
        tried: Vec<String>,
    },
    /// The 2025-03-26 authorization base URL is not usable.
    #[error(transparent)]
    BaseUrl(discovery::AuthorizationServerUrlError),
    /// An endpoint in the metadata is not usable.
    #[error("the metadata at {url}: {}", clean(&.source.to_string()))]
    Endpoint {
        /// The metadata's URL.
        url: String,
        /// What is wrong with the endpoint.
        #[source]
        source: discovery::AuthorizationServerUrlError,
    },
    /// The metadata has no `token_endpoint`.
    #[error("the metadata at {url} has no token_endpoint")]
    NoTokenEndpoint {
        /// The metadata's URL.
        url: String,
    },
    /// The metadata does not list PKCE S256.
    #[error(
        "the authorization server metadata at {url} does not list S256 in code_challenge_methods_supported: without PKCE the client refuses to authorize"
    )]
    NoS256 {
        /// The metadata's URL.
        url: String,
    },
}

/// Why the client could not obtain (or keep) a token: the message of an `AUTH_FAILED` note.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum OAuthError {
    /// The MCP server's URL does not parse.
    #[error("{server:?} is not a URL: {source}")]
    ServerUrl {
        /// The URL as given.
        server: String,
        /// The parse error.
        #[source]
        source: UrlParseError,
    },
    /// reqwest could not build the client.
    #[error("could not build the OAuth HTTP client: {0}")]
    HttpClient(#[source] reqwest::Error),
    /// Discovery failed.
    #[error(transparent)]
    Discovery(#[from] DiscoveryError),
    /// A registration or token request failed.
    #[error(transparent)]
    Fetch(#[from] FetchError),
    /// An authorization-server URL is not usable.
    #[error(transparent)]
    AuthorizationServerUrl(#[from] discovery::AuthorizationServerUrlError),
    /// The loopback redirect failed.
    #[error(transparent)]
    Redirect(#[from] redirect::RedirectError),
    /// The OS random generator failed.
    #[error(transparent)]
    Random(#[from] pkce::RandomError),
    /// The `private_key_jwt` assertion could not be made.
    #[error(transparent)]
    ClientKey(#[from] jwt::ClientKeyError),
    /// The DPoP key or a proof could not be made.
    #[error(transparent)]
    Dpop(#[from] dpop::DpopError),
    /// A 401 `use_dpop_nonce` from the MCP server without a nonce to use.
    #[error("HTTP 401 use_dpop_nonce without a DPoP-Nonce header: the client has no nonce to put in its proof (RFC 9449 §9)")]
    DpopNonceMissing,
    /// A second 401 `use_dpop_nonce` for one request.
    #[error("HTTP 401 use_dpop_nonce again after sending the request with the server's nonce: giving up (RFC 9449 §9)")]
    DpopNonceAgain,
    /// The token store could not be written.
    #[error(transparent)]
    Store(#[from] store::StoreError),
    /// An earlier request to this server gave up.
    #[error("HTTP {status}: not authorizing again, an earlier request already gave up ({why})")]
    GaveUpEarlier {
        /// This answer's status.
        status: u16,
        /// Why the earlier request gave up.
        why: String,
    },
    /// A 403 `insufficient_scope` without a `scope`.
    #[error("HTTP 403 insufficient_scope without a scope parameter: the client cannot tell which scope to ask for")]
    InsufficientScopeWithoutScope,
    /// A 403 `insufficient_scope` for a scope the token has.
    #[error(
        "HTTP 403 insufficient_scope for scope {:?}, which the token already holds: a permanent authorization failure, not retried",
        clean(.scope)
    )]
    ScopeAlreadyHeld {
        /// The scope the server asked for.
        scope: String,
    },
    /// `--max-authorizations` reached.
    #[error(
        "HTTP {status} again after {count} authorization(s) for this request: giving up (limit --max-authorizations {limit})"
    )]
    TooManyAuthorizations {
        /// This answer's status.
        status: u16,
        /// Authorizations made for this request.
        count: u32,
        /// The limit.
        limit: u32,
    },
    /// No way to get a client id.
    #[error(
        "the authorization server {} offers neither dynamic client registration nor (for this client) client ID metadata documents: pass --client-id (and --client-secret-env)",
        clean(.issuer)
    )]
    NoRegistration {
        /// The issuer.
        issuer: String,
    },
    /// The registration answer has no `client_id`.
    #[error("registration at {endpoint}: the answer has no client_id")]
    NoClientId {
        /// The registration endpoint.
        endpoint: String,
    },
    /// The metadata has no `authorization_endpoint`.
    #[error("the authorization server {} has no authorization_endpoint", clean(.issuer))]
    NoAuthorizationEndpoint {
        /// The issuer.
        issuer: String,
    },
    /// The redirect listener's task ended abnormally.
    #[error("the redirect listener stopped: {0}")]
    ListenerStopped(#[source] tokio::task::JoinError),
    /// The redirect's `state` is not this login's.
    #[error("the authorization redirect carries the wrong state: refusing it (possible CSRF)")]
    WrongState,
    /// The authorization server refused (an `error` in the redirect).
    #[error(
        "the authorization server refused: {}{}",
        clean(.error),
        .description.as_deref().map(|d| format!(" ({})", clean(d))).unwrap_or_default()
    )]
    Denied {
        /// The OAuth `error`.
        error: String,
        /// Its `error_description`.
        description: Option<String>,
    },
    /// The redirect's `iss` is another issuer (RFC 9207).
    #[error(
        "the authorization response names issuer {:?}, not {:?} (RFC 9207): refusing it",
        clean(.found),
        clean(.expected)
    )]
    IssuerMismatch {
        /// The `iss` of the response.
        found: String,
        /// The issuer.
        expected: String,
    },
    /// The server advertises `iss` but did not send it (RFC 9207).
    #[error("the authorization server advertises authorization_response_iss_parameter_supported but its response has no iss (RFC 9207): refusing it")]
    IssuerMissing,
    /// The redirect has no `code`.
    #[error("the authorization redirect has no code")]
    NoCode,
    /// `--authorize follow`: the redirect URI does not parse.
    #[error("the redirect URI {uri} is not a URL: {source}")]
    RedirectUri {
        /// The redirect URI.
        uri: String,
        /// The parse error.
        #[source]
        source: UrlParseError,
    },
    /// `--authorize follow`: the endpoint answered without redirecting.
    #[error(
        "the authorization endpoint answered HTTP {status} instead of redirecting: --authorize follow needs a server that approves without a person (use browser or print)"
    )]
    NotRedirected {
        /// The status.
        status: u16,
    },
    /// `--authorize follow`: a `Location` that does not parse.
    #[error("the authorization redirect is not a URL: {0}")]
    BadLocation(#[source] UrlParseError),
    /// `--authorize follow`: a redirect off the authorization server's origin.
    #[error(
        "the authorization endpoint redirected to {}, which is neither the redirect URI nor on the authorization server's origin {origin}: --authorize follow does not go there",
        clean(.to)
    )]
    OffOrigin {
        /// Where it redirected.
        to: String,
        /// The authorization server's origin.
        origin: String,
    },
    /// `--authorize follow`: more than 10 redirects.
    #[error("the authorization endpoint redirected more than 10 times")]
    TooManyRedirects,
    /// The client credentials grant without a client id.
    #[error("the client credentials grant needs --client-id and a secret (--client-secret-env)")]
    NoClientCredentials,
    /// A refresh without a refresh token.
    #[error("no refresh token")]
    NoRefreshToken,
    /// A refresh whose registration is gone.
    #[error("the registration that obtained the token is not cached")]
    RegistrationNotCached,
    /// The JWT bearer or enterprise-managed grant without an identity token.
    #[error(
        "the {grant} grant needs an identity token (--identity-token-file or --identity-token-env)"
    )]
    NoIdentityToken {
        /// The grant, as `--grant` spells it.
        grant: &'static str,
    },
    /// The enterprise-managed grant without the IdP or the client at the authorization server.
    #[error(
        "the enterprise-managed grant needs --idp-token-endpoint, --idp-client-id and --client-id"
    )]
    NoEnterpriseClient,
    /// The IdP's token exchange answered something other than an ID-JAG.
    #[error(
        "the IdP token endpoint {endpoint} issued a {:?} token, not an ID-JAG (urn:ietf:params:oauth:token-type:id-jag)",
        clean(.issued)
    )]
    NotIdJag {
        /// The IdP's token endpoint.
        endpoint: String,
        /// Its `issued_token_type`.
        issued: String,
    },
    /// The token answer has no `access_token`.
    #[error("the token endpoint {endpoint} answered without an access_token")]
    NoAccessToken {
        /// The token endpoint.
        endpoint: String,
    },
    /// The token is neither a Bearer token nor a DPoP token the client asked for.
    #[error(
        "the token endpoint {endpoint} issued a {:?} token; this client sends Bearer tokens, and DPoP tokens when it sent a DPoP proof",
        clean(.token_type)
    )]
    NotBearer {
        /// The token endpoint.
        endpoint: String,
        /// Its `token_type`.
        token_type: String,
    },
}

/// OAuth settings of a client.
#[derive(Clone)]
pub struct OAuthOptions {
    /// The grant.
    pub grant: Grant,
    /// A pre-registered client id (`--client-id`); registration is skipped.
    pub client_id: Option<String>,
    /// Its secret (`--client-secret-env` names the variable holding it).
    pub client_secret: Option<String>,
    /// Its ES256 private key (PEM PKCS#8) for `private_key_jwt` (`--client-key-file`).
    pub client_key_pem: Option<String>,
    /// A client ID metadata document URL this client publishes, used as the client id where
    /// the server advertises `client_id_metadata_document_supported`.
    pub client_metadata_url: Option<String>,
    /// `client_name` at dynamic registration.
    pub client_name: String,
    /// How the authorization page is shown.
    pub mode: AuthorizeMode,
    /// The loopback redirect port (0: any free port, or the one registered before).
    pub redirect_port: u16,
    /// How long to wait for the redirect.
    pub authorize_timeout: Duration,
    /// Most authorizations (including step-ups) for one request before giving up: 2 by
    /// default, one for the first token and one more when the refresh is refused or the scope
    /// must grow. Once a request has given up, later requests to the same server do not
    /// authorize again (the same server would refuse the same way).
    pub max_authorizations: u32,
    /// Where tokens and registrations are cached.
    pub store: TokenStore,
    /// When to bind tokens to a DPoP key (`--dpop`).
    pub dpop: DpopMode,
    /// The identity token a grant starts from: the workload identity JWT the JWT bearer grant
    /// sends as its assertion, or the user's ID token the enterprise-managed grant exchanges
    /// for an ID-JAG.
    pub identity_token: Option<String>,
    /// The enterprise IdP of the enterprise-managed grant.
    pub idp: Option<IdpClient>,
}

/// This client at the enterprise IdP (SEP-990): where it exchanges the user's ID token for an
/// ID-JAG, and as which client.
#[derive(Clone)]
pub struct IdpClient {
    /// The IdP's token endpoint.
    pub token_endpoint: String,
    /// The client id registered with the IdP.
    pub client_id: String,
    /// Its secret, when the IdP registered the client as confidential (sent with HTTP Basic).
    pub client_secret: Option<String>,
}

impl std::fmt::Debug for IdpClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("IdpClient")
            .field("token_endpoint", &self.token_endpoint)
            .field("client_id", &self.client_id)
            .field("client_secret", &self.client_secret.as_ref().map(|_| "…"))
            .finish()
    }
}

impl Default for OAuthOptions {
    fn default() -> Self {
        OAuthOptions {
            grant: Grant::AuthorizationCode,
            client_id: None,
            client_secret: None,
            client_key_pem: None,
            client_metadata_url: None,
            client_name: "mcp-triage".to_string(),
            mode: AuthorizeMode::Browser,
            redirect_port: 0,
            authorize_timeout: Duration::from_secs(300),
            max_authorizations: 2,
            store: TokenStore::memory(),
            dpop: DpopMode::Auto,
            identity_token: None,
            idp: None,
        }
    }
}

impl std::fmt::Debug for OAuthOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OAuthOptions")
            .field("grant", &self.grant)
            .field("client_id", &self.client_id)
            .field("client_secret", &self.client_secret.as_ref().map(|_| "…"))
            .field("client_key_pem", &self.client_key_pem.as_ref().map(|_| "…"))
            .field("client_metadata_url", &self.client_metadata_url)
            .field("mode", &self.mode)
            .field("store", &self.store)
            .field("dpop", &self.dpop)
            .field("identity_token", &self.identity_token.as_ref().map(|_| "…"))
            .field("idp", &self.idp)
            .finish_non_exhaustive()
    }
}

/// The access token every request to the MCP server carries, shared by the client's tasks
/// (POSTs, resumption and standalone GETs, DELETE) and replaced when a token is obtained or
/// refreshed. A DPoP-bound token goes out as `Authorization: DPoP` with a fresh proof for each
/// request (RFC 9449 §7.1), any other as `Authorization: Bearer`: the one place both are sent.
#[derive(Clone, Default)]
pub(crate) struct BearerCell(Arc<std::sync::RwLock<Option<Presented>>>);

/// A token as presented: bound to the DPoP key of `dpop`, or a Bearer token.
#[derive(Clone)]
struct Presented {
    token: String,
    dpop: Option<Arc<Dpop>>,
}

impl Presented {
    fn bearer(token: String) -> Presented {
        Presented { token, dpop: None }
    }
}

impl BearerCell {
    /// A cell holding a Bearer token (`--bearer`), or none.
    pub(crate) fn new(token: Option<String>) -> BearerCell {
        BearerCell(Arc::new(std::sync::RwLock::new(
            token.map(Presented::bearer),
        )))
    }

    fn get(&self) -> Option<Presented> {
        self.0.read().map(|g| g.clone()).unwrap_or(None)
    }

    fn set(&self, token: Option<Presented>) {
        if let Ok(mut g) = self.0.write() {
            *g = token;
        }
    }

    /// The DPoP state of the token in use, when it is DPoP-bound.
    fn dpop(&self) -> Option<Arc<Dpop>> {
        self.get().and_then(|p| p.dpop)
    }

    /// `req` with the token: `Authorization: Bearer`, or `Authorization: DPoP` and a `DPoP`
    /// proof naming this request's method and URL, the token's hash and the MCP server's
    /// latest nonce. The method and URL are read off a copy of the request (every request here
    /// has its body in memory, so the copy is cheap); a proof that cannot be made leaves the
    /// request without one, and the server's 401 says so.
    pub(crate) fn authorize(&self, req: reqwest::RequestBuilder) -> reqwest::RequestBuilder {
        let Some(p) = self.get() else {
            return req;
        };
        let Some(dpop) = &p.dpop else {
            return req.bearer_auth(&p.token);
        };
        let proof = req.try_clone().and_then(|r| r.build().ok()).and_then(|r| {
            dpop.proof(Role::Resource, r.method().as_str(), r.url(), Some(&p.token))
                .ok()
        });
        let value = format!("DPoP {}", p.token);
        let req = match reqwest::header::HeaderValue::try_from(value.as_str()) {
            Ok(mut v) => {
                v.set_sensitive(true);
                req.header(reqwest::header::AUTHORIZATION, v)
            }
            // Not a header value: the request fails to build, as with bearer_auth.
            Err(_) => req.header(reqwest::header::AUTHORIZATION, value),
        };
        match proof {
            Some(proof) => req.header("DPoP", proof),
            None => req,
        }
    }

    /// Keeps the `DPoP-Nonce` of a response from the MCP server at `url` (RFC 9449 §9: any
    /// response may carry the nonce the next proof must name), when the token is DPoP-bound.
    pub(crate) fn observe(&self, url: &Url, headers: &reqwest::header::HeaderMap) {
        if let Some(d) = self.dpop() {
            d.note_nonce(Role::Resource, url, headers);
        }
    }
}

impl std::fmt::Debug for BearerCell {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("BearerCell(..)")
    }
}

/// What one request has spent on authorization (so that a server refusing forever cannot
/// make the client loop).
#[derive(Debug, Default)]
pub(crate) struct AuthAttempts {
    refreshed: bool,
    authorizations: u32,
    /// Whether the request was sent again with the MCP server's DPoP nonce (once at most).
    dpop_nonce_retried: bool,
}

/// The authorization server as discovered.
#[derive(Debug, Clone)]
struct Discovered {
    /// The resource to name (RFC 8707).
    resource: String,
    /// `scopes_supported` of the protected-resource metadata.
    prm_scopes: Vec<String>,
    /// The issuer (the key of the registration).
    issuer: String,
    /// Whether the issuer was verified against the metadata (not for 2025-03-26 fallbacks).
    issuer_verified: bool,
    authorization_endpoint: String,
    token_endpoint: String,
    registration_endpoint: Option<String>,
    scopes_supported: Vec<String>,
    auth_methods: Vec<String>,
    cimd_supported: bool,
    iss_parameter_supported: bool,
    /// `dpop_signing_alg_values_supported`.
    dpop_algs: Vec<String>,
}

#[derive(Default)]
struct AuthState {
    loaded: bool,
    data: StoreData,
    discovered: Option<Discovered>,
    /// The DPoP key and nonces, made when first wanted and kept for the process: the tokens
    /// bound to it are only good with it.
    dpop: Option<Arc<Dpop>>,
    /// Why an earlier request gave up authorizing: later requests give up at once instead of
    /// spending the same budget again on a server that refuses every token (the judge's
    /// `auth.wrong_audience` counted 15 refused requests and 9 authorizations without this).
    gave_up: Option<String>,
}

/// The scope a step-up (a 403 with `insufficient_scope`) asks for: what the token holds plus
/// what the challenge requires. A challenge without a scope cannot say what to ask for, and one
/// naming a scope the token already holds is a permanent failure: neither is authorized again.
fn step_up_scope(
    current: Option<&StoredToken>,
    required: Option<&str>,
) -> Result<String, OAuthError> {
    let Some(req) = required else {
        return Err(OAuthError::InsufficientScopeWithoutScope);
    };
    let held = current.and_then(|t| t.scope.clone()).unwrap_or_default();
    if current.is_some() && discovery::scope_covers(&held, req) {
        return Err(OAuthError::ScopeAlreadyHeld {
            scope: req.to_string(),
        });
    }
    Ok(discovery::scope_union(&held, req))
}

/// The authorization endpoint's URL with the request's parameters: the code flow with PKCE
/// (S256), our `state`, the resource (RFC 8707) and the scope when one was selected.
fn authorization_url(
    d: &Discovered,
    client_id: &str,
    redirect_uri: &str,
    code_challenge: &str,
    state: &str,
    scope: Option<&str>,
) -> Result<Url, OAuthError> {
    let mut url =
        discovery::authorization_server_url(&d.authorization_endpoint, "authorization_endpoint")?;
    {
        let mut q = url.query_pairs_mut();
        q.append_pair("response_type", "code")
            .append_pair("client_id", client_id)
            .append_pair("redirect_uri", redirect_uri)
            .append_pair("code_challenge", code_challenge)
            .append_pair("code_challenge_method", "S256")
            .append_pair("state", state)
            .append_pair("resource", &d.resource);
        if let Some(s) = scope {
            q.append_pair("scope", s);
        }
    }
    Ok(url)
}

/// The code in the redirect's parameters, once they are checked: our `state`, no `error`, and
/// the issuer when the server identifies itself (RFC 9207), so a code from another server or
/// another login is never exchanged.
fn redirect_code<'a>(
    params: &'a HashMap<String, String>,
    state: &str,
    d: &Discovered,
) -> Result<&'a String, OAuthError> {
    if params.get("state").map(String::as_str) != Some(state) {
        return Err(OAuthError::WrongState);
    }
    if let Some(e) = params.get("error") {
        return Err(OAuthError::Denied {
            error: e.clone(),
            description: params.get("error_description").cloned(),
        });
    }
    // RFC 9207: an iss in the response must be the issuer, exactly; a server that
    // advertises the parameter must send it.
    if d.issuer_verified {
        match params.get("iss") {
            Some(iss) if iss != &d.issuer => {
                return Err(OAuthError::IssuerMismatch {
                    found: iss.clone(),
                    expected: d.issuer.clone(),
                })
            }
            None if d.iss_parameter_supported => return Err(OAuthError::IssuerMissing),
            _ => {}
        }
    }
    params.get("code").ok_or(OAuthError::NoCode)
}

/// The OAuth side of one client (one MCP server).
pub(crate) struct OAuth {
    opts: OAuthOptions,
    server: Url,
    resource_key: String,
    http: reqwest::Client,
    bearer: BearerCell,
    state: tokio::sync::Mutex<AuthState>,
}

pub(crate) fn now_secs() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}

fn strings(v: &Value) -> Vec<String> {
    v.as_array()
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .map(str::to_string)
        .collect()
}

fn clean(s: &str) -> String {
    mcp_triage_core::sanitize_line(s, 300)
}

/// Reads a response body up to [`MAX_DOC_BYTES`]; errors name the request `what`.
async fn read_bounded(mut resp: reqwest::Response, what: &str) -> Result<Vec<u8>, FetchError> {
    let mut body = Vec::new();
    while let Some(chunk) = resp.chunk().await.map_err(|source| FetchError::BrokeOff {
        what: what.to_string(),
        source,
    })? {
        body.extend_from_slice(&chunk);
        if body.len() > MAX_DOC_BYTES {
            return Err(FetchError::TooLarge {
                what: what.to_string(),
                limit: MAX_DOC_BYTES,
            });
        }
    }
    Ok(body)
}

/// Sends `req` and reads its JSON answer (bounded); a non-2xx answer is an error naming `what`
/// with the OAuth `error` and `error_description` only (never the body).
async fn send_for_json(req: reqwest::RequestBuilder, what: &str) -> Result<Value, FetchError> {
    json_answer(send(req, what).await?, what).await
}

/// Sends `req`; a transport error names the request `what`.
async fn send(req: reqwest::RequestBuilder, what: &str) -> Result<reqwest::Response, FetchError> {
    req.send().await.map_err(|source| FetchError::Send {
        what: what.to_string(),
        source,
    })
}

/// The JSON answer of `resp` (bounded), as [`send_for_json`] reads it: the caller may look at
/// the head first (the token request keeps a `DPoP-Nonce`).
async fn json_answer(resp: reqwest::Response, what: &str) -> Result<Value, FetchError> {
    let status = resp.status().as_u16();
    let bytes = read_bounded(resp, what).await?;
    if !(200..300).contains(&status) {
        let doc: Value = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
        return Err(FetchError::Refused {
            what: what.to_string(),
            status,
            error: doc["error"].as_str().map(clean),
            description: doc["error_description"].as_str().map(clean),
        });
    }
    serde_json::from_slice(&bytes).map_err(|source| FetchError::NotJson {
        what: what.to_string(),
        source,
    })
}

/// An OAuth error response's status, `error` and `error_description`, for messages (never
/// the body).
fn oauth_error_text(status: u16, error: Option<&str>, description: Option<&str>) -> String {
    let mut s = format!("HTTP {status}");
    if let Some(e) = error {
        s.push_str(&format!(" {e}"));
    }
    if let Some(d) = description {
        s.push_str(&format!(": {d}"));
    }
    s
}

impl OAuth {
    /// The OAuth side for the MCP server at `server`.
    pub(crate) fn new(
        server: &str,
        opts: OAuthOptions,
        bearer: BearerCell,
        timeout: Duration,
        connect_timeout: Duration,
        user_agent: String,
    ) -> Result<OAuth, OAuthError> {
        let server = Url::parse(server).map_err(|source| OAuthError::ServerUrl {
            server: server.to_string(),
            source,
        })?;
        let http = reqwest::Client::builder()
            .connect_timeout(connect_timeout)
            .timeout(timeout)
            .no_proxy()
            .redirect(reqwest::redirect::Policy::none())
            .user_agent(user_agent)
            .build()
            .map_err(OAuthError::HttpClient)?;
        Ok(OAuth {
            resource_key: discovery::canonical_resource(&server),
            server,
            opts,
            http,
            bearer,
            state: tokio::sync::Mutex::new(AuthState::default()),
        })
    }

    /// Before a request: load the cache once (adopting a cached token for this server), and
    /// refresh a token that is about to expire. Failures here are not fatal: the request goes
    /// out without a (valid) token and the server's 401 starts an authorization.
    pub(crate) async fn prepare(&self) -> Vec<(String, String)> {
        let mut notes = Vec::new();
        let mut st = self.state.lock().await;
        if !st.loaded {
            st.loaded = true;
            match self.opts.store.load() {
                Ok(d) => st.data = d,
                Err(e) => notes.push(("AUTH_STORE".to_string(), e.to_string())),
            }
            // A DPoP-bound token is never stored (its key died with its process); one in a
            // hand-edited store is not adopted.
            let cached = st.data.tokens.get(&self.resource_key).cloned();
            self.bearer.set(
                cached
                    .filter(|t| !t.dpop)
                    .map(|t| Presented::bearer(t.access_token)),
            );
        }
        let Some(tok) = st.data.tokens.get(&self.resource_key).cloned() else {
            return notes;
        };
        if !refresh_due(&tok, now_secs()) {
            return notes;
        }
        if tok.refresh_token.is_some() {
            match self.refresh_locked(&mut st, &tok).await {
                Ok(()) => notes.push((
                    "AUTH_REFRESHED".to_string(),
                    "refreshed the access token before it expired".to_string(),
                )),
                Err(e) => {
                    self.forget_token(&mut st);
                    notes.push((
                        "AUTH_REFRESH_FAILED".to_string(),
                        format!("refreshing the expiring token failed: {e}"),
                    ));
                }
            }
        } else {
            self.forget_token(&mut st);
        }
        notes
    }

    fn forget_token(&self, st: &mut AuthState) {
        st.data.tokens.remove(&self.resource_key);
        self.bearer.set(None);
        let key = &self.resource_key;
        if let Ok(d) = self.opts.store.update(&st.data, |d| {
            d.tokens.remove(key);
        }) {
            st.data = d;
        }
    }

    /// Keeps the token (and the registration of its issuer) in memory and merges both into the
    /// store, so another process's tokens for other servers survive. A DPoP-bound token stays
    /// in memory only: its key is this process's, so the store drops this server's token
    /// instead (an older Bearer token there would be adopted by the next process).
    fn keep_token(&self, st: &mut AuthState, tok: StoredToken) -> Result<(), OAuthError> {
        let dpop = st.dpop.clone().filter(|_| tok.dpop);
        self.bearer.set(Some(Presented {
            token: tok.access_token.clone(),
            dpop,
        }));
        let client = st.data.clients.get(&tok.issuer).cloned();
        st.data
            .tokens
            .insert(self.resource_key.clone(), tok.clone());
        let key = self.resource_key.clone();
        let merged = self.opts.store.update(&st.data, |d| {
            if let Some(c) = client {
                d.clients.insert(tok.issuer.clone(), c);
            }
            if tok.dpop {
                d.tokens.remove(&key);
            } else {
                d.tokens.insert(key.clone(), tok.clone());
            }
        })?;
        st.data = merged;
        st.data.tokens.insert(key, tok);
        Ok(())
    }

    /// After a 401, or a 403 with `insufficient_scope`: refresh once, else (step-up)
    /// authorize, within the limits of `attempts`. `Ok` carries a note (code, detail) for the
    /// record; the
    /// caller then repeats the request with the new token. `Err` is a message saying why the
    /// client gives up.
    pub(crate) async fn on_challenge(
        &self,
        status: u16,
        challenge: Option<&AuthChallenge>,
        attempts: &mut AuthAttempts,
    ) -> Result<(&'static str, String), OAuthError> {
        let error = challenge.and_then(|c| c.error.as_deref());
        if status == 401 && error == Some("use_dpop_nonce") {
            if let Some(d) = self.bearer.dpop() {
                return self.dpop_nonce_retry(&d, attempts);
            }
        }
        let mut st = self.state.lock().await;
        if let Some(why) = &st.gave_up {
            return Err(OAuthError::GaveUpEarlier {
                status,
                why: why.clone(),
            });
        }
        let current = st.data.tokens.get(&self.resource_key).cloned();
        let required = challenge
            .and_then(|c| c.scope.as_deref())
            .map(str::trim)
            .filter(|s| !s.is_empty());
        let insufficient = status == 403 && error == Some("insufficient_scope");
        let mut before: Vec<String> = Vec::new();
        if status == 401 {
            if let Some(note) = self
                .try_refresh(&mut st, current.as_ref(), attempts, &mut before)
                .await
            {
                return Ok(note);
            }
        }
        let wanted = if insufficient {
            Some(step_up_scope(current.as_ref(), required)?)
        } else {
            required.map(str::to_string)
        };
        self.count_authorization(&mut st, status, attempts)?;
        let d = self.discovered_for(&mut st, status, challenge).await?;
        let scope = discovery::select_scope(wanted.as_deref(), &d.prm_scopes, &d.scopes_supported);
        let tok = self.obtain(&mut st, &d, scope.as_deref()).await?;
        let granted = tok.scope.clone();
        let how = format!(
            "{}{}",
            self.opts.grant.describe(),
            if tok.dpop { ", DPoP-bound" } else { "" }
        );
        let mut after = String::new();
        if let Err(e) = self.keep_token(&mut st, tok) {
            // The token works for this process even when it cannot be cached.
            after = format!("; not cached: {e}");
        }
        Ok(("AUTHORIZED", format!(
            "{}HTTP {status}{}: obtained a token from {} ({how}, scope {}) and sent the request again{after}",
            before.concat(),
            if insufficient { " insufficient_scope" } else { "" },
            clean(&d.issuer),
            granted.map(|s| format!("{:?}", clean(&s))).unwrap_or_else(|| "unspecified".to_string())
        )))
    }

    /// A token by the configured grant, DPoP-bound where the authorization server offers it
    /// (or `--dpop always`).
    async fn obtain(
        &self,
        st: &mut AuthState,
        d: &Discovered,
        scope: Option<&str>,
    ) -> Result<StoredToken, OAuthError> {
        let dpop = self.dpop_for(st, &d.dpop_algs)?;
        let dpop = dpop.as_deref();
        match self.opts.grant {
            Grant::AuthorizationCode => self.authorization_code(st, d, scope, dpop).await,
            Grant::ClientCredentials => self.client_credentials(d, scope, dpop).await,
            Grant::JwtBearer => self.jwt_bearer(d, scope, dpop).await,
            Grant::EnterpriseManaged => self.enterprise_managed(d, scope, dpop).await,
        }
    }

    /// The DPoP state to use with an authorization server listing `algs` as its
    /// `dpop_signing_alg_values_supported`: `None` when DPoP is not wanted; made on first use
    /// and then kept, since the tokens are bound to its key.
    fn dpop_for(
        &self,
        st: &mut AuthState,
        algs: &[String],
    ) -> Result<Option<Arc<Dpop>>, OAuthError> {
        if !self.opts.dpop.wanted(algs) {
            return Ok(None);
        }
        if st.dpop.is_none() {
            st.dpop = Some(Arc::new(Dpop::new()?));
        }
        Ok(st.dpop.clone())
    }

    /// A 401 `use_dpop_nonce` to a DPoP request (RFC 9449 §9): send it again with the nonce
    /// the answer carried (kept by [`BearerCell::observe`]), once per request; a server that
    /// asks again, or gives no nonce, is not asked forever.
    fn dpop_nonce_retry(
        &self,
        dpop: &Dpop,
        attempts: &mut AuthAttempts,
    ) -> Result<(&'static str, String), OAuthError> {
        if dpop.nonce(Role::Resource, &self.server).is_none() {
            return Err(OAuthError::DpopNonceMissing);
        }
        if attempts.dpop_nonce_retried {
            return Err(OAuthError::DpopNonceAgain);
        }
        attempts.dpop_nonce_retried = true;
        Ok((
            "AUTH_DPOP_NONCE",
            "HTTP 401 use_dpop_nonce: sent the request again with the server's DPoP nonce"
                .to_string(),
        ))
    }

    /// A 401's first answer: refresh the token when it has a refresh token and this request has
    /// not refreshed yet. `Some` is the record's note (send the request again); `None` means
    /// authorize instead. A failed refresh forgets the token set (its refresh token is dead) and
    /// adds why to `before`, the start of the authorization's note.
    async fn try_refresh(
        &self,
        st: &mut AuthState,
        current: Option<&StoredToken>,
        attempts: &mut AuthAttempts,
        before: &mut Vec<String>,
    ) -> Option<(&'static str, String)> {
        let tok = current.filter(|t| t.refresh_token.is_some())?;
        if attempts.refreshed {
            return None;
        }
        attempts.refreshed = true;
        match self.refresh_locked(st, tok).await {
            Ok(()) => Some((
                "AUTH_REFRESHED",
                "HTTP 401 with a token: refreshed it and sent the request again".to_string(),
            )),
            Err(e) => {
                // The refresh token is dead: forget the set and authorize afresh; the note
                // says why.
                self.forget_token(st);
                before.push(format!("refreshing the token failed ({e}); "));
                None
            }
        }
    }

    /// Counts one more authorization for this request, or gives up past
    /// `max_authorizations`; giving up is remembered in `st`, so later requests give up at once
    /// instead of spending the same budget again.
    fn count_authorization(
        &self,
        st: &mut AuthState,
        status: u16,
        attempts: &mut AuthAttempts,
    ) -> Result<(), OAuthError> {
        if attempts.authorizations >= self.opts.max_authorizations {
            let err = OAuthError::TooManyAuthorizations {
                status,
                count: attempts.authorizations,
                limit: self.opts.max_authorizations,
            };
            st.gave_up = Some(err.to_string());
            return Err(err);
        }
        attempts.authorizations += 1;
        Ok(())
    }

    /// The authorization server's metadata for this authorization: discovered the first time,
    /// and again after every 401.
    async fn discovered_for(
        &self,
        st: &mut AuthState,
        status: u16,
        challenge: Option<&AuthChallenge>,
    ) -> Result<Discovered, OAuthError> {
        // A 401 rediscovers: the resource may have moved to another authorization server
        // (SEP-2352), whose registration is then its own (registrations are per issuer).
        if st.discovered.is_none() || status == 401 {
            let d = self
                .discover(challenge.and_then(|c| c.resource_metadata.as_deref()))
                .await?;
            st.discovered = Some(d);
        }
        Ok(st.discovered.clone().expect("discovered above"))
    }

    /// GETs a JSON document; `Ok(None)` for a non-2xx answer (try the next URL).
    async fn get_json(&self, url: &Url) -> Result<Option<Value>, DiscoveryError> {
        let what = format!("GET {url}");
        let resp = self
            .http
            .get(url.clone())
            .header("Accept", "application/json")
            .header("MCP-Protocol-Version", "2025-11-25")
            .send()
            .await
            .map_err(|source| FetchError::Send {
                what: what.clone(),
                source,
            })?;
        if !resp.status().is_success() {
            return Ok(None);
        }
        let body = read_bounded(resp, &what).await?;
        let doc: Value =
            serde_json::from_slice(&body).map_err(|source| DiscoveryError::NotJson {
                url: url.to_string(),
                source,
            })?;
        if !doc.is_object() {
            return Err(DiscoveryError::NotAnObject {
                url: url.to_string(),
            });
        }
        Ok(Some(doc))
    }

    /// Protected-resource metadata, then the authorization server's metadata.
    async fn discover(
        &self,
        resource_metadata: Option<&str>,
    ) -> Result<Discovered, DiscoveryError> {
        let mut prm = None;
        for url in discovery::protected_resource_metadata_urls(&self.server, resource_metadata) {
            if let Some(doc) = self.get_json(&url).await? {
                prm = Some((url, doc));
                break;
            }
        }
        let Some((prm_url, prm)) = prm else {
            return self.discover_legacy().await;
        };
        let resource = prm["resource"]
            .as_str()
            .ok_or_else(|| DiscoveryError::NoResource {
                prm_url: prm_url.to_string(),
            })?;
        if !discovery::resource_matches(resource, &self.server) {
            return Err(DiscoveryError::ResourceMismatch {
                prm_url: prm_url.to_string(),
                resource: resource.to_string(),
                expected: self.resource_key.clone(),
            });
        }
        let issuer = prm["authorization_servers"]
            .as_array()
            .and_then(|a| a.iter().find_map(Value::as_str))
            .ok_or_else(|| DiscoveryError::NoAuthorizationServer {
                prm_url: prm_url.to_string(),
            })?
            .to_string();
        let issuer_url = discovery::authorization_server_url(&issuer, "authorization server")
            .map_err(|source| DiscoveryError::AuthorizationServerNamed {
                prm_url: prm_url.to_string(),
                source,
            })?;
        let mut tried = Vec::new();
        for url in discovery::authorization_server_metadata_urls(&issuer_url) {
            tried.push(url.to_string());
            let Some(meta) = self.get_json(&url).await? else {
                continue;
            };
            if meta["issuer"].as_str() != Some(issuer.as_str()) {
                return Err(DiscoveryError::IssuerMismatch {
                    url: url.to_string(),
                    found: meta["issuer"].as_str().unwrap_or("").to_string(),
                    expected: issuer,
                });
            }
            let mut d = self.read_metadata(&meta, &url, issuer.clone(), true)?;
            d.resource = resource.to_string();
            d.prm_scopes = strings(&prm["scopes_supported"]);
            return Ok(d);
        }
        Err(DiscoveryError::NoMetadata { issuer, tried })
    }

    /// 2025-03-26: no protected-resource metadata; the server's origin is the authorization
    /// base URL, its metadata optional, and the default endpoints the fallback.
    async fn discover_legacy(&self) -> Result<Discovered, DiscoveryError> {
        let base = discovery::legacy_authorization_base(&self.server);
        discovery::check_authorization_server_url(&base, "2025-03-26 authorization base URL")
            .map_err(DiscoveryError::BaseUrl)?;
        let issuer = base.as_str().trim_end_matches('/').to_string();
        for url in discovery::authorization_server_metadata_urls(&base) {
            if let Some(meta) = self.get_json(&url).await? {
                let mut d = self.read_metadata(&meta, &url, issuer, false)?;
                d.resource = self.resource_key.clone();
                return Ok(d);
            }
        }
        let (a, t, r) = discovery::legacy_default_endpoints(&self.server);
        Ok(Discovered {
            resource: self.resource_key.clone(),
            prm_scopes: Vec::new(),
            issuer,
            issuer_verified: false,
            authorization_endpoint: a.to_string(),
            token_endpoint: t.to_string(),
            registration_endpoint: Some(r.to_string()),
            scopes_supported: Vec::new(),
            auth_methods: Vec::new(),
            cimd_supported: false,
            iss_parameter_supported: false,
            dpop_algs: Vec::new(),
        })
    }

    fn read_metadata(
        &self,
        meta: &Value,
        url: &Url,
        issuer: String,
        issuer_verified: bool,
    ) -> Result<Discovered, DiscoveryError> {
        let endpoint = |k: &str| -> Result<Option<String>, DiscoveryError> {
            match meta[k].as_str() {
                None => Ok(None),
                Some(s) => discovery::authorization_server_url(s, k)
                    .map(|u| Some(u.to_string()))
                    .map_err(|source| DiscoveryError::Endpoint {
                        url: url.to_string(),
                        source,
                    }),
            }
        };
        let token_endpoint =
            endpoint("token_endpoint")?.ok_or_else(|| DiscoveryError::NoTokenEndpoint {
                url: url.to_string(),
            })?;
        let authorization_endpoint = endpoint("authorization_endpoint")?;
        if self.opts.grant == Grant::AuthorizationCode {
            let methods = strings(&meta["code_challenge_methods_supported"]);
            if !methods.iter().any(|m| m == "S256") {
                return Err(DiscoveryError::NoS256 {
                    url: url.to_string(),
                });
            }
        }
        Ok(Discovered {
            resource: String::new(),
            prm_scopes: Vec::new(),
            issuer,
            issuer_verified,
            authorization_endpoint: authorization_endpoint.unwrap_or_default(),
            token_endpoint,
            registration_endpoint: endpoint("registration_endpoint")?,
            scopes_supported: strings(&meta["scopes_supported"]),
            auth_methods: strings(&meta["token_endpoint_auth_methods_supported"]),
            cimd_supported: meta["client_id_metadata_document_supported"] == json!(true),
            iss_parameter_supported: meta["authorization_response_iss_parameter_supported"]
                == json!(true),
            dpop_algs: strings(&meta["dpop_signing_alg_values_supported"]),
        })
    }

    /// The client to authorize as: the configured one, the cached registration, a client ID
    /// metadata document URL, or a new dynamic registration.
    async fn client_for(
        &self,
        st: &mut AuthState,
        d: &Discovered,
        redirect_uri: &str,
    ) -> Result<StoredClient, OAuthError> {
        if let Some(id) = &self.opts.client_id {
            return Ok(StoredClient {
                client_id: id.clone(),
                client_secret: self.opts.client_secret.clone(),
                token_endpoint_auth_method: None,
                redirect_uri: None,
            });
        }
        if let Some(c) = st.data.clients.get(&d.issuer) {
            if c.redirect_uri.as_deref().is_none_or(|r| r == redirect_uri) {
                return Ok(c.clone());
            }
        }
        if let (true, Some(url)) = (d.cimd_supported, &self.opts.client_metadata_url) {
            return Ok(StoredClient {
                client_id: url.clone(),
                client_secret: None,
                token_endpoint_auth_method: Some("none".to_string()),
                redirect_uri: None,
            });
        }
        let Some(reg) = &d.registration_endpoint else {
            return Err(OAuthError::NoRegistration {
                issuer: d.issuer.clone(),
            });
        };
        let method = discovery::registration_auth_method(&d.auth_methods);
        let body = json!({
            "client_name": self.opts.client_name,
            "redirect_uris": [redirect_uri],
            "grant_types": ["authorization_code", "refresh_token"],
            "response_types": ["code"],
            "token_endpoint_auth_method": method.as_str(),
            "application_type": "native",
        });
        let req = self
            .http
            .post(reg)
            .header("Accept", "application/json")
            .header("Content-Type", "application/json")
            .body(body.to_string());
        let doc = send_for_json(req, &format!("dynamic client registration at {reg}")).await?;
        let client_id = doc["client_id"]
            .as_str()
            .filter(|s| !s.is_empty())
            .ok_or_else(|| OAuthError::NoClientId {
                endpoint: reg.clone(),
            })?;
        let c = StoredClient {
            client_id: client_id.to_string(),
            client_secret: doc["client_secret"].as_str().map(str::to_string),
            token_endpoint_auth_method: doc["token_endpoint_auth_method"]
                .as_str()
                .map(str::to_string),
            redirect_uri: Some(redirect_uri.to_string()),
        };
        st.data.clients.insert(d.issuer.clone(), c.clone());
        Ok(c)
    }

    /// The redirect port: the configured one, else the one a cached registration names.
    fn redirect_port(&self, st: &AuthState) -> u16 {
        if self.opts.redirect_port != 0 || self.opts.client_id.is_some() {
            return self.opts.redirect_port;
        }
        st.discovered
            .as_ref()
            .and_then(|d| st.data.clients.get(&d.issuer))
            .and_then(|c| c.redirect_uri.as_deref())
            .and_then(|r| Url::parse(r).ok())
            .and_then(|u| u.port())
            .unwrap_or(0)
    }

    /// The authorization code grant (PKCE, a loopback redirect): the user (or `Follow`) is sent
    /// to the authorization endpoint, the redirect's code is checked and exchanged for a token.
    async fn authorization_code(
        &self,
        st: &mut AuthState,
        d: &Discovered,
        scope: Option<&str>,
        dpop: Option<&Dpop>,
    ) -> Result<StoredToken, OAuthError> {
        if d.authorization_endpoint.is_empty() {
            return Err(OAuthError::NoAuthorizationEndpoint {
                issuer: d.issuer.clone(),
            });
        }
        let listener = self.redirect_listener(st).await?;
        let redirect_uri = listener.redirect_uri.clone();
        let client = self.client_for(st, d, &redirect_uri).await?;
        let pkce = pkce::Pkce::new()?;
        let state = pkce::random_token(16)?;
        let url = authorization_url(
            d,
            &client.client_id,
            &redirect_uri,
            &pkce.challenge,
            &state,
            scope,
        )?;
        let waiter = tokio::spawn(listener.wait(state.clone(), self.opts.authorize_timeout));
        if let Err(e) = self.open_authorization(&url, &redirect_uri).await {
            waiter.abort();
            return Err(e);
        }
        let params = waiter.await.map_err(OAuthError::ListenerStopped)??;
        let code = redirect_code(&params, &state, d)?;
        let form = vec![
            ("grant_type", "authorization_code".to_string()),
            ("code", code.clone()),
            ("redirect_uri", redirect_uri),
            ("code_verifier", pkce.verifier.clone()),
            ("resource", d.resource.clone()),
        ];
        self.token_request(d, &client, form, scope, dpop).await
    }

    /// The loopback listener the redirect comes back to, on the port of an earlier registration
    /// when there is one (its redirect URI is registered already).
    async fn redirect_listener(&self, st: &AuthState) -> Result<redirect::Listener, OAuthError> {
        let port = self.redirect_port(st);
        let listener = match redirect::bind(port).await {
            // The port of an earlier registration is taken: listen anywhere and register
            // again (client_for sees the new redirect URI).
            Err(_) if port != 0 && self.opts.redirect_port == 0 => redirect::bind(0).await?,
            other => other?,
        };
        Ok(listener)
    }

    /// Sends the user to the authorization URL as `--authorize` says: follows it (an automated
    /// login, the only way that can fail here), prints it, or opens the browser (printing it
    /// too, in case the browser does not open).
    async fn open_authorization(&self, url: &Url, redirect_uri: &str) -> Result<(), OAuthError> {
        match self.opts.mode {
            AuthorizeMode::Follow => self.follow(url, redirect_uri).await?,
            AuthorizeMode::Print => {
                eprintln!("mcp-triage: to authorize, open this URL in a browser:\n  {url}");
            }
            AuthorizeMode::Browser => {
                eprintln!("mcp-triage: opening the browser to authorize; if it does not open, visit:\n  {url}");
                if let Err(e) = redirect::open_browser(url.as_str()) {
                    eprintln!("mcp-triage: {e}");
                }
            }
        }
        Ok(())
    }

    /// Fetches the authorization URL and follows its redirects (at most 10) until one leads
    /// to the loopback redirect URI, which is then requested so that the listener sees it.
    /// Only redirects within the authorization endpoint's origin are followed: an automated
    /// login must not be steered into fetching arbitrary URLs (another host, an internal
    /// address) on the server's say-so.
    async fn follow(&self, start: &Url, redirect_uri: &str) -> Result<(), OAuthError> {
        let callback = Url::parse(redirect_uri).map_err(|source| OAuthError::RedirectUri {
            uri: redirect_uri.to_string(),
            source,
        })?;
        let mut url = start.clone();
        for _ in 0..10 {
            let resp =
                self.http
                    .get(url.clone())
                    .send()
                    .await
                    .map_err(|source| FetchError::Send {
                        what: "GET the authorization endpoint".to_string(),
                        source,
                    })?;
            let status = resp.status().as_u16();
            let location = resp
                .headers()
                .get("location")
                .and_then(|l| l.to_str().ok())
                .map(str::to_string);
            let Some(next) = location.filter(|_| (300..400).contains(&status)) else {
                return Err(OAuthError::NotRedirected { status });
            };
            url = url.join(&next).map_err(OAuthError::BadLocation)?;
            if url.origin() == callback.origin() && url.path() == callback.path() {
                let _ = self.http.get(url).send().await;
                return Ok(());
            }
            if url.origin() != start.origin() {
                return Err(OAuthError::OffOrigin {
                    to: url.to_string(),
                    origin: start.origin().ascii_serialization(),
                });
            }
        }
        Err(OAuthError::TooManyRedirects)
    }

    async fn client_credentials(
        &self,
        d: &Discovered,
        scope: Option<&str>,
        dpop: Option<&Dpop>,
    ) -> Result<StoredToken, OAuthError> {
        if self.opts.client_id.is_none() {
            return Err(OAuthError::NoClientCredentials);
        }
        let client = self.configured_client();
        let mut form = vec![
            ("grant_type", "client_credentials".to_string()),
            ("resource", d.resource.clone()),
        ];
        if let Some(s) = scope {
            form.push(("scope", s.to_string()));
        }
        self.token_request(d, &client, form, scope, dpop).await
    }

    /// The configured client (`--client-id`, its secret): the machine grants' client, with an
    /// empty id when none is configured (then the token request carries no client
    /// authentication, which the JWT bearer grant allows: RFC 7523 §3.1).
    fn configured_client(&self) -> StoredClient {
        StoredClient {
            client_id: self.opts.client_id.clone().unwrap_or_default(),
            client_secret: self.opts.client_secret.clone(),
            token_endpoint_auth_method: None,
            redirect_uri: None,
        }
    }

    /// Refreshes `tok` with its authorization server (RFC 6749 §6), keeping the old refresh
    /// token when the server does not rotate it.
    async fn refresh_locked(
        &self,
        st: &mut AuthState,
        tok: &StoredToken,
    ) -> Result<(), OAuthError> {
        let refresh = tok
            .refresh_token
            .clone()
            .ok_or(OAuthError::NoRefreshToken)?;
        let client = match &self.opts.client_id {
            Some(id) => StoredClient {
                client_id: id.clone(),
                client_secret: self.opts.client_secret.clone(),
                ..StoredClient::default()
            },
            None => st
                .data
                .clients
                .get(&tok.issuer)
                .cloned()
                .ok_or(OAuthError::RegistrationNotCached)?,
        };
        let d = Discovered {
            resource: st
                .discovered
                .as_ref()
                .map(|d| d.resource.clone())
                .unwrap_or_else(|| self.resource_key.clone()),
            prm_scopes: Vec::new(),
            issuer: tok.issuer.clone(),
            issuer_verified: false,
            authorization_endpoint: String::new(),
            token_endpoint: tok.token_endpoint.clone(),
            registration_endpoint: None,
            scopes_supported: Vec::new(),
            auth_methods: st
                .discovered
                .as_ref()
                .map(|d| d.auth_methods.clone())
                .unwrap_or_default(),
            cimd_supported: false,
            iss_parameter_supported: false,
            dpop_algs: Vec::new(),
        };
        let form = vec![
            ("grant_type", "refresh_token".to_string()),
            ("refresh_token", refresh.clone()),
            ("resource", d.resource.clone()),
        ];
        // A DPoP-bound token set is refreshed with a proof of the same key (RFC 9449 §5: a
        // public client's refresh token is bound too).
        let dpop = match (tok.dpop, &st.dpop) {
            (true, Some(d)) => Some(d.clone()),
            _ => {
                let algs = st.discovered.as_ref().map(|d| d.dpop_algs.clone());
                self.dpop_for(st, &algs.unwrap_or_default())?
            }
        };
        let mut new = self
            .token_request(&d, &client, form, tok.scope.as_deref(), dpop.as_deref())
            .await?;
        if new.refresh_token.is_none() {
            new.refresh_token = Some(refresh);
        }
        if new.scope.is_none() {
            new.scope = tok.scope.clone();
        }
        self.keep_token(st, new)
    }

    /// POSTs a token request with the client's authentication (and a DPoP proof with `dpop`)
    /// and reads the token set. A `use_dpop_nonce` refusal that brings a new nonce is sent
    /// again once with it (RFC 9449 §8); the request is built afresh, so the client assertion
    /// and the proof carry new `jti`s.
    async fn token_request(
        &self,
        d: &Discovered,
        client: &StoredClient,
        form: Vec<(&'static str, String)>,
        requested_scope: Option<&str>,
        dpop: Option<&Dpop>,
    ) -> Result<StoredToken, OAuthError> {
        // Checked here too, not only at discovery: a stored token names its token endpoint.
        let token_url = discovery::authorization_server_url(&d.token_endpoint, "token_endpoint")?;
        let what = format!("the token endpoint {}", d.token_endpoint);
        let mut nonce_retried = false;
        let doc = loop {
            let req = self.token_http_request(d, client, &token_url, form.clone(), dpop)?;
            let resp = send(req, &what).await?;
            let new_nonce = dpop.is_some_and(|p| {
                p.note_nonce(Role::AuthorizationServer, &token_url, resp.headers())
            });
            match json_answer(resp, &what).await {
                Err(FetchError::Refused {
                    status: 400,
                    error: Some(e),
                    ..
                }) if e == "use_dpop_nonce" && new_nonce && !nonce_retried => {
                    nonce_retried = true;
                }
                answer => break answer?,
            }
        };
        read_token(d, &doc, requested_scope, dpop.is_some())
    }

    /// One token request: `form` with the client's authentication (a `private_key_jwt`
    /// assertion, HTTP Basic, the secret in the form, or the id alone; nothing for a grant
    /// without a client) and, with `dpop`, a proof for the token endpoint.
    fn token_http_request(
        &self,
        d: &Discovered,
        client: &StoredClient,
        token_url: &Url,
        mut form: Vec<(&'static str, String)>,
        dpop: Option<&Dpop>,
    ) -> Result<reqwest::RequestBuilder, OAuthError> {
        let method = discovery::token_auth_method(
            &d.auth_methods,
            client.client_secret.is_some(),
            client.token_endpoint_auth_method.as_deref(),
        );
        let mut req = self
            .http
            .post(token_url.clone())
            .header("Accept", "application/json");
        // A configured key is used where the server takes private_key_jwt (RFC 7523 §2.2).
        let key = self.opts.client_key_pem.as_deref().filter(|_| {
            self.opts.client_id.as_deref() == Some(client.client_id.as_str())
                && (d.auth_methods.is_empty()
                    || d.auth_methods.iter().any(|m| m == "private_key_jwt"))
        });
        if let Some(pem) = key {
            let assertion = jwt::client_assertion(pem, &client.client_id, &d.issuer, now_secs())?;
            form.push(("client_assertion_type", jwt::ASSERTION_TYPE.to_string()));
            form.push(("client_assertion", assertion));
        }
        match method {
            _ if key.is_some() || client.client_id.is_empty() => {}
            TokenAuthMethod::ClientSecretBasic => {
                let secret = client.client_secret.as_deref().unwrap_or("");
                req = req.header("Authorization", basic_auth(&client.client_id, secret));
            }
            TokenAuthMethod::ClientSecretPost => {
                form.push(("client_id", client.client_id.clone()));
                form.push((
                    "client_secret",
                    client.client_secret.clone().unwrap_or_default(),
                ));
            }
            TokenAuthMethod::None => form.push(("client_id", client.client_id.clone())),
        }
        if let Some(p) = dpop {
            req = req.header(
                "DPoP",
                p.proof(Role::AuthorizationServer, "POST", token_url, None)?,
            );
        }
        Ok(req.form(&form))
    }
}

/// HTTP Basic client authentication (RFC 6749 §2.3.1: id and secret form-encoded first).
fn basic_auth(client_id: &str, secret: &str) -> String {
    let pair = format!(
        "{}:{}",
        discovery::form_encode(client_id),
        discovery::form_encode(secret)
    );
    format!(
        "Basic {}",
        base64::engine::general_purpose::STANDARD.encode(pair)
    )
}

/// The token set of a token endpoint's answer `doc`. The token type decides how the token is
/// presented (RFC 9449 §5, §7.1): `DPoP` is bound to the key whose proof the request carried
/// (`proof_sent`), `Bearer` (or none) is a Bearer token even when a proof was sent (the server
/// chose not to bind it); any other type, or `DPoP` without a proof, cannot be used.
fn read_token(
    d: &Discovered,
    doc: &Value,
    requested_scope: Option<&str>,
    proof_sent: bool,
) -> Result<StoredToken, OAuthError> {
    let endpoint = &d.token_endpoint;
    let access = doc["access_token"]
        .as_str()
        .filter(|s| !s.is_empty())
        .ok_or_else(|| OAuthError::NoAccessToken {
            endpoint: endpoint.clone(),
        })?;
    let dpop = match doc["token_type"].as_str() {
        None => false,
        Some(t) if t.eq_ignore_ascii_case("bearer") => false,
        Some(t) if t.eq_ignore_ascii_case("dpop") && proof_sent => true,
        Some(t) => {
            return Err(OAuthError::NotBearer {
                endpoint: endpoint.clone(),
                token_type: t.to_string(),
            })
        }
    };
    Ok(StoredToken {
        access_token: access.to_string(),
        refresh_token: doc["refresh_token"].as_str().map(str::to_string),
        expires_at: doc["expires_in"]
            .as_u64()
            .map(|s| now_secs().saturating_add(s)),
        issued_at: Some(now_secs()),
        scope: doc["scope"]
            .as_str()
            .map(str::to_string)
            .or_else(|| requested_scope.map(str::to_string)),
        issuer: d.issuer.clone(),
        token_endpoint: d.token_endpoint.clone(),
        dpop,
    })
}

#[cfg(test)]
impl Discovered {
    /// An authorization server at `issuer` whose token endpoint is `{issuer}/token`, for the
    /// MCP server `http://127.0.0.1:9/mcp`, offering DPoP.
    pub(crate) fn for_test(issuer: &str) -> Discovered {
        Discovered {
            resource: "http://127.0.0.1:9/mcp".to_string(),
            prm_scopes: Vec::new(),
            issuer: issuer.to_string(),
            issuer_verified: true,
            authorization_endpoint: String::new(),
            token_endpoint: format!("{issuer}/token"),
            registration_endpoint: None,
            scopes_supported: Vec::new(),
            auth_methods: Vec::new(),
            cimd_supported: false,
            iss_parameter_supported: false,
            dpop_algs: vec![dpop::ALG.to_string()],
        }
    }
}

/// A loopback HTTP server for the tests of this module and its children: every request (head
/// and body, read in full) is kept, and `answer(n, request)` writes the n-th answer.
#[cfg(test)]
pub(crate) mod test_server {
    use std::sync::{Arc, Mutex};
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    /// The requests received so far, as text.
    pub(crate) type Requests = Arc<Mutex<Vec<String>>>;

    /// Reads one request: the head, then `Content-Length` bytes of body.
    async fn read_request(sock: &mut tokio::net::TcpStream) -> String {
        let mut buf = Vec::new();
        let mut chunk = [0u8; 4096];
        loop {
            let text = String::from_utf8_lossy(&buf).to_string();
            if let Some(end) = text.find("\r\n\r\n") {
                let len = text[..end]
                    .lines()
                    .find_map(|l| {
                        let (k, v) = l.split_once(':')?;
                        k.eq_ignore_ascii_case("content-length")
                            .then(|| v.trim().parse::<usize>().ok())?
                    })
                    .unwrap_or(0);
                if buf.len() >= end + 4 + len {
                    return text;
                }
            }
            match sock.read(&mut chunk).await {
                Ok(0) | Err(_) => return String::from_utf8_lossy(&buf).to_string(),
                Ok(n) => buf.extend_from_slice(&chunk[..n]),
            }
        }
    }

    /// Starts the server; its base URL and the requests it got.
    pub(crate) async fn start(
        answer: impl Fn(usize, &str) -> String + Send + Sync + 'static,
    ) -> (String, Requests) {
        let l = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let base = format!("http://{}", l.local_addr().unwrap());
        let requests: Requests = Arc::default();
        let seen = requests.clone();
        tokio::spawn(async move {
            while let Ok((mut sock, _)) = l.accept().await {
                let req = read_request(&mut sock).await;
                let n = {
                    let mut r = seen.lock().unwrap();
                    r.push(req.clone());
                    r.len() - 1
                };
                let _ = sock.write_all(answer(n, &req).as_bytes()).await;
            }
        });
        (base, requests)
    }

    /// An HTTP/1.1 answer with a JSON body, closing the connection.
    pub(crate) fn json(status: &str, extra_headers: &str, body: &str) -> String {
        format!(
            "HTTP/1.1 {status}\r\nContent-Type: application/json\r\nConnection: close\r\n{extra_headers}Content-Length: {}\r\n\r\n{body}",
            body.len()
        )
    }

    /// A request's header value (names compare case-insensitively).
    pub(crate) fn header<'a>(req: &'a str, name: &str) -> Option<&'a str> {
        req.split("\r\n\r\n").next()?.lines().find_map(|l| {
            let (k, v) = l.split_once(':')?;
            k.eq_ignore_ascii_case(name).then(|| v.trim())
        })
    }

    /// A request's form body as (name, value) pairs, decoded.
    pub(crate) fn form(req: &str) -> Vec<(String, String)> {
        let body = req.split_once("\r\n\r\n").map(|(_, b)| b).unwrap_or("");
        reqwest::Url::parse(&format!("http://x/?{body}"))
            .unwrap()
            .query_pairs()
            .map(|(k, v)| (k.into_owned(), v.into_owned()))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An OAuth for the MCP server at `url` with default options and 5 s timeouts.
    fn oauth_for(url: &str) -> Result<OAuth, OAuthError> {
        OAuth::new(
            url,
            OAuthOptions::default(),
            BearerCell::default(),
            Duration::from_secs(5),
            Duration::from_secs(5),
            "test".into(),
        )
    }

    /// A one-shot HTTP server on 127.0.0.1 answering every request with `answer`; counts hits.
    async fn one_answer_server(
        answer: String,
    ) -> (String, std::sync::Arc<std::sync::atomic::AtomicUsize>) {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let l = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let base = format!("http://{}", l.local_addr().unwrap());
        let hits = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let h = hits.clone();
        tokio::spawn(async move {
            while let Ok((mut sock, _)) = l.accept().await {
                h.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                let mut buf = [0u8; 4096];
                let _ = sock.read(&mut buf).await;
                let _ = sock.write_all(answer.as_bytes()).await;
            }
        });
        (base, hits)
    }

    #[tokio::test]
    async fn follow_goes_nowhere_but_the_servers_origin_and_the_redirect_uri() {
        let (elsewhere, elsewhere_hits) =
            one_answer_server("HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n".into()).await;
        let redirect = format!(
            "HTTP/1.1 302 Found\r\nLocation: {elsewhere}/internal\r\nContent-Length: 0\r\n\r\n"
        );
        let (authorize, _) = one_answer_server(redirect).await;
        let oauth = oauth_for("http://127.0.0.1:9/mcp").unwrap();
        let start = Url::parse(&format!("{authorize}/authorize")).unwrap();
        let e = oauth
            .follow(&start, "http://127.0.0.1:1/callback")
            .await
            .unwrap_err();
        assert!(matches!(e, OAuthError::OffOrigin { .. }));
        let e = e.to_string();
        assert!(
            e.contains("does not go there") && e.contains(&elsewhere),
            "{e}"
        );
        assert_eq!(elsewhere_hits.load(std::sync::atomic::Ordering::SeqCst), 0);
    }

    #[tokio::test]
    async fn a_refused_token_request_is_typed_and_names_only_error_and_description() {
        let body = r#"{"error":"invalid_grant","error_description":"code used","secret":"s3"}"#;
        let (base, _) = one_answer_server(format!(
            "HTTP/1.1 400 Bad Request\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
            body.len()
        ))
        .await;
        let http = reqwest::Client::builder().no_proxy().build().unwrap();
        let e = send_for_json(http.post(format!("{base}/token")), "the token endpoint X")
            .await
            .unwrap_err();
        assert!(matches!(
            e,
            FetchError::Refused { status: 400, ref error, .. } if error.as_deref() == Some("invalid_grant")
        ));
        assert_eq!(
            e.to_string(),
            "the token endpoint X refused: HTTP 400 invalid_grant: code used"
        );
        let e = OAuthError::from(e);
        assert!(matches!(e, OAuthError::Fetch(FetchError::Refused { .. })));
        assert_eq!(
            e.to_string(),
            "the token endpoint X refused: HTTP 400 invalid_grant: code used"
        );
    }

    #[tokio::test]
    async fn discovery_errors_are_typed() {
        let (base, _) = one_answer_server(
            "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 3\r\n\r\n[1]"
                .into(),
        )
        .await;
        let oauth = oauth_for(&format!("{base}/mcp")).unwrap();
        let e = oauth.discover(None).await.unwrap_err();
        assert!(matches!(e, DiscoveryError::NotAnObject { .. }));
        assert!(
            e.to_string().starts_with(&format!("GET {base}/"))
                && e.to_string()
                    .ends_with(": the metadata is not a JSON object"),
            "{e}"
        );
        let e = oauth_for("not a url").err().expect("not a URL");
        assert!(matches!(e, OAuthError::ServerUrl { .. }));
        assert_eq!(
            e.to_string(),
            "\"not a url\" is not a URL: relative URL without a base"
        );
        assert_eq!(
            AuthorizeMode::parse("x").unwrap_err().to_string(),
            "\"x\" is not browser, print or follow"
        );
    }

    #[test]
    fn refresh_is_due_within_the_margin_or_half_the_lifetime() {
        let tok = |issued: u64, exp: u64| StoredToken {
            expires_at: Some(exp),
            issued_at: Some(issued),
            ..StoredToken::default()
        };
        // An hour-long token: refreshed in its last minute.
        assert!(!refresh_due(&tok(0, 3600), 3539));
        assert!(refresh_due(&tok(0, 3600), 3540));
        // A 10-second token: refreshed in its last 5 seconds, not before every request.
        assert!(!refresh_due(&tok(0, 10), 4));
        assert!(refresh_due(&tok(0, 10), 5));
        // No expiry: never.
        assert!(!refresh_due(&StoredToken::default(), u64::MAX / 2));
        // Expired.
        assert!(refresh_due(&tok(0, 10), 11));
    }

    // --- DPoP (RFC 9449) ---------------------------------------------------------------------

    use dpop::tests::verified;
    use test_server::{form, header, json as answer, start};

    fn client(id: &str) -> StoredClient {
        StoredClient {
            client_id: id.to_string(),
            ..StoredClient::default()
        }
    }

    #[tokio::test]
    async fn a_token_request_proves_possession_and_sends_the_as_nonce_on_its_one_retry() {
        let (base, reqs) = start(|n, _| {
            if n == 0 {
                answer(
                    "400 Bad Request",
                    "DPoP-Nonce: as-nonce-1\r\n",
                    r#"{"error":"use_dpop_nonce"}"#,
                )
            } else {
                answer(
                    "200 OK",
                    "",
                    r#"{"access_token":"at-1","token_type":"DPoP","expires_in":60}"#,
                )
            }
        })
        .await;
        let oauth = oauth_for("http://127.0.0.1:9/mcp").unwrap();
        let dpop = Dpop::new().unwrap();
        let grant = vec![("grant_type", "client_credentials".to_string())];
        let d = Discovered::for_test(&base);
        let tok = oauth
            .token_request(&d, &client("cid"), grant, None, Some(&dpop))
            .await
            .unwrap();
        assert!(tok.dpop, "token_type DPoP is a bound token");
        let reqs = reqs.lock().unwrap().clone();
        assert_eq!(reqs.len(), 2);
        let (h, first) = verified(dpop.key(), header(&reqs[0], "dpop").unwrap());
        let (_, second) = verified(dpop.key(), header(&reqs[1], "dpop").unwrap());
        assert_eq!(h["typ"], "dpop+jwt");
        assert_eq!(first["htm"], "POST");
        assert_eq!(first["htu"], json!(format!("{base}/token")));
        assert!(first.get("nonce").is_none() && first.get("ath").is_none());
        assert_eq!(second["nonce"], "as-nonce-1");
        assert_ne!(first["jti"], second["jti"], "a retry is a fresh proof");
        // The retry is the same token request.
        assert_eq!(form(&reqs[0]), form(&reqs[1]));
    }

    #[tokio::test]
    async fn an_as_that_always_wants_another_nonce_is_asked_twice_not_forever() {
        let (base, reqs) = start(|n, _| {
            answer(
                "400 Bad Request",
                &format!("DPoP-Nonce: n-{n}\r\n"),
                r#"{"error":"use_dpop_nonce"}"#,
            )
        })
        .await;
        let oauth = oauth_for("http://127.0.0.1:9/mcp").unwrap();
        let dpop = Dpop::new().unwrap();
        let grant = vec![("grant_type", "client_credentials".to_string())];
        let d = Discovered::for_test(&base);
        let e = oauth
            .token_request(&d, &client("cid"), grant.clone(), None, Some(&dpop))
            .await
            .unwrap_err();
        assert!(
            matches!(&e, OAuthError::Fetch(FetchError::Refused { status: 400, error, .. })
                if error.as_deref() == Some("use_dpop_nonce")),
            "{e}"
        );
        assert_eq!(reqs.lock().unwrap().len(), 2);
        // Without a new nonce there is nothing to retry with: one request.
        let (base, reqs) =
            start(|_, _| answer("400 Bad Request", "", r#"{"error":"use_dpop_nonce"}"#)).await;
        let d = Discovered::for_test(&base);
        assert!(oauth
            .token_request(&d, &client("cid"), grant, None, Some(&dpop))
            .await
            .is_err());
        assert_eq!(reqs.lock().unwrap().len(), 1);
    }

    #[test]
    fn the_token_type_decides_how_the_token_is_presented() {
        let d = Discovered::for_test("http://127.0.0.1:1");
        let doc = |t: &str| json!({ "access_token": "a", "token_type": t });
        assert!(read_token(&d, &doc("DPoP"), None, true).unwrap().dpop);
        // A server that got a proof may still issue a Bearer token: it is one.
        assert!(!read_token(&d, &doc("Bearer"), None, true).unwrap().dpop);
        assert!(!read_token(&d, &doc("bearer"), None, false).unwrap().dpop);
        // A DPoP token the client did not ask for cannot be used, nor another type.
        for (t, proof) in [("DPoP", false), ("mac", true)] {
            let e = read_token(&d, &doc(t), None, proof).unwrap_err();
            assert!(matches!(e, OAuthError::NotBearer { .. }), "{e}");
        }
    }

    #[tokio::test]
    async fn a_dpop_token_goes_out_with_a_proof_and_a_resource_nonce_is_retried_once() {
        let oauth = oauth_for("http://127.0.0.1:9/mcp").unwrap();
        let dpop = Arc::new(Dpop::new().unwrap());
        oauth.bearer.set(Some(Presented {
            token: "tok".into(),
            dpop: Some(dpop.clone()),
        }));
        let http = reqwest::Client::new();
        let sent = |url: &str| {
            oauth
                .bearer
                .authorize(http.post(url).body("{}"))
                .build()
                .unwrap()
        };
        let req = sent("http://127.0.0.1:9/mcp?x=1#f");
        assert_eq!(req.headers()["authorization"], "DPoP tok");
        assert!(req.headers()["authorization"].is_sensitive());
        let (_, claims) = verified(dpop.key(), req.headers()["dpop"].to_str().unwrap());
        assert_eq!(claims["htu"], "http://127.0.0.1:9/mcp");
        assert_eq!(claims["ath"], json!(pkce::s256("tok")));
        assert!(claims.get("nonce").is_none());

        let challenge = AuthChallenge {
            scheme: "DPoP".into(),
            error: Some("use_dpop_nonce".into()),
            ..AuthChallenge::default()
        };
        let mut attempts = AuthAttempts::default();
        let e = oauth
            .on_challenge(401, Some(&challenge), &mut attempts)
            .await
            .unwrap_err();
        assert!(matches!(e, OAuthError::DpopNonceMissing), "{e}");
        let mut h = reqwest::header::HeaderMap::new();
        h.insert("dpop-nonce", "rs-1".parse().unwrap());
        oauth
            .bearer
            .observe(&Url::parse("http://127.0.0.1:9/mcp").unwrap(), &h);
        let (code, _) = oauth
            .on_challenge(401, Some(&challenge), &mut attempts)
            .await
            .unwrap();
        assert_eq!(code, "AUTH_DPOP_NONCE");
        let req = sent("http://127.0.0.1:9/mcp");
        let (_, claims) = verified(dpop.key(), req.headers()["dpop"].to_str().unwrap());
        assert_eq!(claims["nonce"], "rs-1");
        // Refused again within the same request: give up, no loop.
        let e = oauth
            .on_challenge(401, Some(&challenge), &mut attempts)
            .await
            .unwrap_err();
        assert!(matches!(e, OAuthError::DpopNonceAgain), "{e}");
        // The next request may follow a rotated nonce once more.
        let mut next = AuthAttempts::default();
        assert!(oauth
            .on_challenge(401, Some(&challenge), &mut next)
            .await
            .is_ok());
    }

    #[test]
    fn a_bearer_token_goes_out_as_bearer_without_a_proof() {
        let cell = BearerCell::new(Some("plain".into()));
        let req = cell
            .authorize(reqwest::Client::new().get("http://127.0.0.1:9/mcp"))
            .build()
            .unwrap();
        assert_eq!(req.headers()["authorization"], "Bearer plain");
        assert!(req.headers().get("dpop").is_none());
    }

    #[test]
    fn a_dpop_bound_token_is_kept_in_memory_only() {
        let dir = std::env::temp_dir().join(format!("mcp-triage-dpop-{}", std::process::id()));
        let path = dir.join("tokens.json");
        let opts = OAuthOptions {
            store: TokenStore::file(path.clone()),
            ..OAuthOptions::default()
        };
        let oauth = OAuth::new(
            "http://127.0.0.1:9/mcp",
            opts,
            BearerCell::default(),
            Duration::from_secs(5),
            Duration::from_secs(5),
            "test".into(),
        )
        .unwrap();
        let mut st = AuthState {
            dpop: Some(Arc::new(Dpop::new().unwrap())),
            ..AuthState::default()
        };
        let tok = StoredToken {
            access_token: "bound-canary".into(),
            issuer: "http://127.0.0.1:1".into(),
            token_endpoint: "http://127.0.0.1:1/token".into(),
            dpop: true,
            ..StoredToken::default()
        };
        oauth.keep_token(&mut st, tok).unwrap();
        assert!(st.data.tokens[&oauth.resource_key].dpop);
        assert!(oauth.bearer.dpop().is_some());
        let file = std::fs::read_to_string(&path).unwrap();
        assert!(!file.contains("bound-canary"), "{file}");
        let _ = std::fs::remove_dir_all(dir);
    }
}
