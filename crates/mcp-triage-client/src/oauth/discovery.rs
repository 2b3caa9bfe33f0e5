//! The pure rules of MCP authorization discovery: which metadata URLs to ask in which order,
//! which resource to name, which scope to request, and which way to authenticate at the token
//! endpoint. No I/O here, so each rule is tested on its own; the flows in [`super`] use them.

use reqwest::Url;

/// The RFC 9728 well-known suffix of protected-resource metadata.
const PRM_WELL_KNOWN: &str = "/.well-known/oauth-protected-resource";
/// RFC 8414 authorization-server metadata.
const AS_WELL_KNOWN: &str = "/.well-known/oauth-authorization-server";
/// OpenID Connect discovery.
const OIDC_WELL_KNOWN: &str = "/.well-known/openid-configuration";

/// The scope a client adds to get a refresh token where the AS lists it (SEP-2207).
pub const OFFLINE_ACCESS: &str = "offline_access";

/// The server URL as a resource identifier (RFC 8707 §2): no fragment; scheme and host
/// lower-case (the URL parser already does that).
pub fn canonical_resource(server: &Url) -> String {
    let mut u = server.clone();
    u.set_fragment(None);
    u.to_string()
}

/// The path of `u` without a trailing slash (`""` for the root).
fn trimmed_path(u: &Url) -> &str {
    u.path().trim_end_matches('/')
}

/// `u`'s origin with `path` as its path (no query, no fragment).
fn at_origin(u: &Url, path: &str) -> Url {
    let mut out = u.clone();
    out.set_path(path);
    out.set_query(None);
    out.set_fragment(None);
    out
}

/// Protected-resource metadata URLs to ask, in order (MCP 2025-11-25 §Authorization Server
/// Discovery): the `resource_metadata` of the `WWW-Authenticate` challenge when there is one
/// (an http(s) URL), then the path-suffixed well-known URL, then the root one.
pub fn protected_resource_metadata_urls(server: &Url, from_header: Option<&str>) -> Vec<Url> {
    let mut out: Vec<Url> = Vec::new();
    if let Some(u) = from_header
        .and_then(|h| Url::parse(h).ok())
        .filter(|u| matches!(u.scheme(), "http" | "https"))
    {
        out.push(u);
    }
    let path = trimmed_path(server);
    if !path.is_empty() {
        out.push(at_origin(server, &format!("{PRM_WELL_KNOWN}{path}")));
    }
    out.push(at_origin(server, PRM_WELL_KNOWN));
    out.dedup();
    out
}

/// Authorization-server metadata URLs for an issuer, in the order the MCP spec gives: for an
/// issuer with a path, RFC 8414 path insertion, OIDC path insertion, then OIDC path
/// appending; for one without, RFC 8414 then OIDC.
pub fn authorization_server_metadata_urls(issuer: &Url) -> Vec<Url> {
    let path = trimmed_path(issuer);
    if path.is_empty() {
        return vec![
            at_origin(issuer, AS_WELL_KNOWN),
            at_origin(issuer, OIDC_WELL_KNOWN),
        ];
    }
    vec![
        at_origin(issuer, &format!("{AS_WELL_KNOWN}{path}")),
        at_origin(issuer, &format!("{OIDC_WELL_KNOWN}{path}")),
        at_origin(issuer, &format!("{path}{OIDC_WELL_KNOWN}")),
    ]
}

/// Whether `u` may carry OAuth traffic (codes, PKCE verifiers, client secrets, tokens): https
/// anywhere, plain http only to a loopback host. MCP authorization: "All authorization server
/// endpoints MUST be served over HTTPS" (OAuth 2.1 §1.5); loopback is where a development
/// server or a test authorization server runs, and its traffic never leaves the machine.
pub fn secure_or_loopback(u: &Url) -> bool {
    match u.scheme() {
        "https" => true,
        "http" => {
            let Some(host) = u.host_str() else {
                return false;
            };
            let bare = host.trim_start_matches('[').trim_end_matches(']');
            match bare.parse::<std::net::IpAddr>() {
                Ok(ip) => ip.is_loopback(),
                Err(_) => {
                    let d = host.to_ascii_lowercase();
                    d == "localhost" || d.ends_with(".localhost")
                }
            }
        }
        _ => false,
    }
}

