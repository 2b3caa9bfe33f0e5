//! The kitchen's own OAuth 2.1 authorization server, for the `auth.oauth_flow` scenario: RFC
//! 8414 metadata, dynamic registration (RFC 7591), an authorization endpoint that approves at
//! once (a test has no person; it redirects with a code), a token endpoint (authorization code
//! with PKCE S256, refresh) and revocation (RFC 7009).
//!
//! One server per fault: the issuer is `{base}/oauth/{fault}`, so a protected resource names
//! the misbehaving authorization server in its metadata and a client meets the fault by
//! following discovery. The faults ([`AsFault`]) are the ones a client must survive: an access
//! token that is already expired, a refresh token that was revoked, tokens for another
//! audience, metadata without PKCE, no metadata at all, a scope step-up (decided by the
//! resource, which asks for more scope on `tools/call`), and DPoP (RFC 9449): tokens bound to
//! the client's key, checked proofs at the token endpoint and the resource, and server nonces
//! on demand ([`crate::dpop_check`]).
//!
//! The HTTP handlers are thin wrappers in [`crate::auth_endpoints`]: this module takes no
//! shared state, so the `auth.*` scenarios can check tokens without importing the state.
//!
//! Tokens are random and live in memory; they are never journaled or logged (the journal only
//! sees MCP requests, whose `Authorization` header it redacts).

use std::collections::HashMap;
use std::sync::Mutex;

use axum::body::Body;
use axum::http::Response;
use serde_json::{json, Value};
use sha2::{Digest, Sha256};

use crate::random::random_bytes;
use crate::sse::json_response;
use mcp_triage_wire::percent::decode_form as percent_decode;

/// Lifetime announced for access tokens (`expires_in`).
const ACCESS_SECONDS: u64 = 3600;
/// The scope every protected tool needs.
pub const BASE_SCOPE: &str = "mcp:tools";
/// The extra scope `tools/call` needs under [`AsFault::ScopeStepUp`].
pub const WRITE_SCOPE: &str = "mcp:write";

/// How the authorization server (and the resource using it) misbehaves.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AsFault {
    /// Everything works.
    None,
    /// The first access token a client gets is already expired: the resource answers 401
    /// `invalid_token`; a refresh gets a good one.
    ExpiredToken,
    /// As `ExpiredToken`, and the refresh token was revoked: refreshing fails with
    /// `invalid_grant`; only a new authorization helps.
    RevokedRefresh,
    /// Tokens are issued for another resource, whatever the client names: the resource always
    /// refuses them; a client must give up, not loop.
    WrongAudience,
    /// The metadata lists no `code_challenge_methods_supported`: a client must refuse to
    /// authorize without PKCE.
    MissingPkce,
    /// The metadata is 404: discovery fails.
    Metadata404,
    /// `tools/call` needs `mcp:write` besides `mcp:tools`: 403 `insufficient_scope` until the
    /// client steps up.
    ScopeStepUp,
    /// Tokens are DPoP-bound (RFC 9449): the metadata lists ES256 in
    /// `dpop_signing_alg_values_supported`, a token request needs a valid proof, the token is
    /// `token_type` DPoP bound to the proof's key, and the resource takes it only with the DPoP
    /// scheme and a fresh proof of that key (`ath` its hash) on each request.
    Dpop,
    /// As `Dpop`, and the token endpoint and the resource each demand their current nonce
    /// (§8, §9): a proof without it is refused with `use_dpop_nonce` and the nonce in
    /// `DPoP-Nonce`.
    DpopNonce,
}

impl AsFault {
    /// Every fault, with its parameter name.
    pub const ALL: &'static [(&'static str, AsFault)] = &[
        ("none", AsFault::None),
        ("expired_token", AsFault::ExpiredToken),
        ("revoked_refresh", AsFault::RevokedRefresh),
        ("wrong_audience", AsFault::WrongAudience),
        ("missing_pkce", AsFault::MissingPkce),
        ("metadata_404", AsFault::Metadata404),
        ("scope_step_up", AsFault::ScopeStepUp),
        ("dpop", AsFault::Dpop),
        ("dpop_nonce", AsFault::DpopNonce),
    ];

    /// Parses a parameter name.
    pub fn parse(s: &str) -> Option<AsFault> {
        AsFault::ALL.iter().find(|(n, _)| *n == s).map(|(_, f)| *f)
    }

    /// Whether tokens are DPoP-bound.
    pub fn dpop(self) -> bool {
        matches!(self, AsFault::Dpop | AsFault::DpopNonce)
    }

    /// The parameter name.
    pub fn name(self) -> &'static str {
        AsFault::ALL
            .iter()
            .find(|(_, f)| *f == self)
            .map(|(n, _)| *n)
            .unwrap_or("none")
    }
}

