//! DPoP proof checks (RFC 9449 §4.3) for the kitchen's authorization server and the resource of
//! `auth.oauth_flow` under its `dpop` faults: a client's proofs are checked the way a strict
//! server checks them, so a test of a client against the kitchen fails for the same reasons a
//! real deployment would refuse it. ES256 only (the one algorithm the metadata lists).
//!
//! What a check returns is the proof's key thumbprint (RFC 7638, what a bound token's `cnf.jkt`
//! names), its `jti` (for replay detection by the caller) and its `nonce`; what it refuses is
//! named in a short static reason, sent as the `error_description`.

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use ring::signature::{UnparsedPublicKey, ECDSA_P256_SHA256_FIXED};
use serde_json::Value;
use sha2::{Digest, Sha256};

/// How far a proof's `iat` may be from the server's clock, in seconds.
const IAT_WINDOW_SECS: i64 = 300;
/// The longest proof looked at.
const MAX_PROOF_BYTES: usize = 8 * 1024;

/// A proof that passed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Proof {
    /// The SHA-256 thumbprint of its `jwk` (base64url).
    pub jkt: String,
    /// Its `jti`.
    pub jti: String,
    /// Its `nonce`, if any.
    pub nonce: Option<String>,
}

/// What a proof is checked against: the request's method and URL, and the access token it
/// comes with (its hash must be the proof's `ath`), if any.
#[derive(Debug, Clone, Copy)]
pub struct Expect<'a> {
    /// The HTTP method (`htm`).
    pub htm: &'a str,
    /// The request's URL; its query and fragment are not part of `htu`.
    pub htu: &'a str,
    /// The access token presented with the proof.
    pub access_token: Option<&'a str>,
    /// Now, in Unix seconds.
    pub now: u64,
}

fn b64(s: &str) -> Result<Vec<u8>, &'static str> {
    URL_SAFE_NO_PAD
        .decode(s)
        .map_err(|_| "the DPoP proof is not base64url")
}

/// `url` without its query and fragment and without a trailing slash: how `htu` compares
/// (RFC 9449 §4.3 point 9, with the lenience on a trailing slash many servers have).
fn htu_key(url: &str) -> &str {
    let end = url.find(['?', '#']).unwrap_or(url.len());
    url[..end].trim_end_matches('/')
}

/// The RFC 7638 thumbprint of a P-256 public JWK.
fn thumbprint(x: &str, y: &str) -> String {
    let canonical = format!(r#"{{"crv":"P-256","kty":"EC","x":"{x}","y":"{y}"}}"#);
    URL_SAFE_NO_PAD.encode(Sha256::digest(canonical.as_bytes()))
}

/// The public key of a proof's header, after checking the header: `typ` dpop+jwt, `alg`
/// ES256, an EC P-256 `jwk` without a private part. Returns (x, y, the point).
fn header_key(header: &Value) -> Result<(String, String, Vec<u8>), &'static str> {
    if header["typ"] != "dpop+jwt" {
        return Err("the DPoP proof's typ is not dpop+jwt");
    }
    if header["alg"] != "ES256" {
        return Err("the DPoP proof's alg is not ES256");
    }
    let jwk = &header["jwk"];
    if jwk.get("d").is_some() {
        return Err("the DPoP proof's jwk holds a private key");
    }
    if jwk["kty"] != "EC" || jwk["crv"] != "P-256" {
        return Err("the DPoP proof's jwk is not an EC P-256 key");
    }
    let (Some(x), Some(y)) = (jwk["x"].as_str(), jwk["y"].as_str()) else {
        return Err("the DPoP proof's jwk has no x or y");
    };
    let (xb, yb) = (b64(x)?, b64(y)?);
    if xb.len() != 32 || yb.len() != 32 {
        return Err("the DPoP proof's jwk coordinates are not 32 bytes");
    }
    let point = [&[4u8][..], &xb, &yb].concat();
    Ok((x.to_string(), y.to_string(), point))
}