/// `s` as the URL of an authorization-server `role` (issuer, metadata, authorization, token or
/// registration endpoint): an http(s) URL, and https unless its host is loopback. The error
/// names the role and the URL, so a user sees which document pointed where.
pub fn authorization_server_url(s: &str, role: &str) -> Result<Url, AuthorizationServerUrlError> {
    let u = Url::parse(s)
        .ok()
        .filter(|u| matches!(u.scheme(), "http" | "https"))
        .ok_or_else(|| AuthorizationServerUrlError::NotHttp {
            role: role.to_string(),
            url: s.to_string(),
        })?;
    check_authorization_server_url(&u, role)?;
    Ok(u)
}

/// The https-unless-loopback rule of [`authorization_server_url`] for a parsed URL.
pub fn check_authorization_server_url(
    u: &Url,
    role: &str,
) -> Result<(), AuthorizationServerUrlError> {
    if secure_or_loopback(u) {
        return Ok(());
    }
    Err(AuthorizationServerUrlError::PlainHttp {
        role: role.to_string(),
        url: u.to_string(),
    })
}

/// An authorization-server URL that must not be used; names the role and the URL, so a user
/// sees which document pointed where.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum AuthorizationServerUrlError {
    /// Not a URL, or not http(s).
    #[error("the {role} {url:?} is not an http(s) URL")]
    NotHttp {
        /// What the URL is for (issuer, token endpoint, …).
        role: String,
        /// The text as given.
        url: String,
    },
    /// `http://` on a host that is not loopback.
    #[error(
        "the {role} {url} is plain http on a host that is not loopback: refusing to send OAuth \
         codes, verifiers, secrets or tokens in clear (authorization servers must use https)"
    )]
    PlainHttp {
        /// What the URL is for (issuer, token endpoint, …).
        role: String,
        /// The URL.
        url: String,
    },
}

/// The 2025-03-26 authorization base URL: the server URL with its path discarded.
pub fn legacy_authorization_base(server: &Url) -> Url {
    at_origin(server, "/")
}

/// The 2025-03-26 default endpoints when the server publishes no metadata at all:
/// `/authorize`, `/token` and `/register` at the authorization base URL.
pub fn legacy_default_endpoints(server: &Url) -> (Url, Url, Url) {
    (
        at_origin(server, "/authorize"),
        at_origin(server, "/token"),
        at_origin(server, "/register"),
    )
}

/// Whether protected-resource metadata naming `resource` may describe `server` (RFC 9728 §3.3:
/// the resource must be the one the client asked about). Accepted: the same origin, and a path
/// that is the server's path or a parent of it on a segment boundary (a root PRM describes
/// every path below it). Anything else — another origin above all — is refused, so a token
/// is never requested for one resource and spent on another.
pub fn resource_matches(resource: &str, server: &Url) -> bool {
    let Ok(r) = Url::parse(resource) else {
        return false;
    };
    if r.fragment().is_some() || r.origin() != server.origin() {
        return false;
    }
    let rp = trimmed_path(&r);
    let sp = trimmed_path(server);
    rp.is_empty() || sp == rp || sp.starts_with(&format!("{rp}/"))
}

/// The scopes of a space-separated scope string, without empties.
pub fn scope_set(s: &str) -> Vec<&str> {
    s.split(' ').filter(|x| !x.is_empty()).collect()
}

/// Whether `granted` includes every scope of `required`.
pub fn scope_covers(granted: &str, required: &str) -> bool {
    let g = scope_set(granted);
    scope_set(required).iter().all(|r| g.contains(r))
}

/// `a` then the scopes of `b` that `a` lacks.
pub fn scope_union(a: &str, b: &str) -> String {
    let mut out: Vec<&str> = scope_set(a);
    for s in scope_set(b) {
        if !out.contains(&s) {
            out.push(s);
        }
    }
    out.join(" ")
}

