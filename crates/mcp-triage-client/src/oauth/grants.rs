//! The grants that start from an identity token instead of a person or a secret: the JWT
//! bearer grant (RFC 7523 §2.1) with a workload identity token (SEP-1933, workload identity
//! federation), and enterprise-managed authorization (SEP-990): the user's ID token exchanged
//! at the enterprise IdP for an ID-JAG (an identity assertion JWT authorization grant, RFC 8693
//! token exchange), which the MCP server's authorization server takes as a JWT bearer
//! assertion. Both token requests go through [`OAuth::token_request`], so client
//! authentication, DPoP and the token checks are the other grants'.
//!
//! The identity token, the ID-JAG and the IdP secret are secrets like the others: they go into
//! request bodies and headers only, never into a message (errors name endpoints and OAuth error
//! codes).

use reqwest::Url;

use super::discovery;
use super::dpop::Dpop;
use super::store::StoredToken;
use super::{basic_auth, send_for_json, Discovered, IdpClient, OAuth, OAuthError};

/// The JWT bearer grant type (RFC 7523 §2.1).
pub const JWT_BEARER_GRANT: &str = "urn:ietf:params:oauth:grant-type:jwt-bearer";
/// The token exchange grant type (RFC 8693 §2.1).
pub const TOKEN_EXCHANGE_GRANT: &str = "urn:ietf:params:oauth:grant-type:token-exchange";
/// The token type of an OpenID Connect ID token (RFC 8693 §3).
pub const ID_TOKEN_TYPE: &str = "urn:ietf:params:oauth:token-type:id_token";
/// The token type of an ID-JAG (SEP-990, the Identity Assertion Authorization Grant draft).
pub const ID_JAG_TYPE: &str = "urn:ietf:params:oauth:token-type:id-jag";

/// The form of a JWT bearer token request (RFC 7523 §2.1): the grant type and the assertion,
/// the resource (RFC 8707) and the scope when one was selected. Client authentication is added
/// by the token request.
pub(crate) fn jwt_bearer_form(
    assertion: &str,
    resource: &str,
    scope: Option<&str>,
) -> Vec<(&'static str, String)> {
    let mut form = vec![
        ("grant_type", JWT_BEARER_GRANT.to_string()),
        ("assertion", assertion.to_string()),
        ("resource", resource.to_string()),
    ];
    if let Some(s) = scope {
        form.push(("scope", s.to_string()));
    }
    form
}

/// The form of the token exchange that asks the IdP for an ID-JAG (RFC 8693 §2.1, SEP-990):
/// the user's ID token as the subject, an ID-JAG as the requested type, the authorization
/// server's issuer as the audience (the ID-JAG is only good there), the MCP server as the
/// resource, and the scope when one was selected.
pub(crate) fn id_jag_exchange_form(
    id_token: &str,
    audience: &str,
    resource: &str,
    scope: Option<&str>,
) -> Vec<(&'static str, String)> {
    let mut form = vec![
        ("grant_type", TOKEN_EXCHANGE_GRANT.to_string()),
        ("requested_token_type", ID_JAG_TYPE.to_string()),
        ("audience", audience.to_string()),
        ("resource", resource.to_string()),
        ("subject_token", id_token.to_string()),
        ("subject_token_type", ID_TOKEN_TYPE.to_string()),
    ];
    if let Some(s) = scope {
        form.push(("scope", s.to_string()));
    }
    form
}

impl OAuth {
    /// The configured identity token, or the error naming the grant that needs it.
    fn identity_token(&self, grant: &'static str) -> Result<&str, OAuthError> {
        self.opts
            .identity_token
            .as_deref()
            .filter(|t| !t.is_empty())
            .ok_or(OAuthError::NoIdentityToken { grant })
    }

    /// The JWT bearer grant with the workload identity token as the assertion (SEP-1933). A
    /// refusal is final: the same token would be refused again, and falling back to another
    /// grant would hide why.
    pub(super) async fn jwt_bearer(
        &self,
        d: &Discovered,
        scope: Option<&str>,
        dpop: Option<&Dpop>,
    ) -> Result<StoredToken, OAuthError> {
        let assertion = self.identity_token("jwt-bearer")?;
        let form = jwt_bearer_form(assertion, &d.resource, scope);
        self.token_request(d, &self.configured_client(), form, scope, dpop)
            .await
    }

    /// Enterprise-managed authorization (SEP-990): an ID-JAG from the IdP, then the JWT
    /// bearer grant with it at the authorization server, as the configured client.
    pub(super) async fn enterprise_managed(
        &self,
        d: &Discovered,
        scope: Option<&str>,
        dpop: Option<&Dpop>,
    ) -> Result<StoredToken, OAuthError> {
        let id_token = self.identity_token("enterprise-managed")?;
        let (Some(idp), Some(_)) = (&self.opts.idp, &self.opts.client_id) else {
            return Err(OAuthError::NoEnterpriseClient);
        };
        let id_jag = self.id_jag(idp, id_token, d, scope).await?;
        let form = jwt_bearer_form(&id_jag, &d.resource, scope);
        self.token_request(d, &self.configured_client(), form, scope, dpop)
            .await
    }

