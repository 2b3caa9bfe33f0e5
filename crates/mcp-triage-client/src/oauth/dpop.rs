//! DPoP (RFC 9449; the MCP DPoP extension, SEP-1932): the client holds an ephemeral P-256 key
//! pair for the life of the process and proves possession of it on every request a bound token
//! is good for. A stolen DPoP-bound token is useless without the key, which never leaves memory
//! (it is not in the token store, so neither are the tokens bound to it).
//!
//! A proof is a JWT (`typ: dpop+jwt`, the public key as `jwk`) with a fresh `jti`, the request's
//! method (`htm`) and URL without query or fragment (`htu`), `iat`, the access token's hash
//! (`ath`) when one is presented, and the server's `nonce` once it gave one (`DPoP-Nonce`, §8
//! for the authorization server, §9 for the resource server). Signing is
//! [`super::jwt::sign_es256`], the same as the `private_key_jwt` assertion's.

use std::collections::HashMap;
use std::sync::Mutex;

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use reqwest::Url;
use ring::rand::SystemRandom;
use ring::signature::{EcdsaKeyPair, KeyPair, ECDSA_P256_SHA256_FIXED_SIGNING};
use serde_json::{json, Value};

use super::pkce::{random_token, s256, RandomError};

/// The algorithm proofs are signed with: the one `dpop_signing_alg_values_supported` must list
/// for [`DpopMode::Auto`] to use DPoP.
pub const ALG: &str = "ES256";

/// Longest `DPoP-Nonce` kept: a nonce is an opaque token, not a document.
const MAX_NONCE_CHARS: usize = 1024;

/// A DPoP key or proof could not be made.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum DpopError {
    /// ring could not generate or load the ephemeral key.
    #[error("could not make the DPoP key pair")]
    Key,
    /// No random `jti`.
    #[error(transparent)]
    Random(#[from] RandomError),
    /// ring refused to sign.
    #[error("signing the DPoP proof failed")]
    Sign,
}

/// When the client asks for DPoP-bound tokens (`--dpop`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum DpopMode {
    /// When the authorization server's metadata lists ES256 in
    /// `dpop_signing_alg_values_supported` (it then accepts proofs; a server that does not list
    /// it may reject a token request carrying one).
    #[default]
    Auto,
    /// Always send proofs, for a server that takes DPoP without advertising it.
    Always,
    /// Never: Bearer tokens only.
    Never,
}

/// A `--dpop` value that is not `auto`, `always` or `never`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0:?} is not auto, always or never")]
pub struct UnknownDpopMode(pub String);

impl DpopMode {
    /// Parses `auto`, `always` or `never`.
    pub fn parse(s: &str) -> Result<DpopMode, UnknownDpopMode> {
        match s {
            "auto" => Ok(DpopMode::Auto),
            "always" => Ok(DpopMode::Always),
            "never" => Ok(DpopMode::Never),
            _ => Err(UnknownDpopMode(s.to_string())),
        }
    }

    /// Whether to use DPoP with an authorization server listing `algs` as its
    /// `dpop_signing_alg_values_supported`.
    pub fn wanted(self, algs: &[String]) -> bool {
        match self {
            DpopMode::Auto => algs.iter().any(|a| a == ALG),
            DpopMode::Always => true,
            DpopMode::Never => false,
        }
    }
}

/// Which server a nonce is from: the authorization server's nonces go into token request
/// proofs, the resource server's into the MCP requests' (RFC 9449 §8, §9); they are kept apart
/// even on one origin, since each server rotates its own.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum Role {
    /// The token endpoint.
    AuthorizationServer,
    /// The MCP server.
    Resource,
}

/// An ephemeral P-256 key pair, its public JWK and the JWK's SHA-256 thumbprint (RFC 7638:
/// what a bound token's `cnf.jkt` names).
pub(crate) struct DpopKey {
    pair: EcdsaKeyPair,
    jwk: Value,
    thumbprint: String,
}

impl std::fmt::Debug for DpopKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DpopKey")
            .field("thumbprint", &self.thumbprint)
            .finish_non_exhaustive()
    }
}