/// The scope to request (MCP 2025-11-25 §Scope Selection Strategy): the challenge's `scope`,
/// else every scope of the protected-resource metadata's `scopes_supported`, else none (the
/// parameter is omitted). `offline_access` is added when a scope is requested at all and the
/// authorization server lists it, since the client wants a refresh token (SEP-2207); never
/// when the AS does not list it.
pub fn select_scope(
    challenge: Option<&str>,
    prm_scopes: &[String],
    as_scopes: &[String],
) -> Option<String> {
    let base = match challenge.map(str::trim).filter(|s| !s.is_empty()) {
        Some(s) => s.to_string(),
        None if !prm_scopes.is_empty() => prm_scopes.join(" "),
        None => return None,
    };
    if as_scopes.iter().any(|s| s == OFFLINE_ACCESS) {
        return Some(scope_union(&base, OFFLINE_ACCESS));
    }
    Some(base)
}

/// How the client authenticates at the token endpoint (RFC 6749 §2.3, RFC 8414
/// `token_endpoint_auth_methods_supported`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TokenAuthMethod {
    /// HTTP Basic with the client id and secret.
    ClientSecretBasic,
    /// `client_id` and `client_secret` in the form body.
    ClientSecretPost,
    /// A public client: `client_id` only.
    None,
}

impl TokenAuthMethod {
    /// The registered name.
    pub fn as_str(self) -> &'static str {
        match self {
            TokenAuthMethod::ClientSecretBasic => "client_secret_basic",
            TokenAuthMethod::ClientSecretPost => "client_secret_post",
            TokenAuthMethod::None => "none",
        }
    }

    /// Parses a registered name this client implements.
    pub fn parse(s: &str) -> Option<TokenAuthMethod> {
        match s {
            "client_secret_basic" => Some(TokenAuthMethod::ClientSecretBasic),
            "client_secret_post" => Some(TokenAuthMethod::ClientSecretPost),
            "none" => Some(TokenAuthMethod::None),
            _ => None,
        }
    }
}

/// The method to use: what registration answered when it named one we implement; `none` for a
/// client without a secret; else the first of basic and post the server lists (basic when the
/// server lists nothing: the RFC 8414 default).
pub fn token_auth_method(
    supported: &[String],
    has_secret: bool,
    registered: Option<&str>,
) -> TokenAuthMethod {
    if let Some(m) = registered.and_then(TokenAuthMethod::parse) {
        if m == TokenAuthMethod::None || has_secret {
            return m;
        }
    }
    if !has_secret {
        return TokenAuthMethod::None;
    }
    if supported.is_empty() || supported.iter().any(|s| s == "client_secret_basic") {
        return TokenAuthMethod::ClientSecretBasic;
    }
    if supported.iter().any(|s| s == "client_secret_post") {
        return TokenAuthMethod::ClientSecretPost;
    }
    TokenAuthMethod::ClientSecretBasic
}

/// The method to ask for at dynamic registration: `none` (a public native client) where the
/// server allows it, else the first secret-based method it lists.
pub fn registration_auth_method(supported: &[String]) -> TokenAuthMethod {
    if supported.is_empty() || supported.iter().any(|s| s == "none") {
        return TokenAuthMethod::None;
    }
    supported
        .iter()
        .find_map(|s| TokenAuthMethod::parse(s))
        .unwrap_or(TokenAuthMethod::ClientSecretBasic)
}

