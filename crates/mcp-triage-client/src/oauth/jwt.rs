//! `private_key_jwt` client authentication (RFC 7523 §2.2, OpenID Connect Core §9): a JWT
//! signed with the client's ES256 (P-256) key, sent as `client_assertion` instead of a secret.

use base64::engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD};
use base64::Engine;
use ring::rand::SystemRandom;
use ring::signature::{EcdsaKeyPair, ECDSA_P256_SHA256_FIXED_SIGNING};
use serde_json::json;

/// The `client_assertion_type` of a JWT assertion.
pub const ASSERTION_TYPE: &str = "urn:ietf:params:oauth:client-assertion-type:jwt-bearer";
/// How long an assertion is valid.
const LIFETIME_SECS: u64 = 300;

/// A client key that cannot sign an assertion, or a signature that failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ClientKeyError {
    /// No `-----BEGIN PRIVATE KEY-----` block.
    #[error("the client key is not a PEM \"PRIVATE KEY\" (PKCS#8) block")]
    NotPem,
    /// The block's body does not decode.
    #[error("the client key's PEM body is not base64: {0}")]
    NotBase64(#[source] base64::DecodeError),
    /// The DER is not a P-256 PKCS#8 key.
    #[error("the client key is not a P-256 (ES256) PKCS#8 key: {0}")]
    NotP256(ring::error::KeyRejected),
    /// No random `jti`.
    #[error(transparent)]
    Random(#[from] super::pkce::RandomError),
    /// ring refused to sign.
    #[error("signing the client assertion failed")]
    Sign,
}

/// The DER bytes of a PEM `PRIVATE KEY` (PKCS#8) block.
pub fn pkcs8_from_pem(pem: &str) -> Result<Vec<u8>, ClientKeyError> {
    let body: String = pem
        .lines()
        .map(str::trim)
        .skip_while(|l| *l != "-----BEGIN PRIVATE KEY-----")
        .skip(1)
        .take_while(|l| *l != "-----END PRIVATE KEY-----")
        .collect();
    if body.is_empty() {
        return Err(ClientKeyError::NotPem);
    }
    STANDARD.decode(body).map_err(ClientKeyError::NotBase64)
}

/// A signed assertion: `iss` and `sub` the client id, `aud` the authorization server's issuer,
/// valid for five minutes from `now` (Unix seconds), with a random `jti`.
pub fn client_assertion(
    pem: &str,
    client_id: &str,
    audience: &str,
    now: u64,
) -> Result<String, ClientKeyError> {
    let der = pkcs8_from_pem(pem)?;
    let rng = SystemRandom::new();
    let key = EcdsaKeyPair::from_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, &der, &rng)
        .map_err(ClientKeyError::NotP256)?;
    let header = json!({ "alg": "ES256", "typ": "JWT" });
    let claims = json!({
        "iss": client_id,
        "sub": client_id,
        "aud": audience,
        "iat": now,
        "exp": now + LIFETIME_SECS,
        "jti": super::pkce::random_token(16)?,
    });
    sign_es256(&key, &header, &claims).map_err(|_| ClientKeyError::Sign)
}

/// A compact JWS of `claims` under `header`, signed with the P-256 `key` (ES256, the fixed
/// 64-byte signature JWS wants): the one signing step of the client assertion and of the DPoP
/// proofs ([`super::dpop`]), so both produce the same JWS encoding.
pub(crate) fn sign_es256(
    key: &EcdsaKeyPair,
    header: &serde_json::Value,
    claims: &serde_json::Value,
) -> Result<String, ring::error::Unspecified> {
    let signing_input = format!(
        "{}.{}",
        URL_SAFE_NO_PAD.encode(header.to_string()),
        URL_SAFE_NO_PAD.encode(claims.to_string())
    );
    let sig = key.sign(&SystemRandom::new(), signing_input.as_bytes())?;
    Ok(format!(
        "{signing_input}.{}",
        URL_SAFE_NO_PAD.encode(sig.as_ref())
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use ring::signature::{KeyPair, UnparsedPublicKey, ECDSA_P256_SHA256_FIXED};

    #[test]
    fn assertions_verify_with_the_public_key_and_carry_the_claims() {
        let rng = SystemRandom::new();
        let doc = EcdsaKeyPair::generate_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, &rng).unwrap();
        let b64 = STANDARD.encode(doc.as_ref());
        let pem = format!("-----BEGIN PRIVATE KEY-----\n{b64}\n-----END PRIVATE KEY-----\n");
        let jwt = client_assertion(&pem, "cid", "http://127.0.0.1:9", 1000).unwrap();
        let parts: Vec<&str> = jwt.split('.').collect();
        assert_eq!(parts.len(), 3);
        let claims: serde_json::Value =
            serde_json::from_slice(&URL_SAFE_NO_PAD.decode(parts[1]).unwrap()).unwrap();
        assert_eq!(
            (
                &claims["iss"],
                &claims["sub"],
                &claims["aud"],
                &claims["exp"]
            ),
            (
                &json!("cid"),
                &json!("cid"),
                &json!("http://127.0.0.1:9"),
                &json!(1300)
            )
        );
        let pair =
            EcdsaKeyPair::from_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, doc.as_ref(), &rng).unwrap();
        let public = UnparsedPublicKey::new(&ECDSA_P256_SHA256_FIXED, pair.public_key().as_ref());
        let input = format!("{}.{}", parts[0], parts[1]);
        public
            .verify(input.as_bytes(), &URL_SAFE_NO_PAD.decode(parts[2]).unwrap())
            .unwrap();
        assert!(client_assertion("not a key", "c", "a", 0)
            .unwrap_err()
            .to_string()
            .contains("PRIVATE KEY"));
    }

    #[test]
    fn bad_keys_are_typed() {
        let err = client_assertion("not a key", "c", "a", 0).unwrap_err();
        assert!(matches!(err, ClientKeyError::NotPem));
        assert_eq!(
            err.to_string(),
            "the client key is not a PEM \"PRIVATE KEY\" (PKCS#8) block"
        );
        let pem = "-----BEGIN PRIVATE KEY-----\n!!!\n-----END PRIVATE KEY-----\n";
        let err = pkcs8_from_pem(pem).unwrap_err();
        assert!(matches!(err, ClientKeyError::NotBase64(_)));
        assert!(err
            .to_string()
            .starts_with("the client key's PEM body is not base64: "));
        let pem = "-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n";
        let err = client_assertion(pem, "c", "a", 0).unwrap_err();
        assert!(matches!(err, ClientKeyError::NotP256(_)));
        assert!(err
            .to_string()
            .starts_with("the client key is not a P-256 (ES256) PKCS#8 key: "));
    }
}