impl DpopKey {
    /// A fresh key pair from the OS random generator.
    pub(crate) fn generate() -> Result<DpopKey, DpopError> {
        let rng = SystemRandom::new();
        let doc = EcdsaKeyPair::generate_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, &rng)
            .map_err(|_| DpopError::Key)?;
        let pair = EcdsaKeyPair::from_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, doc.as_ref(), &rng)
            .map_err(|_| DpopError::Key)?;
        // The public key is the uncompressed point: 0x04, then x and y, 32 bytes each.
        let point = pair.public_key().as_ref();
        let (x, y) = (
            URL_SAFE_NO_PAD.encode(&point[1..33]),
            URL_SAFE_NO_PAD.encode(&point[33..65]),
        );
        let thumbprint = jwk_thumbprint(&x, &y);
        let jwk = json!({ "kty": "EC", "crv": "P-256", "x": x, "y": y });
        Ok(DpopKey {
            pair,
            jwk,
            thumbprint,
        })
    }

    /// The JWK SHA-256 thumbprint (base64url), what the server binds tokens to.
    #[cfg(test)]
    pub(crate) fn thumbprint(&self) -> &str {
        &self.thumbprint
    }

    /// The public key as a JWK (no private part).
    #[cfg(test)]
    pub(crate) fn jwk(&self) -> &Value {
        &self.jwk
    }

    /// The uncompressed public point, for verifying proofs in tests.
    #[cfg(test)]
    pub(crate) fn public_key(&self) -> &[u8] {
        self.pair.public_key().as_ref()
    }

    /// A proof for one request: `htm` the method, `url` the request's URL (its query and
    /// fragment are left out of `htu`), `access_token` the token the request presents (its
    /// hash becomes `ath`), `nonce` the server's latest, `now` Unix seconds.
    pub(crate) fn proof(
        &self,
        htm: &str,
        url: &Url,
        access_token: Option<&str>,
        nonce: Option<&str>,
        now: u64,
    ) -> Result<String, DpopError> {
        let header = json!({ "typ": "dpop+jwt", "alg": ALG, "jwk": self.jwk });
        let mut claims = json!({
            "jti": random_token(16)?,
            "htm": htm,
            "htu": htu(url),
            "iat": now,
        });
        if let Some(t) = access_token {
            claims["ath"] = json!(s256(t));
        }
        if let Some(n) = nonce {
            claims["nonce"] = json!(n);
        }
        super::jwt::sign_es256(&self.pair, &header, &claims).map_err(|_| DpopError::Sign)
    }
}

/// The RFC 7638 SHA-256 thumbprint of the P-256 public JWK with coordinates `x` and `y`: the
/// required members in lexicographic order without white space (§3.2), built by hand so that no
/// JSON map ordering can change it.
fn jwk_thumbprint(x: &str, y: &str) -> String {
    s256(&format!(
        r#"{{"crv":"P-256","kty":"EC","x":"{x}","y":"{y}"}}"#
    ))
}

/// The `htu` of a request to `url`: the URL without its query and fragment (RFC 9449 §4.2).
pub(crate) fn htu(url: &Url) -> String {
    let mut u = url.clone();
    u.set_query(None);
    u.set_fragment(None);
    u.to_string()
}

/// A nonce as RFC 9449 §8 defines it (`1*NQCHAR`: visible ASCII but `"` and `\`), and not
/// absurdly long; anything else is ignored rather than echoed into a signed proof.
fn valid_nonce(n: &str) -> bool {
    !n.is_empty()
        && n.len() <= MAX_NONCE_CHARS
        && n.bytes()
            .all(|b| (0x21..=0x7e).contains(&b) && b != b'"' && b != b'\\')
}

/// The client's DPoP state: its key and the latest nonce of each server (by role and origin),
/// shared by the OAuth side (token requests) and the token cell (MCP requests).
#[derive(Debug)]
pub(crate) struct Dpop {
    key: DpopKey,
    nonces: Mutex<HashMap<(Role, String), String>>,
}

impl Dpop {
    /// A new state with a fresh key and no nonces.
    pub(crate) fn new() -> Result<Dpop, DpopError> {
        Ok(Dpop {
            key: DpopKey::generate()?,
            nonces: Mutex::new(HashMap::new()),
        })
    }

    /// The key.
    #[cfg(test)]
    pub(crate) fn key(&self) -> &DpopKey {
        &self.key
    }