/// An access token as the server keeps it.
#[derive(Debug, Clone)]
struct Access {
    /// The audience the server bound the token to.
    resource: String,
    /// The resource the client asked for (RFC 8707 `resource`); empty when it named none.
    requested: String,
    scope: String,
    expired: bool,
    revoked: bool,
    /// The thumbprint of the DPoP key the token is bound to (`cnf.jkt`), if it is.
    jkt: Option<String>,
}

#[derive(Debug, Clone)]
struct Code {
    client_id: String,
    challenge: String,
    redirect_uri: String,
    resource: String,
    scope: String,
}

#[derive(Debug, Clone)]
struct Refresh {
    client_id: String,
    resource: String,
    scope: String,
    revoked: bool,
    /// A public client's refresh token is bound to its DPoP key too (RFC 9449 §5).
    jkt: Option<String>,
}

/// Most registrations, codes, access and refresh tokens kept, each: past it the oldest goes.
pub const MAX_ENTRIES: usize = 10_000;
/// The largest registration document accepted, in bytes (larger: 400).
pub const MAX_REGISTRATION_BYTES: usize = 16 * 1024;
/// How long a code may wait for its token request.
const CODE_SECONDS: u64 = 60;
/// How long a registration or refresh token is kept.
const LONG_SECONDS: u64 = 24 * 3600;
/// How long a DPoP proof's `jti` is remembered: longer than the window its `iat` may be in,
/// so a proof cannot be replayed while it would pass.
const JTI_SECONDS: u64 = 900;

/// A map bounded in count, each entry with a lifetime: the oldest is evicted first when
/// full, and an entry past its lifetime is gone. Clients that register or authorize without
/// end cannot grow the server's memory (3,000 registrations of 100 KB cost 314 MB before).
struct Bounded<V> {
    map: HashMap<String, (std::time::Instant, V)>,
    order: std::collections::VecDeque<String>,
    max: usize,
    ttl: std::time::Duration,
}

impl<V> Bounded<V> {
    fn new(max: usize, ttl_seconds: u64) -> Bounded<V> {
        Bounded {
            map: HashMap::new(),
            order: std::collections::VecDeque::new(),
            max: max.max(1),
            ttl: std::time::Duration::from_secs(ttl_seconds),
        }
    }
    fn insert(&mut self, k: String, v: V) {
        let now = std::time::Instant::now();
        // Drop the expired and the removed from the front, then the oldest while full.
        while let Some(front) = self.order.front() {
            let stale = self
                .map
                .get(front)
                .is_none_or(|(at, _)| now.duration_since(*at) >= self.ttl);
            // The order also holds keys removed since (a used code): bound it too.
            let long = self.order.len() >= 2 * self.max;
            if !(stale || long || self.map.len() >= self.max) {
                break;
            }
            let old = self.order.pop_front().expect("front");
            if stale || long || self.map.len() >= self.max {
                self.map.remove(&old);
            }
        }
        self.order.push_back(k.clone());
        self.map.insert(k, (now, v));
    }
    fn live(&self, k: &str) -> bool {
        self.map
            .get(k)
            .is_some_and(|(at, _)| at.elapsed() < self.ttl)
    }
    fn get(&self, k: &str) -> Option<&V> {
        self.live(k).then(|| &self.map[k].1)
    }
    fn get_mut(&mut self, k: &str) -> Option<&mut V> {
        if !self.live(k) {
            return None;
        }
        self.map.get_mut(k).map(|(_, v)| v)
    }
    fn remove(&mut self, k: &str) -> Option<V> {
        let live = self.live(k);
        self.map.remove(k).filter(|_| live).map(|(_, v)| v)
    }
    #[cfg(test)]
    fn len(&self) -> usize {
        self.map.len()
    }
}

struct AsData {
    clients: Bounded<Vec<String>>,
    codes: Bounded<Code>,
    access: Bounded<Access>,
    refresh: Bounded<Refresh>,
    /// Clients that have had a code grant (the faults hit each client's first one only),
    /// bounded like the registrations they belong to: a set without bound grew by one entry
    /// for every client that ever authorized.
    granted: Bounded<()>,
    /// DPoP proof `jti`s seen (a replayed proof is refused).
    jtis: Bounded<()>,
    /// The nonces the token endpoint and the resource demand under `dpop_nonce`.
    as_nonce: String,
    rs_nonce: String,
    counters: HashMap<&'static str, u64>,
}

