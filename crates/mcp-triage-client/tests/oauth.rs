//! OAuth end to end on loopback: the kitchen's `auth.oauth_challenge` scenario is the protected
//! MCP server (401 + RFC 9728 challenge, its metadata naming the test authorization server of
//! `mcp_triage_kitchen::testing_oauth`), and the client discovers, registers, authorizes with
//! PKCE (following the auto-approving redirect to its loopback listener), caches, refreshes and
//! gives up within its limit. Every test also checks that the token strings never appear in
//! the call record or the kitchen's journal (the canary).

mod common;
use common::*;

use mcp_triage_client::oauth::store::TokenStore;
use mcp_triage_client::{AuthorizeMode, ClientOptions, OAuthOptions};
use mcp_triage_core::{CallRecord, Outcome};
use mcp_triage_kitchen::testing_oauth::{TestAs, TestAsOptions};
use mcp_triage_kitchen::KitchenHandle;
use serde_json::json;

const ACCESS: &str = "canary-access-7f3a9c";
const REFRESH: &str = "canary-refresh-51d2e8";

/// A kitchen whose stored selection is `auth.oauth_challenge` accepting `ACCESS`, with its
/// metadata naming `as_url`.
async fn protected(as_url: &str) -> KitchenHandle {
    let k = kitchen().await;
    k.kitchen()
        .set_selection(
            "auth.oauth_challenge",
            json!({ "token": ACCESS, "authorizationServer": as_url, "scope": "mcp:tools" }),
        )
        .unwrap();
    k
}

fn store_path(name: &str) -> std::path::PathBuf {
    std::env::temp_dir().join(format!(
        "mcp-triage-oauth-test-{}-{name}/tokens.json",
        std::process::id()
    ))
}

fn oauth_options(store: &std::path::Path) -> ClientOptions {
    let mut o = fast_options(LEGACY);
    o.oauth = Some(OAuthOptions {
        mode: AuthorizeMode::Follow,
        store: TokenStore::file(store.to_path_buf()),
        ..OAuthOptions::default()
    });
    o
}

/// The canary: no token string in the record, nor (except the accepted token, which is the
/// scenario's own parameter) in the kitchen's journal of what the client sent.
fn assert_no_token(r: &CallRecord, k: &KitchenHandle) {
    let rec = serde_json::to_string(r).unwrap();
    let journal = serde_json::to_string(&k.kitchen().journal()).unwrap();
    for secret in [ACCESS, REFRESH, "stale-canary"] {
        assert!(!rec.contains(secret), "the record holds {secret}: {rec}");
    }
    for secret in [REFRESH, "stale-canary"] {
        assert!(!journal.contains(secret), "the journal holds {secret}");
    }
}

#[tokio::test]
async fn authorizes_with_pkce_caches_the_token_and_reuses_it() {
    let auth = TestAs::start(TestAsOptions {
        access_tokens: vec![ACCESS.into()],
        refresh_token: Some(REFRESH.into()),
        expires_in: 3600,
        refreshed_expires_in: None,
    })
    .await;
    let k = protected(&auth.url).await;
    let store = store_path("cache");
    let r = run(&k.mcp_url(), oauth_options(&store)).await;
    assert_eq!(r.outcome, Outcome::ToolSuccess, "{r:?}");
    assert!(
        r.warnings.iter().any(|w| w.code == "AUTHORIZED"),
        "{:?}",
        r.warnings
    );
    let seen = auth.seen();
    assert_eq!(
        (
            seen.registrations,
            seen.authorizations,
            seen.code_grants,
            seen.refused
        ),
        (1, 1, 1, 0)
    );
    // RFC 8707: the resource is the MCP endpoint; the challenge's scope was asked for.
    assert_eq!(seen.last_resource.as_deref(), Some(k.mcp_url().as_str()));
    assert_eq!(seen.last_scope.as_deref(), Some("mcp:tools"));
    assert_no_token(&r, &k);

    // The cache: owner-only, holding the token; a second client uses it without asking.
    let text = std::fs::read_to_string(&store).unwrap();
    assert!(text.contains(ACCESS));
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&store).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
    }
    let r2 = run(&k.mcp_url(), oauth_options(&store)).await;
    assert_eq!(r2.outcome, Outcome::ToolSuccess, "{r2:?}");
    let seen = auth.seen();
    assert_eq!((seen.registrations, seen.authorizations), (1, 1));
    assert_no_token(&r2, &k);
    std::fs::remove_dir_all(store.parent().unwrap()).unwrap();
    k.shutdown().await;
}