    /// The token exchange at the IdP: the ID-JAG it issues for `d`'s authorization server
    /// and resource. The IdP client authenticates with HTTP Basic when it has a secret, else
    /// names itself in the form (a public client).
    async fn id_jag(
        &self,
        idp: &IdpClient,
        id_token: &str,
        d: &Discovered,
        scope: Option<&str>,
    ) -> Result<String, OAuthError> {
        let url: Url =
            discovery::authorization_server_url(&idp.token_endpoint, "IdP token endpoint")?;
        let mut form = id_jag_exchange_form(id_token, &d.issuer, &d.resource, scope);
        let mut req = self.http.post(url).header("Accept", "application/json");
        match &idp.client_secret {
            Some(secret) => req = req.header("Authorization", basic_auth(&idp.client_id, secret)),
            None => form.push(("client_id", idp.client_id.clone())),
        }
        let what = format!("the IdP token endpoint {}", idp.token_endpoint);
        let doc = send_for_json(req.form(&form), &what).await?;
        let issued = doc["issued_token_type"].as_str().unwrap_or("");
        if issued != ID_JAG_TYPE {
            return Err(OAuthError::NotIdJag {
                endpoint: idp.token_endpoint.clone(),
                issued: issued.to_string(),
            });
        }
        doc["access_token"]
            .as_str()
            .filter(|t| !t.is_empty())
            .map(str::to_string)
            .ok_or_else(|| OAuthError::NoAccessToken {
                endpoint: idp.token_endpoint.clone(),
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pairs(form: &[(&'static str, String)]) -> Vec<(String, String)> {
        form.iter()
            .map(|(k, v)| (k.to_string(), v.clone()))
            .collect()
    }

    fn p(k: &str, v: &str) -> (String, String) {
        (k.to_string(), v.to_string())
    }

    #[test]
    fn the_jwt_bearer_form_is_rfc_7523() {
        assert_eq!(
            pairs(&jwt_bearer_form(
                "a.b.c",
                "http://127.0.0.1:1/mcp",
                Some("x y")
            )),
            [
                p("grant_type", "urn:ietf:params:oauth:grant-type:jwt-bearer"),
                p("assertion", "a.b.c"),
                p("resource", "http://127.0.0.1:1/mcp"),
                p("scope", "x y"),
            ]
        );
        assert!(!pairs(&jwt_bearer_form("a", "r", None))
            .iter()
            .any(|(k, _)| k == "scope"));
    }

    #[test]
    fn the_id_jag_exchange_form_is_rfc_8693_as_sep_990_asks() {
        assert_eq!(
            pairs(&id_jag_exchange_form(
                "id.tok.en",
                "http://127.0.0.1:2",
                "http://127.0.0.1:1/mcp",
                None
            )),
            [
                p(
                    "grant_type",
                    "urn:ietf:params:oauth:grant-type:token-exchange"
                ),
                p(
                    "requested_token_type",
                    "urn:ietf:params:oauth:token-type:id-jag"
                ),
                p("audience", "http://127.0.0.1:2"),
                p("resource", "http://127.0.0.1:1/mcp"),
                p("subject_token", "id.tok.en"),
                p(
                    "subject_token_type",
                    "urn:ietf:params:oauth:token-type:id_token"
                ),
            ]
        );
        assert!(pairs(&id_jag_exchange_form("t", "a", "r", Some("s"))).contains(&p("scope", "s")));
    }

    use super::super::test_server::{form, header, json as answer, start};
    use super::super::{BearerCell, Grant, OAuthOptions};
    use std::time::Duration;

    fn oauth(opts: OAuthOptions) -> OAuth {
        OAuth::new(
            "http://127.0.0.1:9/mcp",
            opts,
            BearerCell::default(),
            Duration::from_secs(5),
            Duration::from_secs(5),
            "test".into(),
        )
        .unwrap()
    }

    #[tokio::test]
    async fn enterprise_managed_exchanges_the_id_token_then_presents_the_id_jag() {
        let (base, reqs) = start(|_, req| {
            if req.starts_with("POST /idp/token ") {
                answer(
                    "200 OK",
                    "",
                    r#"{"access_token":"the.id.jag","issued_token_type":"urn:ietf:params:oauth:token-type:id-jag","token_type":"N_A"}"#,
                )
            } else {
                answer("200 OK", "", r#"{"access_token":"at","token_type":"Bearer"}"#)
            }
        })
        .await;
        let o = oauth(OAuthOptions {
            grant: Grant::EnterpriseManaged,
            client_id: Some("mcp-client".into()),
            client_secret: Some("s3cret".into()),
            identity_token: Some("user.id.token".into()),
            idp: Some(IdpClient {
                token_endpoint: format!("{base}/idp/token"),
                client_id: "idp-client".into(),
                client_secret: None,
            }),
            ..OAuthOptions::default()
        });
        let mut d = Discovered::for_test(&base);
        d.auth_methods = vec!["client_secret_basic".into()];
        let tok = o.enterprise_managed(&d, Some("read"), None).await.unwrap();
        assert_eq!((tok.access_token.as_str(), tok.dpop), ("at", false));
        let reqs = reqs.lock().unwrap().clone();
        assert_eq!(reqs.len(), 2);
        // At the IdP: the RFC 8693 exchange, the IdP client naming itself (no secret).
        let mut want = pairs(&id_jag_exchange_form(
            "user.id.token",
            &base,
            "http://127.0.0.1:9/mcp",
            Some("read"),
        ));
        want.push(p("client_id", "idp-client"));
        assert_eq!(form(&reqs[0]), want);
        assert_eq!(header(&reqs[0], "authorization"), None);
        // At the authorization server: the ID-JAG as the RFC 7523 assertion, the MCP client
        // authenticated as its metadata says (HTTP Basic).
        assert!(reqs[1].starts_with("POST /token "));
        assert_eq!(
            form(&reqs[1]),
            pairs(&jwt_bearer_form(
                "the.id.jag",
                "http://127.0.0.1:9/mcp",
                Some("read")
            ))
        );
        assert_eq!(
            header(&reqs[1], "authorization"),
            Some(basic_auth("mcp-client", "s3cret").as_str())
        );
    }

    #[tokio::test]
    async fn an_idp_answer_that_is_not_an_id_jag_is_refused_before_the_authorization_server() {
        let (base, reqs) = start(|_, _| {
            answer(
                "200 OK",
                "",
                r#"{"access_token":"x","issued_token_type":"urn:ietf:params:oauth:token-type:access_token"}"#,
            )
        })
        .await;
        let o = oauth(OAuthOptions {
            grant: Grant::EnterpriseManaged,
            client_id: Some("c".into()),
            identity_token: Some("t".into()),
            idp: Some(IdpClient {
                token_endpoint: format!("{base}/idp/token"),
                client_id: "i".into(),
                client_secret: Some("idp-secret".into()),
            }),
            ..OAuthOptions::default()
        });
        let e = o
            .enterprise_managed(&Discovered::for_test(&base), None, None)
            .await
            .unwrap_err();
        assert!(matches!(e, OAuthError::NotIdJag { .. }), "{e}");
        let reqs = reqs.lock().unwrap().clone();
        assert_eq!(reqs.len(), 1);
        assert_eq!(
            header(&reqs[0], "authorization"),
            Some(basic_auth("i", "idp-secret").as_str())
        );
    }

    #[tokio::test]
    async fn the_workload_token_is_the_assertion_and_a_refusal_is_final_and_secret_free() {
        let (base, reqs) = start(|_, _| {
            answer(
                "400 Bad Request",
                "",
                r#"{"error":"invalid_grant","error_description":"JWT assertion is expired"}"#,
            )
        })
        .await;
        let o = oauth(OAuthOptions {
            grant: Grant::JwtBearer,
            client_id: Some("workload".into()),
            identity_token: Some("workload.jwt.canary".into()),
            ..OAuthOptions::default()
        });
        let mut d = Discovered::for_test(&base);
        d.auth_methods = vec!["none".into()];
        let e = o.jwt_bearer(&d, None, None).await.unwrap_err();
        let text = e.to_string();
        assert!(
            text.contains("invalid_grant") && !text.contains("canary"),
            "{text}"
        );
        let reqs = reqs.lock().unwrap().clone();
        assert_eq!(reqs.len(), 1, "no retry, no other grant");
        let mut want = pairs(&jwt_bearer_form(
            "workload.jwt.canary",
            "http://127.0.0.1:9/mcp",
            None,
        ));
        want.push(p("client_id", "workload"));
        assert_eq!(form(&reqs[0]), want);
        // Without an identity token the grant does not start.
        let o = oauth(OAuthOptions {
            grant: Grant::JwtBearer,
            ..OAuthOptions::default()
        });
        let e = o.jwt_bearer(&d, None, None).await.unwrap_err();
        assert!(
            matches!(
                e,
                OAuthError::NoIdentityToken {
                    grant: "jwt-bearer"
                }
            ),
            "{e}"
        );
        assert_eq!(reqs.len(), 1);
    }

    #[test]
    fn secrets_stay_out_of_debug() {
        let opts = OAuthOptions {
            identity_token: Some("id-token-canary".into()),
            idp: Some(IdpClient {
                token_endpoint: "http://127.0.0.1:1/t".into(),
                client_id: "i".into(),
                client_secret: Some("idp-secret-canary".into()),
            }),
            ..OAuthOptions::default()
        };
        let shown = format!("{opts:?}");
        assert!(!shown.contains("canary"), "{shown}");
        assert!(shown.contains("http://127.0.0.1:1/t"), "{shown}");
    }
}