impl Default for AsData {
    fn default() -> Self {
        AsData {
            clients: Bounded::new(MAX_ENTRIES, LONG_SECONDS),
            codes: Bounded::new(MAX_ENTRIES, CODE_SECONDS),
            access: Bounded::new(MAX_ENTRIES, ACCESS_SECONDS),
            refresh: Bounded::new(MAX_ENTRIES, LONG_SECONDS),
            granted: Bounded::new(MAX_ENTRIES, LONG_SECONDS),
            jtis: Bounded::new(MAX_ENTRIES, JTI_SECONDS),
            as_nonce: format!("as-{}", random_token()),
            rs_nonce: format!("rs-{}", random_token()),
            counters: HashMap::new(),
        }
    }
}

/// The server's state, shared by every fault variant (a token is valid only at the resource
/// of the variant that issued it, since each issues for the resource named).
#[derive(Default)]
pub struct AuthServer {
    data: Mutex<AsData>,
}

/// Why the resource refuses a token.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TokenCheck {
    /// Valid, with these scopes.
    Valid(String),
    /// No such token, revoked, expired or for another audience, or (DPoP) presented without
    /// a valid proof of its key (401 `invalid_token`).
    Invalid(&'static str),
    /// A DPoP proof without the resource's current nonce: 401 `use_dpop_nonce` with this
    /// nonce in `DPoP-Nonce` (RFC 9449 §9).
    UseNonce(String),
}

fn random_token() -> String {
    use base64::Engine;
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(random_bytes::<24>())
}

fn s256(verifier: &str) -> String {
    use base64::Engine;
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(Sha256::digest(verifier.as_bytes()))
}

/// An `application/x-www-form-urlencoded` body as a map.
pub(crate) fn form_pairs(body: &str) -> HashMap<String, String> {
    body.split('&')
        .filter(|p| !p.is_empty())
        .map(|p| match p.split_once('=') {
            Some((k, v)) => (percent_decode(k), percent_decode(v)),
            None => (percent_decode(p), String::new()),
        })
        .collect()
}

fn oauth_error(status: u16, error: &str, description: &str) -> Response<Body> {
    json_response(
        status,
        &json!({ "error": error, "error_description": description }),
    )
}

fn unix_now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}

impl AuthServer {
    fn bump(d: &mut AsData, key: &'static str) {
        *d.counters.entry(key).or_insert(0) += 1;
    }

    /// Counters: `registrations`, `authorizations`, `codeGrants`, `refreshGrants`,
    /// `refusedTokenRequests`, `revocations`, `misdirectedTokens`: access tokens presented
    /// at a resource other than the one the client asked for (or asked for none), which the
    /// judge grades as a token sent to another resource, and under the DPoP faults
    /// `dpopProofsRefused` (at the token endpoint or the resource) and `dpopNonceChallenges`
    /// (`use_dpop_nonce` answers).
    pub fn counters(&self) -> Value {
        let d = self.data.lock().expect("as lock");
        let mut m = serde_json::Map::new();
        for k in [
            "registrations",
            "authorizations",
            "codeGrants",
            "refreshGrants",
            "refusedTokenRequests",
            "revocations",
            "misdirectedTokens",
            "dpopProofsRefused",
            "dpopNonceChallenges",
        ] {
            m.insert(k.into(), json!(d.counters.get(k).copied().unwrap_or(0)));
        }
        Value::Object(m)
    }

    /// Judges a bearer token presented to the resource at `resource`. A token the client asked
    /// for another resource (or for none) is counted as misdirected before it is judged: under
    /// `wrong_audience` the server, not the client, picked the wrong audience, so only what the
    /// client asked for tells whether the client sent a token where it does not belong. A
    /// DPoP-bound token is no bearer token: without its proof it is refused.
    pub fn check(&self, token: &str, resource: &str) -> TokenCheck {
        let mut d = self.data.lock().expect("as lock");
        match AuthServer::judge(&mut d, token, resource) {
            Ok(a) if a.jkt.is_some() => TokenCheck::Invalid(
                "the access token is DPoP-bound: present it with the DPoP scheme and a proof",
            ),
            Ok(a) => TokenCheck::Valid(a.scope),
            Err(refused) => refused,
        }
    }