/// Checks `proof` (the `DPoP` header's value) against `expect`.
pub fn check(proof: &str, expect: Expect<'_>) -> Result<Proof, &'static str> {
    if proof.len() > MAX_PROOF_BYTES {
        return Err("the DPoP proof is too large");
    }
    let parts: Vec<&str> = proof.split('.').collect();
    let [h, c, s] = parts[..] else {
        return Err("the DPoP proof is not a JWS (three parts)");
    };
    let header: Value =
        serde_json::from_slice(&b64(h)?).map_err(|_| "the DPoP proof's header is not JSON")?;
    let (x, y, point) = header_key(&header)?;
    UnparsedPublicKey::new(&ECDSA_P256_SHA256_FIXED, &point)
        .verify(format!("{h}.{c}").as_bytes(), &b64(s)?)
        .map_err(|_| "the DPoP proof's signature does not verify with its jwk")?;
    let claims: Value =
        serde_json::from_slice(&b64(c)?).map_err(|_| "the DPoP proof's claims are not JSON")?;
    let jti = claims["jti"]
        .as_str()
        .filter(|j| !j.is_empty())
        .ok_or("the DPoP proof has no jti")?;
    if claims["htm"] != expect.htm {
        return Err("the DPoP proof's htm is not the request's method");
    }
    let htu = claims["htu"].as_str().ok_or("the DPoP proof has no htu")?;
    if htu.contains(['?', '#']) {
        return Err("the DPoP proof's htu has a query or fragment");
    }
    if htu_key(htu) != htu_key(expect.htu) {
        return Err("the DPoP proof's htu is not the request's URL");
    }
    let iat = claims["iat"].as_i64().ok_or("the DPoP proof has no iat")?;
    if (iat - expect.now as i64).abs() > IAT_WINDOW_SECS {
        return Err("the DPoP proof's iat is too far from now");
    }
    match (expect.access_token, claims["ath"].as_str()) {
        (Some(t), Some(ath)) if ath == URL_SAFE_NO_PAD.encode(Sha256::digest(t.as_bytes())) => {}
        (Some(_), _) => return Err("the DPoP proof's ath is not the access token's hash"),
        (None, _) => {}
    }
    Ok(Proof {
        jkt: thumbprint(&x, &y),
        jti: jti.to_string(),
        nonce: claims["nonce"].as_str().map(str::to_string),
    })
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use ring::rand::SystemRandom;
    use ring::signature::{EcdsaKeyPair, KeyPair, ECDSA_P256_SHA256_FIXED_SIGNING};
    use serde_json::json;

    /// A key and a signer of proofs with any header and claims (a client, as far as these
    /// tests go).
    pub(crate) struct TestKey(EcdsaKeyPair);

    impl TestKey {
        pub(crate) fn new() -> TestKey {
            let rng = SystemRandom::new();
            let doc = EcdsaKeyPair::generate_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, &rng).unwrap();
            TestKey(
                EcdsaKeyPair::from_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, doc.as_ref(), &rng)
                    .unwrap(),
            )
        }
        pub(crate) fn jwk(&self) -> Value {
            let p = self.0.public_key().as_ref();
            json!({ "kty": "EC", "crv": "P-256",
                    "x": URL_SAFE_NO_PAD.encode(&p[1..33]), "y": URL_SAFE_NO_PAD.encode(&p[33..65]) })
        }
        pub(crate) fn jkt(&self) -> String {
            let j = self.jwk();
            thumbprint(j["x"].as_str().unwrap(), j["y"].as_str().unwrap())
        }
        pub(crate) fn sign(&self, header: &Value, claims: &Value) -> String {
            let input = format!(
                "{}.{}",
                URL_SAFE_NO_PAD.encode(header.to_string()),
                URL_SAFE_NO_PAD.encode(claims.to_string())
            );
            let sig = self.0.sign(&SystemRandom::new(), input.as_bytes()).unwrap();
            format!("{input}.{}", URL_SAFE_NO_PAD.encode(sig.as_ref()))
        }
        /// A well-formed proof.
        pub(crate) fn proof(
            &self,
            htm: &str,
            htu: &str,
            token: Option<&str>,
            nonce: Option<&str>,
            now: u64,
        ) -> String {
            let mut c = json!({ "jti": format!("j-{now}-{htm}-{}", nonce.unwrap_or("")), "htm": htm, "htu": htu, "iat": now });
            if let Some(t) = token {
                c["ath"] = json!(URL_SAFE_NO_PAD.encode(Sha256::digest(t.as_bytes())));
            }
            if let Some(n) = nonce {
                c["nonce"] = json!(n);
            }
            self.sign(
                &json!({ "typ": "dpop+jwt", "alg": "ES256", "jwk": self.jwk() }),
                &c,
            )
        }
    }

    const URL: &str = "http://127.0.0.1:1/oauth/dpop/token";

    fn expect(token: Option<&str>) -> Expect<'_> {
        Expect {
            htm: "POST",
            htu: URL,
            access_token: token,
            now: 1000,
        }
    }

    #[test]
    fn a_good_proof_passes_and_names_its_key() {
        let k = TestKey::new();
        let p = check(&k.proof("POST", URL, None, Some("n"), 1000), expect(None)).unwrap();
        assert_eq!(p.jkt, k.jkt());
        assert_eq!(p.nonce.as_deref(), Some("n"));
        // A request URL with a query still matches an htu without one.
        let e = Expect {
            htu: "http://127.0.0.1:1/oauth/dpop/token?x=1",
            ..expect(None)
        };
        assert!(check(&k.proof("POST", URL, None, None, 1000), e).is_ok());
        assert!(check(
            &k.proof("POST", URL, Some("tok"), None, 1000),
            expect(Some("tok"))
        )
        .is_ok());
    }

    #[test]
    fn each_rfc_9449_rule_refuses_its_own_breach() {
        let k = TestKey::new();
        let other = TestKey::new();
        let good_header = json!({ "typ": "dpop+jwt", "alg": "ES256", "jwk": k.jwk() });
        let claims = json!({ "jti": "j", "htm": "POST", "htu": URL, "iat": 1000 });
        let cases: Vec<(String, Expect<'_>, &str)> = vec![
            ("a.b".into(), expect(None), "three parts"),
            (
                k.sign(
                    &json!({ "typ": "JWT", "alg": "ES256", "jwk": k.jwk() }),
                    &claims,
                ),
                expect(None),
                "typ",
            ),
            (
                k.sign(
                    &json!({ "typ": "dpop+jwt", "alg": "RS256", "jwk": k.jwk() }),
                    &claims,
                ),
                expect(None),
                "alg",
            ),
            (
                k.sign(
                    &json!({ "typ": "dpop+jwt", "alg": "ES256", "jwk": other.jwk() }),
                    &claims,
                ),
                expect(None),
                "signature",
            ),
            (
                k.sign(
                    &good_header,
                    &json!({ "htm": "POST", "htu": URL, "iat": 1000 }),
                ),
                expect(None),
                "jti",
            ),
            (k.proof("GET", URL, None, None, 1000), expect(None), "htm"),
            (
                k.proof("POST", &format!("{URL}?q=1"), None, None, 1000),
                expect(None),
                "query",
            ),
            (
                k.proof("POST", "http://127.0.0.1:2/token", None, None, 1000),
                expect(None),
                "htu is not",
            ),
            (k.proof("POST", URL, None, None, 2000), expect(None), "iat"),
            (
                k.proof("POST", URL, None, None, 1000),
                expect(Some("tok")),
                "ath",
            ),
            (
                k.proof("POST", URL, Some("other"), None, 1000),
                expect(Some("tok")),
                "ath",
            ),
        ];
        for (proof, e, says) in cases {
            let why = check(&proof, e).unwrap_err();
            assert!(why.contains(says), "{says}: {why}");
        }
        let mut jwk = k.jwk();
        jwk["d"] = json!("secret");
        let why = check(
            &k.sign(
                &json!({ "typ": "dpop+jwt", "alg": "ES256", "jwk": jwk }),
                &claims,
            ),
            expect(None),
        )
        .unwrap_err();
        assert!(why.contains("private key"), "{why}");
    }
}