#[tokio::test]
async fn a_rejected_token_is_refreshed_once() {
    // The first token is not the one the server accepts: its 401 makes the client refresh,
    // and the refreshed token passes.
    let auth = TestAs::start(TestAsOptions {
        access_tokens: vec!["stale-canary".into(), ACCESS.into()],
        refresh_token: Some(REFRESH.into()),
        expires_in: 3600,
        refreshed_expires_in: None,
    })
    .await;
    let k = protected(&auth.url).await;
    let store = store_path("refresh401");
    let r = run(&k.mcp_url(), oauth_options(&store)).await;
    assert_eq!(r.outcome, Outcome::ToolSuccess, "{r:?}");
    let seen = auth.seen();
    assert_eq!(
        (seen.authorizations, seen.code_grants, seen.refresh_grants),
        (1, 1, 1)
    );
    assert_no_token(&r, &k);
    std::fs::remove_dir_all(store.parent().unwrap()).unwrap();
    k.shutdown().await;
}

#[tokio::test]
async fn a_token_about_to_expire_is_refreshed_before_it_is_sent() {
    // A 4-second token is due for refresh after 2 s (half its lifetime): the next client,
    // 4 s later, refreshes it before its first request instead of authorizing again. The
    // refreshed token lives an hour, so a slow run 2 does not refresh twice (CI saw that).
    let auth = TestAs::start(TestAsOptions {
        access_tokens: vec![ACCESS.into()],
        refresh_token: Some(REFRESH.into()),
        expires_in: 4,
        refreshed_expires_in: Some(3600),
    })
    .await;
    let k = protected(&auth.url).await;
    let store = store_path("expiry");
    let r = run(&k.mcp_url(), oauth_options(&store)).await;
    assert_eq!(r.outcome, Outcome::ToolSuccess, "{r:?}");
    let refreshed_before = auth.seen().refresh_grants;
    tokio::time::sleep(std::time::Duration::from_millis(4100)).await;
    let r2 = run(&k.mcp_url(), oauth_options(&store)).await;
    assert_eq!(r2.outcome, Outcome::ToolSuccess, "{r2:?}");
    assert!(
        r2.warnings.iter().any(|w| w.code == "AUTH_REFRESHED"),
        "{:?}",
        r2.warnings
    );
    let seen = auth.seen();
    assert_eq!(seen.authorizations, 1);
    assert_eq!(seen.refresh_grants, refreshed_before + 1);
    assert_no_token(&r2, &k);
    std::fs::remove_dir_all(store.parent().unwrap()).unwrap();
    k.shutdown().await;
}

#[tokio::test]
async fn a_server_that_never_accepts_the_token_ends_in_a_clear_failure_within_the_limit() {
    // Every token is refused and there is no refresh token: each 401 costs an authorization
    // until the limit, then the call ends with the 401 and says why.
    let auth = TestAs::start(TestAsOptions {
        access_tokens: vec!["stale-canary".into()],
        refresh_token: None,
        expires_in: 3600,
        refreshed_expires_in: None,
    })
    .await;
    let k = protected(&auth.url).await;
    let store = store_path("limit");
    let mut o = oauth_options(&store);
    o.list_tools_first = false;
    o.oauth.as_mut().unwrap().max_authorizations = 2;
    let r = run(&k.mcp_url(), o).await;
    assert_eq!(r.outcome, Outcome::HttpError, "{r:?}");
    let failed = auth_failed(&r);
    assert!(failed.detail.contains("giving up"), "{}", failed.detail);
    // One request (initialize) spends at most two authorizations; it fails, so the call does not
    // get further.
    assert_eq!(auth.seen().authorizations, 2);
    assert_no_token(&r, &k);
    let _ = std::fs::remove_dir_all(store.parent().unwrap());
    k.shutdown().await;
}

#[tokio::test]
async fn without_oauth_a_401_is_only_reported() {
    let auth = TestAs::start(TestAsOptions {
        access_tokens: vec![ACCESS.into()],
        refresh_token: None,
        expires_in: 3600,
        refreshed_expires_in: None,
    })
    .await;
    let k = protected(&auth.url).await;
    let r = run(&k.mcp_url(), fast_options(LEGACY)).await;
    assert_eq!(r.outcome, Outcome::HttpError);
    assert_eq!(auth.seen().authorizations, 0);
    k.shutdown().await;
}

#[tokio::test]
async fn an_expires_in_of_u64_max_neither_wraps_nor_forces_refreshes() {
    // 2^64-1 seconds: added to the clock it used to wrap to the past (a refresh before every
    // request) or panic in a debug build.
    let auth = TestAs::start(TestAsOptions {
        access_tokens: vec![ACCESS.into()],
        refresh_token: Some(REFRESH.into()),
        expires_in: u64::MAX,
        refreshed_expires_in: None,
    })
    .await;
    let k = protected(&auth.url).await;
    let store = store_path("huge-expiry");
    for _ in 0..2 {
        let r = run(&k.mcp_url(), oauth_options(&store)).await;
        assert_eq!(r.outcome, Outcome::ToolSuccess, "{r:?}");
    }
    let seen = auth.seen();
    assert_eq!((seen.authorizations, seen.refresh_grants), (1, 0));
    std::fs::remove_dir_all(store.parent().unwrap()).unwrap();
    k.shutdown().await;
}