    /// Judges a token presented with the DPoP scheme and `proof` (the `DPoP` header) in a
    /// request `htm` to `resource` (RFC 9449 §7.1): the token as [`AuthServer::check`] does,
    /// then the proof (its `ath` the token's hash, its key the one the token is bound to, not
    /// seen before) and, with `want_nonce`, the resource's nonce.
    pub fn check_dpop(
        &self,
        token: &str,
        proof: Option<&str>,
        htm: &str,
        resource: &str,
        want_nonce: bool,
    ) -> TokenCheck {
        let mut d = self.data.lock().expect("as lock");
        let a = match AuthServer::judge(&mut d, token, resource) {
            Ok(a) => a,
            Err(refused) => return refused,
        };
        let Some(jkt) = a.jkt else {
            return TokenCheck::Invalid("the access token is not DPoP-bound: present it as Bearer");
        };
        let expect = crate::dpop_check::Expect {
            htm,
            htu: resource,
            access_token: Some(token),
            now: unix_now(),
        };
        let checked = proof
            .ok_or("the request has no DPoP proof")
            .and_then(|p| crate::dpop_check::check(p, expect))
            .and_then(|p| {
                if p.jkt != jkt {
                    Err("the DPoP proof's key is not the one the token is bound to")
                } else if !d.jtis.live(&p.jti) {
                    d.jtis.insert(p.jti.clone(), ());
                    Ok(p)
                } else {
                    Err("the DPoP proof was used before (its jti)")
                }
            });
        match checked {
            Err(why) => {
                AuthServer::bump(&mut d, "dpopProofsRefused");
                TokenCheck::Invalid(why)
            }
            Ok(p) if want_nonce && p.nonce.as_deref() != Some(d.rs_nonce.as_str()) => {
                AuthServer::bump(&mut d, "dpopNonceChallenges");
                TokenCheck::UseNonce(d.rs_nonce.clone())
            }
            Ok(_) => TokenCheck::Valid(a.scope),
        }
    }

    /// The record of a live access token for `resource`, counting a misdirected one; `Err` is
    /// the refusal.
    fn judge(d: &mut AsData, token: &str, resource: &str) -> Result<Access, TokenCheck> {
        if d.access.get(token).is_some_and(|a| a.requested != resource) {
            AuthServer::bump(d, "misdirectedTokens");
        }
        match d.access.get(token) {
            None => Err(TokenCheck::Invalid("unknown access token")),
            Some(a) if a.revoked => Err(TokenCheck::Invalid("the access token was revoked")),
            Some(a) if a.expired => Err(TokenCheck::Invalid("the access token expired")),
            Some(a) if a.resource != resource => Err(TokenCheck::Invalid(
                "the access token was issued for another resource",
            )),
            Some(a) => Ok(a.clone()),
        }
    }

    /// Under the DPoP faults, the proof of a token request to `token_url`: its key's
    /// thumbprint (what the token is bound to), or the refusal: no proof or a bad one
    /// (`invalid_dpop_proof`), or, under `dpop_nonce`, a proof without the current nonce
    /// (`use_dpop_nonce` with the nonce in `DPoP-Nonce`, RFC 9449 §8).
    fn token_proof(
        d: &mut AsData,
        fault: AsFault,
        proof: Option<&str>,
        token_url: &str,
    ) -> Result<String, ProofRefusal> {
        let expect = crate::dpop_check::Expect {
            htm: "POST",
            htu: token_url,
            access_token: None,
            now: unix_now(),
        };
        let checked = proof
            .ok_or("this authorization server binds tokens with DPoP: the token request needs a DPoP proof")
            .and_then(|p| crate::dpop_check::check(p, expect))
            .and_then(|p| {
                if d.jtis.live(&p.jti) {
                    return Err("the DPoP proof was used before (its jti)");
                }
                d.jtis.insert(p.jti.clone(), ());
                Ok(p)
            });
        let p = match checked {
            Ok(p) => p,
            Err(why) => {
                AuthServer::bump(d, "dpopProofsRefused");
                AuthServer::bump(d, "refusedTokenRequests");
                return Err(ProofRefusal::Invalid(why));
            }
        };
        if fault == AsFault::DpopNonce && p.nonce.as_deref() != Some(d.as_nonce.as_str()) {
            AuthServer::bump(d, "dpopNonceChallenges");
            return Err(ProofRefusal::UseNonce(d.as_nonce.clone()));
        }
        Ok(p.jkt)
    }