    /// A proof for a request to `url` with the latest nonce `role`'s server at that origin
    /// gave, if any.
    pub(crate) fn proof(
        &self,
        role: Role,
        htm: &str,
        url: &Url,
        access_token: Option<&str>,
    ) -> Result<String, DpopError> {
        let nonce = self.nonce(role, url);
        self.key
            .proof(htm, url, access_token, nonce.as_deref(), super::now_secs())
    }

    /// The latest nonce of `role`'s server at `url`'s origin.
    pub(crate) fn nonce(&self, role: Role, url: &Url) -> Option<String> {
        let key = (role, url.origin().ascii_serialization());
        self.nonces.lock().ok()?.get(&key).cloned()
    }

    /// Keeps the `DPoP-Nonce` of a response from `role`'s server at `url`, which may come with
    /// any response (§8, §9: a server rotates them). True when it is a nonce the client did not
    /// hold yet: only then is a request refused with `use_dpop_nonce` worth sending again.
    pub(crate) fn note_nonce(
        &self,
        role: Role,
        url: &Url,
        headers: &reqwest::header::HeaderMap,
    ) -> bool {
        let Some(n) = headers
            .get("dpop-nonce")
            .and_then(|v| v.to_str().ok())
            .map(str::trim)
            .filter(|n| valid_nonce(n))
        else {
            return false;
        };
        let Ok(mut nonces) = self.nonces.lock() else {
            return false;
        };
        let key = (role, url.origin().ascii_serialization());
        if nonces.get(&key).map(String::as_str) == Some(n) {
            return false;
        }
        nonces.insert(key, n.to_string());
        true
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use ring::signature::{UnparsedPublicKey, ECDSA_P256_SHA256_FIXED};

    /// The header and claims of a proof, after checking its signature with the key's public
    /// point (as a resource server would, from the `jwk` header).
    pub(crate) fn verified(key: &DpopKey, proof: &str) -> (Value, Value) {
        let parts: Vec<&str> = proof.split('.').collect();
        assert_eq!(parts.len(), 3, "{proof}");
        let header: Value =
            serde_json::from_slice(&URL_SAFE_NO_PAD.decode(parts[0]).unwrap()).unwrap();
        // The public key rebuilt from the jwk header, not taken from the key pair.
        let x = URL_SAFE_NO_PAD
            .decode(header["jwk"]["x"].as_str().unwrap())
            .unwrap();
        let y = URL_SAFE_NO_PAD
            .decode(header["jwk"]["y"].as_str().unwrap())
            .unwrap();
        let point = [&[4u8][..], &x, &y].concat();
        assert_eq!(point, key.public_key());
        UnparsedPublicKey::new(&ECDSA_P256_SHA256_FIXED, &point)
            .verify(
                format!("{}.{}", parts[0], parts[1]).as_bytes(),
                &URL_SAFE_NO_PAD.decode(parts[2]).unwrap(),
            )
            .expect("the proof verifies with the jwk's public key");
        let claims: Value =
            serde_json::from_slice(&URL_SAFE_NO_PAD.decode(parts[1]).unwrap()).unwrap();
        (header, claims)
    }

    fn sorted_keys(v: &Value) -> Vec<String> {
        let mut k: Vec<String> = v.as_object().unwrap().keys().cloned().collect();
        k.sort();
        k
    }

    #[test]
    fn a_resource_proof_verifies_and_carries_exactly_the_rfc_9449_claims() {
        let key = DpopKey::generate().unwrap();
        let url = Url::parse("http://127.0.0.1:8080/mcp?session=1#frag").unwrap();
        let proof = key
            .proof(
                "POST",
                &url,
                Some("the-access-token"),
                Some("n-1"),
                1_700_000_000,
            )
            .unwrap();
        let (header, claims) = verified(&key, &proof);
        assert_eq!(header["typ"], "dpop+jwt");
        assert_eq!(header["alg"], "ES256");
        // The public key only: no private part `d`.
        assert_eq!(sorted_keys(&header["jwk"]), ["crv", "kty", "x", "y"]);
        assert_eq!(&header["jwk"], key.jwk());
        assert_eq!(
            sorted_keys(&claims),
            ["ath", "htm", "htu", "iat", "jti", "nonce"]
        );
        assert_eq!(claims["htm"], "POST");
        assert_eq!(claims["htu"], "http://127.0.0.1:8080/mcp");
        assert_eq!(claims["iat"], 1_700_000_000);
        assert_eq!(claims["nonce"], "n-1");
        // ath = base64url(SHA-256(token)), computed independently here.
        use sha2::{Digest, Sha256};
        let want = URL_SAFE_NO_PAD.encode(Sha256::digest(b"the-access-token"));
        assert_eq!(claims["ath"], json!(want));
        assert!(claims["jti"].as_str().unwrap().len() >= 16);
    }

    #[test]
    fn a_token_request_proof_has_no_ath_and_every_proof_a_fresh_jti() {
        let key = DpopKey::generate().unwrap();
        let url = Url::parse("http://127.0.0.1:9/token").unwrap();
        let a = key.proof("POST", &url, None, None, 1).unwrap();
        let b = key.proof("POST", &url, None, None, 1).unwrap();
        let (_, ca) = verified(&key, &a);
        let (_, cb) = verified(&key, &b);
        assert_eq!(sorted_keys(&ca), ["htm", "htu", "iat", "jti"]);
        assert_ne!(ca["jti"], cb["jti"]);
    }

    #[test]
    fn the_thumbprint_is_rfc_7638() {
        // RFC 7515 A.3's P-256 key; the expected value was computed apart (Python: SHA-256 of
        // json.dumps(jwk, sort_keys=True, separators=(",", ":")), base64url).
        assert_eq!(
            jwk_thumbprint(
                "f83OJ3D2xF1Bg8vub9tLe1gHMzV76e8Tus9uPHvRVEU",
                "x_FEzRu9m36HLN_tue659LNpXW6pCyStikYjKIWI5a0"
            ),
            "oKIywvGUpTVTyxMQ3bwIIeQUudfr_CkLMjCE19ECD-U"
        );
        // A generated key's thumbprint is that of its own jwk.
        let key = DpopKey::generate().unwrap();
        let j = key.jwk();
        assert_eq!(
            key.thumbprint(),
            jwk_thumbprint(j["x"].as_str().unwrap(), j["y"].as_str().unwrap())
        );
    }

    #[test]
    fn nonces_are_kept_per_role_and_origin_and_only_new_ones_count() {
        let d = Dpop::new().unwrap();
        let rs = Url::parse("http://127.0.0.1:1/mcp").unwrap();
        let other = Url::parse("http://127.0.0.1:2/mcp").unwrap();
        let mut h = reqwest::header::HeaderMap::new();
        assert!(!d.note_nonce(Role::Resource, &rs, &h));
        h.insert("DPoP-Nonce", "abc".parse().unwrap());
        assert!(d.note_nonce(Role::Resource, &rs, &h));
        assert!(
            !d.note_nonce(Role::Resource, &rs, &h),
            "the same nonce is not new"
        );
        assert_eq!(d.nonce(Role::Resource, &rs).as_deref(), Some("abc"));
        assert_eq!(d.nonce(Role::AuthorizationServer, &rs), None);
        assert_eq!(d.nonce(Role::Resource, &other), None);
        // A nonce with a quote is not one (and is not echoed into a proof).
        h.insert("DPoP-Nonce", "a\"b".parse().unwrap());
        assert!(!d.note_nonce(Role::Resource, &rs, &h));
        assert_eq!(d.nonce(Role::Resource, &rs).as_deref(), Some("abc"));
        let (_, claims) = verified(
            d.key(),
            &d.proof(Role::Resource, "GET", &rs, Some("t")).unwrap(),
        );
        assert_eq!(claims["nonce"], "abc");
        assert_eq!(claims["htm"], "GET");
    }

    #[test]
    fn modes_parse_and_auto_follows_the_metadata() {
        assert_eq!(DpopMode::parse("auto"), Ok(DpopMode::Auto));
        assert_eq!(DpopMode::parse("always"), Ok(DpopMode::Always));
        assert_eq!(DpopMode::parse("never"), Ok(DpopMode::Never));
        assert_eq!(
            DpopMode::parse("yes").unwrap_err().to_string(),
            "\"yes\" is not auto, always or never"
        );
        let es256 = vec!["RS256".to_string(), "ES256".to_string()];
        assert!(DpopMode::Auto.wanted(&es256));
        assert!(!DpopMode::Auto.wanted(&["RS256".to_string()]));
        assert!(!DpopMode::Auto.wanted(&[]));
        assert!(DpopMode::Always.wanted(&[]));
        assert!(!DpopMode::Never.wanted(&es256));
    }
}