/// RFC 6749 §2.3.1 encodes the client id and secret with `application/x-www-form-urlencoded`
/// before Basic: every byte but unreserved characters is percent-encoded (space as `+`).
pub fn form_encode(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'*' => {
                out.push(b as char)
            }
            b' ' => out.push('+'),
            _ => out.push_str(&format!("%{b:02X}")),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn u(s: &str) -> Url {
        Url::parse(s).unwrap()
    }

    fn strs(v: &[Url]) -> Vec<String> {
        v.iter().map(Url::to_string).collect()
    }

    #[test]
    fn plain_http_only_to_loopback() {
        for ok in [
            "https://as.example.com/token",
            "http://127.0.0.1:9/token",
            "http://127.5.6.7/",
            "http://[::1]:8080/t",
            "http://localhost:3000/",
            "http://LOCALHOST/",
            "http://app.localhost/",
        ] {
            assert!(
                authorization_server_url(ok, "token endpoint").is_ok(),
                "{ok}"
            );
        }
        for bad in [
            "http://as.example.com/token",
            "http://10.0.0.1/token",
            "http://[2001:db8::1]/token",
            "http://localhost.example.com/",
            "http://127.0.0.1.nip.io/",
        ] {
            let e = authorization_server_url(bad, "token endpoint").unwrap_err();
            assert!(matches!(e, AuthorizationServerUrlError::PlainHttp { .. }));
            let e = e.to_string();
            assert!(
                e.contains("token endpoint") && e.contains("plain http"),
                "{bad}: {e}"
            );
        }
        let e = authorization_server_url("ftp://x/", "issuer").unwrap_err();
        assert!(matches!(e, AuthorizationServerUrlError::NotHttp { .. }));
        assert_eq!(
            e.to_string(),
            "the issuer \"ftp://x/\" is not an http(s) URL"
        );
        let e = authorization_server_url("http://as.example.com/t", "issuer").unwrap_err();
        assert_eq!(
            e.to_string(),
            "the issuer http://as.example.com/t is plain http on a host that is not loopback: \
             refusing to send OAuth codes, verifiers, secrets or tokens in clear \
             (authorization servers must use https)"
        );
    }

    #[test]
    fn prm_urls_header_first_then_path_then_root() {
        let server = u("http://localhost:3000/public/mcp");
        assert_eq!(
            strs(&protected_resource_metadata_urls(
                &server,
                Some("http://localhost:3000/custom/metadata.json")
            )),
            [
                "http://localhost:3000/custom/metadata.json",
                "http://localhost:3000/.well-known/oauth-protected-resource/public/mcp",
                "http://localhost:3000/.well-known/oauth-protected-resource",
            ]
        );
        // No header, a root server URL: only the root well-known URL.
        assert_eq!(
            strs(&protected_resource_metadata_urls(
                &u("https://a.example/"),
                None
            )),
            ["https://a.example/.well-known/oauth-protected-resource"]
        );
        // A header that is not an http(s) URL is ignored; the query of the server URL is not
        // carried into the metadata URL.
        assert_eq!(
            strs(&protected_resource_metadata_urls(
                &u("https://a.example/mcp/?x=1"),
                Some("javascript:alert(1)")
            )),
            [
                "https://a.example/.well-known/oauth-protected-resource/mcp",
                "https://a.example/.well-known/oauth-protected-resource",
            ]
        );
    }

    #[test]
    fn as_metadata_urls_follow_the_path_rules() {
        assert_eq!(
            strs(&authorization_server_metadata_urls(&u(
                "http://localhost:4000"
            ))),
            [
                "http://localhost:4000/.well-known/oauth-authorization-server",
                "http://localhost:4000/.well-known/openid-configuration",
            ]
        );
        assert_eq!(
            strs(&authorization_server_metadata_urls(&u(
                "http://localhost:4000/tenant1/"
            ))),
            [
                "http://localhost:4000/.well-known/oauth-authorization-server/tenant1",
                "http://localhost:4000/.well-known/openid-configuration/tenant1",
                "http://localhost:4000/tenant1/.well-known/openid-configuration",
            ]
        );
    }

    #[test]
    fn legacy_fallbacks_use_the_origin() {
        let s = u("http://localhost:5000/deep/mcp?q=1");
        assert_eq!(
            legacy_authorization_base(&s).to_string(),
            "http://localhost:5000/"
        );
        let (a, t, r) = legacy_default_endpoints(&s);
        assert_eq!(a.to_string(), "http://localhost:5000/authorize");
        assert_eq!(t.to_string(), "http://localhost:5000/token");
        assert_eq!(r.to_string(), "http://localhost:5000/register");
    }

    #[test]
    fn resource_must_be_this_server_or_a_parent_path() {
        let s = u("http://localhost:3000/mcp");
        assert!(resource_matches("http://localhost:3000/mcp", &s));
        assert!(resource_matches("http://localhost:3000/mcp/", &s));
        assert!(resource_matches("http://localhost:3000", &s));
        assert!(resource_matches("http://LOCALHOST:3000/", &s));
        assert!(!resource_matches("https://evil.example.com/mcp", &s));
        assert!(!resource_matches("http://localhost:3001/mcp", &s));
        assert!(!resource_matches("http://localhost:3000/mcpx", &s));
        assert!(!resource_matches("http://localhost:3000/other", &s));
        assert!(!resource_matches("http://localhost:3000/mcp#frag", &s));
        assert!(!resource_matches("not a url", &s));
        assert_eq!(
            canonical_resource(&u("HTTP://Example.COM:8080/mcp#x")),
            "http://example.com:8080/mcp"
        );
    }

    #[test]
    fn scope_selection_order_and_offline_access() {
        let prm = vec!["mcp:basic".to_string(), "mcp:read".to_string()];
        let none: Vec<String> = vec![];
        assert_eq!(
            select_scope(Some("files:read"), &prm, &none).as_deref(),
            Some("files:read")
        );
        assert_eq!(
            select_scope(None, &prm, &none).as_deref(),
            Some("mcp:basic mcp:read")
        );
        assert_eq!(select_scope(Some("  "), &none, &none), None);
        assert_eq!(select_scope(None, &none, &none), None);
        let with_offline = vec!["mcp:basic".to_string(), OFFLINE_ACCESS.to_string()];
        assert_eq!(
            select_scope(None, &prm, &with_offline).as_deref(),
            Some("mcp:basic mcp:read offline_access")
        );
        // Never offline_access alone, and never when the AS does not list it.
        assert_eq!(select_scope(None, &none, &with_offline), None);
        assert_eq!(
            select_scope(Some("mcp:basic"), &none, &prm).as_deref(),
            Some("mcp:basic")
        );
    }

    #[test]
    fn scope_sets_cover_and_unite() {
        assert!(scope_covers("a b c", "c a"));
        assert!(scope_covers("a", ""));
        assert!(!scope_covers("a b", "a d"));
        assert_eq!(scope_union("a b", "b c"), "a b c");
        assert_eq!(scope_union("", "x  y"), "x y");
    }

    #[test]
    fn token_auth_method_choice() {
        let s = |v: &[&str]| v.iter().map(|x| x.to_string()).collect::<Vec<_>>();
        assert_eq!(
            token_auth_method(
                &s(&["client_secret_post"]),
                true,
                Some("client_secret_post")
            ),
            TokenAuthMethod::ClientSecretPost
        );
        assert_eq!(
            token_auth_method(&s(&["none"]), false, Some("none")),
            TokenAuthMethod::None
        );
        // Registration named a secret method but gave no secret: a public client.
        assert_eq!(
            token_auth_method(&s(&[]), false, Some("client_secret_basic")),
            TokenAuthMethod::None
        );
        assert_eq!(
            token_auth_method(&s(&[]), true, None),
            TokenAuthMethod::ClientSecretBasic
        );
        assert_eq!(
            token_auth_method(&s(&["client_secret_post", "none"]), true, None),
            TokenAuthMethod::ClientSecretPost
        );
        assert_eq!(
            registration_auth_method(&s(&["client_secret_basic", "none"])),
            TokenAuthMethod::None
        );
        assert_eq!(
            registration_auth_method(&s(&["client_secret_post"])),
            TokenAuthMethod::ClientSecretPost
        );
        assert_eq!(
            registration_auth_method(&s(&["private_key_jwt"])),
            TokenAuthMethod::ClientSecretBasic
        );
        assert_eq!(form_encode("a b:c/é"), "a+b%3Ac%2F%C3%A9");
    }
}
