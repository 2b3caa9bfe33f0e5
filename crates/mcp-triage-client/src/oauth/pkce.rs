//! PKCE (RFC 7636) with S256, and the `state` value: random strings from the OS generator.

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use sha2::{Digest, Sha256};

/// A code verifier and its S256 challenge.
#[derive(Clone)]
pub struct Pkce {
    /// The verifier, sent only to the token endpoint.
    pub verifier: String,
    /// BASE64URL(SHA256(verifier)), sent in the authorization request.
    pub challenge: String,
}

impl std::fmt::Debug for Pkce {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Pkce { .. }")
    }
}

/// The OS random generator failed. (getrandom's error implements `std::error::Error` only
/// with its `std` feature, so it is carried but not offered as a `source`.)
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("the OS random generator failed: {0}")]
pub struct RandomError(pub getrandom::Error);

/// `n` random bytes, base64url without padding. Fails only when the OS generator does.
pub fn random_token(n: usize) -> Result<String, RandomError> {
    let mut b = vec![0u8; n];
    getrandom::fill(&mut b).map_err(RandomError)?;
    Ok(URL_SAFE_NO_PAD.encode(b))
}

/// The S256 challenge of a verifier (RFC 7636 §4.2).
pub fn s256(verifier: &str) -> String {
    URL_SAFE_NO_PAD.encode(Sha256::digest(verifier.as_bytes()))
}

impl Pkce {
    /// A fresh pair: 32 random bytes give a 43-character verifier (the RFC's minimum length,
    /// from its unreserved alphabet).
    pub fn new() -> Result<Pkce, RandomError> {
        let verifier = random_token(32)?;
        let challenge = s256(&verifier);
        Ok(Pkce {
            verifier,
            challenge,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn s256_matches_the_rfc_example() {
        // RFC 7636 Appendix B.
        assert_eq!(
            s256("dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk"),
            "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM"
        );
    }

    #[test]
    fn fresh_pairs_differ_and_use_the_unreserved_alphabet() {
        let a = Pkce::new().unwrap();
        let b = Pkce::new().unwrap();
        assert_ne!(a.verifier, b.verifier);
        assert_eq!(a.verifier.len(), 43);
        assert!(a
            .verifier
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_'));
        assert_eq!(a.challenge, s256(&a.verifier));
        assert!(!format!("{a:?}").contains(&a.verifier));
    }

    #[test]
    fn a_failing_generator_is_a_typed_error() {
        let err = RandomError(getrandom::Error::UNSUPPORTED);
        assert_eq!(err.0, getrandom::Error::UNSUPPORTED);
        assert_eq!(
            err.to_string(),
            format!(
                "the OS random generator failed: {}",
                getrandom::Error::UNSUPPORTED
            )
        );
    }
}