#[tokio::test]
async fn a_plain_http_authorization_server_off_loopback_is_refused_before_any_request() {
    // `.invalid` never resolves (RFC 6761), so nothing can leave the machine even if the rule
    // broke; with it, the client refuses at the metadata and never looks the host up.
    let k = protected("http://as.mcp-triage.invalid").await;
    let store = store_path("plain-http");
    let mut o = oauth_options(&store);
    o.list_tools_first = false;
    let r = run(&k.mcp_url(), o).await;
    assert_eq!(r.outcome, Outcome::HttpError, "{r:?}");
    let failed = auth_failed(&r);
    assert!(
        failed.detail.contains("http://as.mcp-triage.invalid")
            && failed.detail.contains("plain http"),
        "{}",
        failed.detail
    );
    let _ = std::fs::remove_dir_all(store.parent().unwrap());
    k.shutdown().await;
}

/// The record's `AUTH_FAILED` warning (the test fails when there is none).
fn auth_failed(r: &CallRecord) -> &mcp_triage_core::Warning {
    r.warnings
        .iter()
        .find(|w| w.code == "AUTH_FAILED")
        .unwrap_or_else(|| panic!("no AUTH_FAILED in {:?}", r.warnings))
}

// --- against the kitchen's own authorization server (`auth.oauth_flow`) ---------------------

/// A kitchen serving `auth.oauth_flow` with `fault` as its stored selection.
async fn kitchen_flow(fault: &str) -> KitchenHandle {
    let k = kitchen().await;
    k.kitchen()
        .set_selection("auth.oauth_flow", json!({ "fault": fault }))
        .unwrap();
    k
}

fn oauth_counter(k: &KitchenHandle, key: &str) -> u64 {
    k.kitchen().oauth_counters()[key].as_u64().unwrap()
}

fn memory_oauth() -> ClientOptions {
    let mut o = fast_options(LEGACY);
    o.oauth = Some(OAuthOptions {
        mode: AuthorizeMode::Follow,
        ..OAuthOptions::default()
    });
    o
}

/// The record holds no token response field (the kitchen's tokens are random; the canary
/// tests above check exact token strings against the test authorization server).
fn assert_no_bearer(r: &CallRecord) {
    let rec = serde_json::to_string(r).unwrap();
    assert!(
        !rec.contains("access_token") && !rec.contains("refresh_token"),
        "{rec}"
    );
}

#[tokio::test]
async fn kitchen_as_none_authorizes_once() {
    let k = kitchen_flow("none").await;
    let r = run(&k.mcp_url(), memory_oauth()).await;
    assert_eq!(r.outcome, Outcome::ToolSuccess, "{r:?}");
    assert_eq!(oauth_counter(&k, "registrations"), 1);
    assert_eq!(oauth_counter(&k, "authorizations"), 1);
    assert_eq!(oauth_counter(&k, "codeGrants"), 1);
    assert_eq!(oauth_counter(&k, "refusedTokenRequests"), 0);
    assert_no_bearer(&r);
    k.shutdown().await;
}

#[tokio::test]
async fn kitchen_as_expired_token_is_refreshed_once() {
    let k = kitchen_flow("expired_token").await;
    let r = run(&k.mcp_url(), memory_oauth()).await;
    assert_eq!(r.outcome, Outcome::ToolSuccess, "{r:?}");
    assert_eq!(oauth_counter(&k, "authorizations"), 1);
    assert_eq!(oauth_counter(&k, "refreshGrants"), 1);
    k.shutdown().await;
}

#[tokio::test]
async fn kitchen_as_revoked_refresh_token_leads_to_a_new_authorization() {
    let k = kitchen_flow("revoked_refresh").await;
    let r = run(&k.mcp_url(), memory_oauth()).await;
    assert_eq!(r.outcome, Outcome::ToolSuccess, "{r:?}");
    // The refresh was refused, so the client authorized again (its second token is good).
    assert_eq!(oauth_counter(&k, "refusedTokenRequests"), 1);
    assert_eq!(oauth_counter(&k, "authorizations"), 2);
    assert!(
        r.warnings.iter().any(|w| w.code == "AUTHORIZED"
            && w.detail.contains("refreshing the token failed")
            && w.detail.contains("invalid_grant")),
        "{:?}",
        r.warnings
    );
    k.shutdown().await;
}