    /// Issues an access token (and a refresh token) for a grant; `first` is a client's first
    /// code grant, the one the expiry and revocation faults spoil.
    fn issue(
        d: &mut AsData,
        fault: AsFault,
        client_id: &str,
        resource: &str,
        scope: &str,
        first: bool,
        jkt: Option<&str>,
    ) -> Value {
        let access = random_token();
        let refresh = random_token();
        let audience = if fault == AsFault::WrongAudience {
            "https://another-resource.invalid/mcp".to_string()
        } else {
            resource.to_string()
        };
        let expired = first && matches!(fault, AsFault::ExpiredToken | AsFault::RevokedRefresh);
        d.access.insert(
            access.clone(),
            Access {
                resource: audience,
                requested: resource.to_string(),
                scope: scope.to_string(),
                expired,
                revoked: false,
                jkt: jkt.map(str::to_string),
            },
        );
        d.refresh.insert(
            refresh.clone(),
            Refresh {
                client_id: client_id.to_string(),
                resource: resource.to_string(),
                scope: scope.to_string(),
                revoked: first && fault == AsFault::RevokedRefresh,
                jkt: jkt.map(str::to_string),
            },
        );
        let mut body = json!({
            "access_token": access,
            "token_type": if jkt.is_some() { "DPoP" } else { "Bearer" },
            "expires_in": ACCESS_SECONDS,
            "refresh_token": refresh,
        });
        if !scope.is_empty() {
            body["scope"] = json!(scope);
        }
        body
    }
}

/// Why the token endpoint refuses a request's DPoP proof.
enum ProofRefusal {
    /// No proof, or a bad one: `invalid_dpop_proof`.
    Invalid(&'static str),
    /// A good proof without the current nonce: `use_dpop_nonce`, the nonce in `DPoP-Nonce`.
    UseNonce(String),
}

impl ProofRefusal {
    fn response(self) -> Response<Body> {
        match self {
            ProofRefusal::Invalid(why) => oauth_error(400, "invalid_dpop_proof", why),
            ProofRefusal::UseNonce(nonce) => {
                let mut r = oauth_error(
                    400,
                    "use_dpop_nonce",
                    "this authorization server requires a DPoP nonce",
                );
                if let Ok(v) = axum::http::HeaderValue::from_str(&nonce) {
                    r.headers_mut().insert("dpop-nonce", v);
                }
                r
            }
        }
    }
}

/// The issuer of the variant for `fault` on a kitchen at `base`.
pub fn issuer(base: &str, fault: AsFault) -> String {
    format!("{base}/oauth/{}", fault.name())
}

/// The answer for a path naming no fault variant.
fn no_such_server() -> Response<Body> {
    oauth_error(404, "not_found", "no such authorization server")
}

/// `GET /.well-known/oauth-authorization-server/oauth/{fault}` (RFC 8414 path insertion).
/// `base` is the origin the client used ([`crate::origin::base_url`]).
pub fn metadata(base: &str, fault: &str) -> Response<Body> {
    let Some(fault) = AsFault::parse(fault) else {
        return no_such_server();
    };
    if fault == AsFault::Metadata404 {
        return oauth_error(
            404,
            "not_found",
            "this authorization server publishes no metadata",
        );
    }
    let i = issuer(base, fault);
    let mut m = json!({
        "issuer": i,
        "authorization_endpoint": format!("{i}/authorize"),
        "token_endpoint": format!("{i}/token"),
        "registration_endpoint": format!("{i}/register"),
        "revocation_endpoint": format!("{i}/revoke"),
        "response_types_supported": ["code"],
        "grant_types_supported": ["authorization_code", "refresh_token"],
        "token_endpoint_auth_methods_supported": ["none"],
        "scopes_supported": [BASE_SCOPE, WRITE_SCOPE],
        "code_challenge_methods_supported": ["S256"],
    });
    if fault.dpop() {
        m["dpop_signing_alg_values_supported"] = json!(["ES256"]);
    }
    if fault == AsFault::MissingPkce {
        if let Some(o) = m.as_object_mut() {
            o.remove("code_challenge_methods_supported");
        }
    }
    json_response(200, &m)
}

/// `POST /oauth/{fault}/register`: every client is a public client.
pub fn register(auth: &AuthServer, fault: &str, body: &str) -> Response<Body> {
    if AsFault::parse(fault).is_none() {
        return no_such_server();
    }
    if body.len() > MAX_REGISTRATION_BYTES {
        return oauth_error(
            400,
            "invalid_client_metadata",
            &format!(
                "the registration document is {} bytes, over the limit of {MAX_REGISTRATION_BYTES}",
                body.len()
            ),
        );
    }
    let Ok(doc) = serde_json::from_str::<Value>(body) else {
        return oauth_error(400, "invalid_client_metadata", "the body is not JSON");
    };
    let uris: Vec<String> = doc["redirect_uris"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .map(str::to_string)
        .collect();
    if uris.is_empty() {
        return oauth_error(400, "invalid_redirect_uri", "redirect_uris is required");
    }
    let id = format!("kitchen-client-{}", random_token());
    let mut d = auth.data.lock().expect("as lock");
    AuthServer::bump(&mut d, "registrations");
    d.clients.insert(id.clone(), uris.clone());
    json_response(
        201,
        &json!({ "client_id": id, "redirect_uris": uris, "token_endpoint_auth_method": "none" }),
    )
}

/// `GET /oauth/{fault}/authorize`: approves at once by redirecting with a code; PKCE S256 and a
/// registered redirect URI are required.
pub fn authorize(auth: &AuthServer, fault: &str, q: &HashMap<String, String>) -> Response<Body> {
    if AsFault::parse(fault).is_none() {
        return no_such_server();
    }
    let get = |k: &str| q.get(k).cloned().unwrap_or_default();
    let (client_id, redirect) = (get("client_id"), get("redirect_uri"));
    let mut d = auth.data.lock().expect("as lock");
    AuthServer::bump(&mut d, "authorizations");
    if !d
        .clients
        .get(&client_id)
        .is_some_and(|u| u.contains(&redirect))
    {
        // Never redirect to an unverified URI (RFC 6749 §4.1.2.1).
        return oauth_error(400, "invalid_request", "unknown client_id or redirect_uri");
    }
    let sep = if redirect.contains('?') { '&' } else { '?' };
    let state = mcp_triage_wire::percent::encode(&get("state"));
    if get("code_challenge").is_empty() || get("code_challenge_method") != "S256" {
        let to = format!("{redirect}{sep}error=invalid_request&error_description=PKCE+S256+required&state={state}");
        return Response::builder()
            .status(302)
            .header("location", to)
            .body(Body::empty())
            .expect("redirect");
    }
    let code = random_token();
    d.codes.insert(
        code.clone(),
        Code {
            client_id,
            challenge: get("code_challenge"),
            redirect_uri: redirect.clone(),
            resource: get("resource"),
            scope: get("scope"),
        },
    );
    Response::builder()
        .status(302)
        .header(
            "location",
            format!("{redirect}{sep}code={code}&state={state}"),
        )
        .body(Body::empty())
        .expect("redirect")
}

/// `POST /oauth/{fault}/token`: authorization_code (PKCE checked, one use) and refresh_token.
/// Under the DPoP faults `proof` (the `DPoP` header) is checked against `token_url` first, and
/// the tokens are bound to its key.
pub fn token(
    auth: &AuthServer,
    fault: &str,
    body: &str,
    proof: Option<&str>,
    token_url: &str,
) -> Response<Body> {
    let Some(fault) = AsFault::parse(fault) else {
        return no_such_server();
    };
    let f = form_pairs(body);
    let get = |k: &str| f.get(k).cloned().unwrap_or_default();
    let mut d = auth.data.lock().expect("as lock");
    let jkt = if fault.dpop() {
        match AuthServer::token_proof(&mut d, fault, proof, token_url) {
            Ok(jkt) => Some(jkt),
            Err(refused) => return refused.response(),
        }
    } else {
        None
    };
    let jkt = jkt.as_deref();
    let refuse = |d: &mut AsData, error: &str, why: &str| {
        AuthServer::bump(d, "refusedTokenRequests");
        oauth_error(400, error, why)
    };
    match get("grant_type").as_str() {
        "authorization_code" => {
            let Some(c) = d.codes.remove(&get("code")) else {
                return refuse(&mut d, "invalid_grant", "unknown or used code");
            };
            if c.client_id != get("client_id") || c.redirect_uri != get("redirect_uri") {
                return refuse(&mut d, "invalid_grant", "client_id or redirect_uri differ");
            }
            if s256(&get("code_verifier")) != c.challenge {
                return refuse(&mut d, "invalid_grant", "code_verifier does not match");
            }
            AuthServer::bump(&mut d, "codeGrants");
            let resource = if get("resource").is_empty() {
                c.resource.clone()
            } else {
                get("resource")
            };
            let first = !d.granted.live(&c.client_id);
            d.granted.insert(c.client_id.clone(), ());
            let body =
                AuthServer::issue(&mut d, fault, &c.client_id, &resource, &c.scope, first, jkt);
            json_response(200, &body)
        }
        "refresh_token" => {
            let Some(r) = d.refresh.get(&get("refresh_token")).cloned() else {
                return refuse(&mut d, "invalid_grant", "unknown refresh token");
            };
            if r.revoked {
                return refuse(&mut d, "invalid_grant", "the refresh token was revoked");
            }
            if r.client_id != get("client_id") {
                return refuse(
                    &mut d,
                    "invalid_grant",
                    "the refresh token belongs to another client",
                );
            }
            if r.jkt.is_some() && r.jkt.as_deref() != jkt {
                return refuse(
                    &mut d,
                    "invalid_grant",
                    "the refresh token is bound to another DPoP key",
                );
            }
            d.refresh.remove(&get("refresh_token"));
            AuthServer::bump(&mut d, "refreshGrants");
            let body = AuthServer::issue(
                &mut d,
                fault,
                &r.client_id,
                &r.resource,
                &r.scope,
                false,
                jkt,
            );
            json_response(200, &body)
        }
        _ => refuse(
            &mut d,
            "unsupported_grant_type",
            "authorization_code or refresh_token",
        ),
    }
}

/// `POST /oauth/{fault}/revoke` (RFC 7009): revokes an access or refresh token; 200 either way.
pub fn revoke(auth: &AuthServer, fault: &str, body: &str) -> Response<Body> {
    if AsFault::parse(fault).is_none() {
        return no_such_server();
    }
    let f = form_pairs(body);
    let token = f.get("token").cloned().unwrap_or_default();
    let mut d = auth.data.lock().expect("as lock");
    AuthServer::bump(&mut d, "revocations");
    if let Some(a) = d.access.get_mut(&token) {
        a.revoked = true;
    }
    if let Some(r) = d.refresh.get_mut(&token) {
        r.revoked = true;
    }
    json_response(200, &json!({}))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Issue 23 item 10: the stores are bounded (oldest evicted first) and entries expire.
    #[test]
    fn bounded_stores_evict_the_oldest_and_expire() {
        let mut b: Bounded<u32> = Bounded::new(3, 3600);
        for i in 0..10u32 {
            b.insert(format!("k{i}"), i);
        }
        assert_eq!(b.len(), 3);
        assert_eq!(b.get("k0"), None);
        assert_eq!(b.get("k9"), Some(&9));
        assert_eq!(b.remove("k7"), Some(7));
        b.insert("k10".into(), 10);
        assert!(b.len() <= 3, "{}", b.len());
        for i in 0..100u32 {
            b.insert(format!("r{i}"), i);
            b.remove(&format!("r{i}"));
        }
        assert!(b.order.len() <= 6, "order holds {} keys", b.order.len());
        let mut e: Bounded<u32> = Bounded::new(3, 0);
        e.insert("gone".into(), 1);
        assert_eq!(e.get("gone"), None);
        assert_eq!(e.remove("gone"), None);
    }

    #[test]
    fn faults_round_trip_their_names() {
        for (n, f) in AsFault::ALL {
            assert_eq!(AsFault::parse(n), Some(*f));
            assert_eq!(f.name(), *n);
        }
        assert_eq!(AsFault::parse("nope"), None);
    }

    #[test]
    fn tokens_are_judged_by_audience_expiry_and_revocation() {
        let a = AuthServer::default();
        let mut d = a.data.lock().unwrap();
        let good = AuthServer::issue(
            &mut d,
            AsFault::None,
            "c",
            "http://k/mcp",
            "mcp:tools",
            true,
            None,
        );
        let expired = AuthServer::issue(
            &mut d,
            AsFault::ExpiredToken,
            "c",
            "http://k/mcp",
            "",
            true,
            None,
        );
        let other = AuthServer::issue(
            &mut d,
            AsFault::WrongAudience,
            "c",
            "http://k/mcp",
            "",
            false,
            None,
        );
        drop(d);
        let t = |v: &Value| v["access_token"].as_str().unwrap().to_string();
        assert_eq!(
            a.check(&t(&good), "http://k/mcp"),
            TokenCheck::Valid("mcp:tools".into())
        );
        assert!(matches!(
            a.check(&t(&good), "http://k/other"),
            TokenCheck::Invalid(_)
        ));
        assert_eq!(
            a.check(&t(&expired), "http://k/mcp"),
            TokenCheck::Invalid("the access token expired")
        );
        assert!(matches!(
            a.check(&t(&other), "http://k/mcp"),
            TokenCheck::Invalid(_)
        ));
        assert!(matches!(
            a.check("nope", "http://k/mcp"),
            TokenCheck::Invalid(_)
        ));
        // Only the good token shown at http://k/other went where it was not asked for: the
        // wrong-audience token was asked for http://k/mcp, and the server picked its audience.
        assert_eq!(a.counters()["misdirectedTokens"], 1);
        assert_eq!(form_pairs("a=1&b=x%20y+z&c")["b"], "x y z");
    }

    #[test]
    fn dpop_tokens_need_a_fresh_proof_of_their_key_and_the_nonce() {
        use crate::dpop_check::tests::TestKey;
        let a = AuthServer::default();
        let (key, other) = (TestKey::new(), TestKey::new());
        let url = "http://k/mcp";
        let now = unix_now();
        let tok = {
            let mut d = a.data.lock().unwrap();
            let body = AuthServer::issue(
                &mut d,
                AsFault::Dpop,
                "c",
                url,
                "mcp:tools",
                false,
                Some(&key.jkt()),
            );
            assert_eq!(body["token_type"], "DPoP");
            body["access_token"].as_str().unwrap().to_string()
        };
        // As a bearer token it is refused.
        assert!(matches!(a.check(&tok, url), TokenCheck::Invalid(w) if w.contains("DPoP-bound")));
        let good = key.proof("POST", url, Some(&tok), None, now);
        assert_eq!(
            a.check_dpop(&tok, Some(&good), "POST", url, false),
            TokenCheck::Valid("mcp:tools".into())
        );
        // The same proof again, another key's proof, no proof: refused.
        let refused = |p: Option<&str>| a.check_dpop(&tok, p, "POST", url, false);
        assert!(
            matches!(refused(Some(&good)), TokenCheck::Invalid(w) if w.contains("used before"))
        );
        let stolen = other.proof("POST", url, Some(&tok), Some("x"), now);
        assert!(matches!(refused(Some(&stolen)), TokenCheck::Invalid(w) if w.contains("bound to")));
        assert!(matches!(refused(None), TokenCheck::Invalid(_)));
        assert_eq!(a.counters()["dpopProofsRefused"], 3);
        // Under dpop_nonce: the nonce is asked for, then accepted.
        let no_nonce = key.proof("POST", url, Some(&tok), Some("old"), now);
        let TokenCheck::UseNonce(n) = a.check_dpop(&tok, Some(&no_nonce), "POST", url, true) else {
            panic!("a nonce was expected");
        };
        let with_nonce = key.proof("POST", url, Some(&tok), Some(&n), now);
        assert_eq!(
            a.check_dpop(&tok, Some(&with_nonce), "POST", url, true),
            TokenCheck::Valid("mcp:tools".into())
        );
        assert_eq!(a.counters()["dpopNonceChallenges"], 1);
    }

    #[test]
    fn the_dpop_token_endpoint_checks_the_proof_and_asks_for_its_nonce() {
        use crate::dpop_check::tests::TestKey;
        let a = AuthServer::default();
        let key = TestKey::new();
        let url = "http://k/oauth/dpop_nonce/token";
        let body = "grant_type=refresh_token&refresh_token=x&client_id=c";
        let status = |r: Response<Body>| r.status().as_u16();
        // No proof: invalid_dpop_proof.
        assert_eq!(status(token(&a, "dpop_nonce", body, None, url)), 400);
        assert_eq!(a.counters()["dpopProofsRefused"], 1);
        // A good proof without the nonce: use_dpop_nonce with the nonce in DPoP-Nonce.
        let p = key.proof("POST", url, None, None, unix_now());
        let r = token(&a, "dpop_nonce", body, Some(&p), url);
        assert_eq!(r.status(), 400);
        let nonce = r.headers()["dpop-nonce"].to_str().unwrap().to_string();
        assert_eq!(a.counters()["dpopNonceChallenges"], 1);
        // With it the proof passes and the grant itself is judged (an unknown refresh token).
        let p = key.proof("POST", url, None, Some(&nonce), unix_now());
        let r = token(&a, "dpop_nonce", body, Some(&p), url);
        assert_eq!(r.status(), 400);
        assert!(r.headers().get("dpop-nonce").is_none());
        assert_eq!(a.counters()["dpopNonceChallenges"], 1);
        assert_eq!(a.counters()["refusedTokenRequests"], 2);
    }
}