/// Runs one call against `auth.oauth_flow` with `fault` that must end in the 401 with an
/// `AUTH_FAILED` warning; returns the kitchen (for its counters) and that warning's detail.
async fn failing_flow(fault: &str) -> (KitchenHandle, String) {
    let k = kitchen_flow(fault).await;
    let mut o = memory_oauth();
    o.list_tools_first = false;
    let r = run(&k.mcp_url(), o).await;
    assert_eq!(r.outcome, Outcome::HttpError, "{r:?}");
    let failed = auth_failed(&r);
    assert_no_bearer(&r);
    (k, failed.detail.clone())
}

#[tokio::test]
async fn kitchen_as_wrong_audience_ends_within_the_limit() {
    let (k, why) = failing_flow("wrong_audience").await;
    assert!(why.contains("giving up"), "{why}");
    // Refreshes and authorizations are bounded: 2 authorizations for the one request (the
    // default --max-authorizations), and one refresh (the judge's auth_bounded allows 3 token
    // requests and 2 authorizations).
    assert_eq!(oauth_counter(&k, "authorizations"), 2);
    assert!(oauth_counter(&k, "refreshGrants") <= 1);
    k.shutdown().await;
}

#[tokio::test]
async fn kitchen_as_without_pkce_is_refused() {
    let (k, why) = failing_flow("missing_pkce").await;
    assert!(why.contains("S256"), "{why}");
    assert_eq!(oauth_counter(&k, "authorizations"), 0);
    k.shutdown().await;
}

#[tokio::test]
async fn kitchen_as_metadata_404_is_a_clear_failure() {
    let (k, why) = failing_flow("metadata_404").await;
    assert!(why.contains("no authorization server metadata"), "{why}");
    assert_eq!(oauth_counter(&k, "registrations"), 0);
    k.shutdown().await;
}

#[tokio::test]
async fn kitchen_as_scope_step_up() {
    let k = kitchen_flow("scope_step_up").await;
    let r = run(&k.mcp_url(), memory_oauth()).await;
    assert_eq!(r.outcome, Outcome::ToolSuccess, "{r:?}");
    // tools/list passed with mcp:tools; tools/call needed mcp:write as well: one step-up.
    assert_eq!(oauth_counter(&k, "authorizations"), 2);
    assert!(
        r.warnings
            .iter()
            .any(|w| w.code == "AUTHORIZED" && w.detail.contains("insufficient_scope")),
        "{:?}",
        r.warnings
    );
    assert_no_bearer(&r);
    k.shutdown().await;
}

// --- DPoP against the kitchen's authorization server (`dpop`, `dpop_nonce`) -------------------

fn oauth_counters(k: &KitchenHandle) -> [u64; 4] {
    [
        "codeGrants",
        "refusedTokenRequests",
        "dpopProofsRefused",
        "dpopNonceChallenges",
    ]
    .map(|c| oauth_counter(k, c))
}

#[tokio::test]
async fn kitchen_as_dpop_binds_the_token_and_every_request_proves_the_key() {
    let k = kitchen_flow("dpop").await;
    let r = run(&k.mcp_url(), memory_oauth()).await;
    assert_eq!(r.outcome, Outcome::ToolSuccess, "{r:?}");
    // One token request, no proof the kitchen refused (it checks each request's proof: key,
    // ath, htm, htu, iat and jti replay), no nonce asked for.
    assert_eq!(oauth_counters(&k), [1, 0, 0, 0]);
    assert!(
        r.warnings
            .iter()
            .any(|w| w.code == "AUTHORIZED" && w.detail.contains("DPoP-bound")),
        "{:?}",
        r.warnings
    );
    assert_no_bearer(&r);
    k.shutdown().await;
}

#[tokio::test]
async fn kitchen_as_dpop_nonces_are_followed_once_at_each_server() {
    let k = kitchen_flow("dpop_nonce").await;
    let r = run(&k.mcp_url(), memory_oauth()).await;
    assert_eq!(r.outcome, Outcome::ToolSuccess, "{r:?}");
    // Two use_dpop_nonce answers: the token endpoint's and the resource's; each followed once.
    assert_eq!(oauth_counters(&k), [1, 0, 0, 2]);
    assert_eq!(oauth_counter(&k, "authorizations"), 1);
    k.shutdown().await;
}

#[tokio::test]
async fn kitchen_as_dpop_refuses_a_client_that_will_not_prove_possession() {
    let k = kitchen_flow("dpop").await;
    let mut o = memory_oauth();
    o.list_tools_first = false;
    if let Some(a) = o.oauth.as_mut() {
        a.dpop = mcp_triage_client::DpopMode::Never;
    }
    let r = run(&k.mcp_url(), o).await;
    assert_eq!(r.outcome, Outcome::HttpError, "{r:?}");
    let why = &auth_failed(&r).detail;
    assert!(why.contains("invalid_dpop_proof"), "{why}");
    assert_eq!(oauth_counter(&k, "dpopProofsRefused"), 1);
    k.shutdown().await;
}
