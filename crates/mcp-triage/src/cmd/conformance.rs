//! `mcp-triage conformance-client URL`: the client side of the official conformance suite.
//! The suite starts a scenario server and runs this command with the URL, naming the scenario
//! in `MCP_CONFORMANCE_SCENARIO`, as it does for its own reference client; we do what that
//! client does for each scenario, through our client, and print the records (JSON Lines).

use crate::exit::Exit;
use std::process::ExitCode;

use clap::Args;
use mcp_triage_client::{
    AuthorizeMode, CallOptions, CallRecord, Client, ClientOptions, ConnectError, Grant, IdpClient,
    ListToolsError, OAuthOptions, Target, TargetError, ToolInfo, VersionChoice,
};
use mcp_triage_core::{Outcome, ProtocolVersion};
use serde_json::{json, Value};

use super::client_args::{runtime, ArgsError};

#[derive(Args, Debug)]
pub struct ConformanceArgs {
    /// The scenario server's URL (the suite appends it).
    #[arg(value_name = "URL")]
    pub url: String,

    /// The scenario; defaults to $MCP_CONFORMANCE_SCENARIO.
    #[arg(long, env = "MCP_CONFORMANCE_SCENARIO", value_name = "NAME")]
    pub scenario: String,

    /// The revision the suite runs the scenario at (the 0.2.0 CLI sets
    /// $MCP_CONFORMANCE_PROTOCOL_VERSION from its --spec-version); the scripted scenarios
    /// speak it, 2025-11-25 when absent or unknown.
    #[arg(
        long,
        env = "MCP_CONFORMANCE_PROTOCOL_VERSION",
        value_name = "REVISION"
    )]
    pub protocol_version: Option<String>,
}

/// The era, whether to accept elicitation defaults, and the tools to call with their arguments.
type Steps = (VersionChoice, bool, Vec<(&'static str, Value)>);

/// What the reference client does per scenario: which tool with which arguments, at
/// `revision` (the suite's; these scenarios were written for the `initialize` era, and the
/// 0.1.16 CLI names no revision, so 2025-11-25 unless the suite says otherwise: `tools_call`
/// at 2026-07-28 has a server that refuses `initialize`).
fn steps(scenario: &str, revision: VersionChoice) -> Option<Steps> {
    Some(match scenario {
        // Handshake and tools/list only.
        "initialize" => (revision, false, vec![]),
        "tools_call" => (
            revision,
            false,
            vec![("add_numbers", json!({ "a": 5, "b": 3 }))],
        ),
        // Accept the form with the schema's defaults (SEP-1034).
        "elicitation-sep1034-client-defaults" => (
            revision,
            true,
            vec![("test_client_elicitation_defaults", json!({}))],
        ),
        // The tool's stream closes after a priming event; resume by GET after retry: ms.
        "sse-retry" => (revision, false, vec![("test_reconnection", json!({}))]),
        _ => return None,
    })
}

/// The revision named by `--protocol-version` / $MCP_CONFORMANCE_PROTOCOL_VERSION, or
/// 2025-11-25 (the scripted scenarios' era) when it names none we know.
fn scripted_revision(named: Option<&str>) -> VersionChoice {
    match named.map(VersionChoice::parse) {
        Some(Ok(VersionChoice::Fixed(v))) => VersionChoice::Fixed(v),
        _ => VersionChoice::Fixed(ProtocolVersion::V2025_11_25),
    }
}

/// `json-schema-2020-12-preservation`: the suite lists a tool with a rich 2020-12
/// `inputSchema` (FOCAL) and an echo tool; the client hands the schema it holds for FOCAL back
/// through ECHO, and the suite compares it keyword by keyword with what it sent. What is
/// echoed is [`ToolInfo::input_schema`] itself, so the check sees the client's own copy.
const SCHEMA_ECHO: (&str, &str) = ("json_schema_2020_12_tool", "json_schema_echo");

/// Arguments for a tool from its input schema: every required property gets a value of its type.
fn synthesize(schema: &Value) -> Value {
    let mut args = serde_json::Map::new();
    for r in schema["required"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
    {
        let prop = &schema["properties"][r];
        let v = if let Some(e) = prop["enum"].as_array().and_then(|e| e.first()) {
            e.clone()
        } else {
            match prop["type"].as_str() {
                Some("integer") => json!(1),
                Some("number") => json!(1.5),
                Some("boolean") => json!(true),
                Some("object") => json!({}),
                Some("array") => json!([]),
                _ => json!("conformance"),
            }
        };
        args.insert(r.to_string(), v);
    }
    Value::Object(args)
}

/// The client ID metadata document URL the suite's authorization servers accept as-is
/// (`auth/basic-cimd`); the suite never fetches it.
const CONFORMANCE_CIMD_URL: &str = "https://conformance-test.local/client-metadata.json";

/// OAuth for the `auth/` scenarios, as the suite's reference client sets it up: its
/// authorization servers approve at once by redirecting (so the redirect is followed, not
/// shown to a person), tokens live in memory only, pre-registered credentials come from
/// MCP_CONFORMANCE_CONTEXT, and the machine scenarios use their grant with what the context
/// gives: client-credentials, the workload's JWT (`valid_jwt`) for the JWT bearer grant of
/// `auth/wif-jwt-bearer`, the user's ID token and the IdP (`idp_*`) for
/// `auth/enterprise-managed-authorization` (0.1.16's `auth/cross-app-access-complete-flow`). DPoP (`auth/dpop*`) needs nothing here: the
/// scenario's authorization server lists ES256 in `dpop_signing_alg_values_supported`, which
/// the client's default `--dpop auto` follows.
fn auth_options(scenario: &str, context: &Value) -> Option<OAuthOptions> {
    if !scenario.starts_with("auth/") {
        return None;
    }
    let text = |k: &str| context[k].as_str().map(str::to_string);
    let (grant, identity_token) = match scenario {
        s if s.starts_with("auth/client-credentials") => (Grant::ClientCredentials, None),
        "auth/wif-jwt-bearer" => (Grant::JwtBearer, text("valid_jwt")),
        // The same SEP-990 scenario; 0.1.16 names it cross-app-access-complete-flow.
        "auth/enterprise-managed-authorization" | "auth/cross-app-access-complete-flow" => {
            (Grant::EnterpriseManaged, text("idp_id_token"))
        }
        _ => (Grant::AuthorizationCode, None),
    };
    let idp = match (text("idp_token_endpoint"), text("idp_client_id")) {
        (Some(token_endpoint), Some(client_id)) => Some(IdpClient {
            token_endpoint,
            client_id,
            client_secret: None,
        }),
        _ => None,
    };
    Some(OAuthOptions {
        grant,
        identity_token,
        idp,
        client_id: text("client_id"),
        client_secret: text("client_secret"),
        client_key_pem: text("private_key_pem"),
        client_metadata_url: Some(CONFORMANCE_CIMD_URL.to_string()),
        mode: AuthorizeMode::Follow,
        authorize_timeout: std::time::Duration::from_secs(20),
        ..OAuthOptions::default()
    })
}

/// Why the client could not begin a scenario: the server could not be reached or set up, or
/// its `tools/list` failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SetupError {
    /// `Client::connect` failed.
    #[error(transparent)]
    Connect(#[from] ConnectError),
    /// `tools/list` failed.
    #[error(transparent)]
    ListTools(#[from] ListToolsError),
    /// The scenario needs a tool that `tools/list` did not list.
    #[error("tools/list does not list {0:?}, which this scenario needs")]
    NotListed(&'static str),
}

/// Why `conformance-client` did not run its scenario (calls that fail are exit 1, not this).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ConformanceError {
    /// The suite's URL is not one.
    #[error(transparent)]
    Target(#[from] TargetError),
    /// The runtime did not start.
    #[error(transparent)]
    Args(#[from] ArgsError),
    /// A scenario without a script could not begin.
    #[error("conformance scenario {scenario}: {source}")]
    Scenario {
        /// The scenario's name.
        scenario: String,
        /// Why.
        source: SetupError,
    },
    /// A record could not be written as JSON.
    #[error(transparent)]
    Record(serde_json::Error),
}

/// `conformance-client`'s arguments resolved once: the suite's URL as a [`Target`], the
/// client's options for the scenario (its era, elicitation defaults and OAuth, as the
/// reference client sets them up) and the calls to make. `MCP_CONFORMANCE_CONTEXT` is read
/// here, once, for scenarios without a script.
#[derive(Debug)]
pub struct ConformanceConfig {
    /// The scenario server.
    pub target: Target,
    /// The scenario's name (`--scenario`, or `$MCP_CONFORMANCE_SCENARIO`).
    pub scenario: String,
    /// The client's options for this scenario.
    pub client: ClientOptions,
    /// What to call.
    pub plan: Plan,
}

/// The calls of a scenario.
#[derive(Debug)]
pub enum Plan {
    /// What the reference client calls in this scenario (see [`steps`]).
    Scripted(Vec<(&'static str, Value)>),
    /// Call the tool `echo` with `{"schema": <the listed inputSchema of focal>}` (see
    /// [`SCHEMA_ECHO`]).
    EchoSchema {
        /// The tool whose schema is echoed.
        focal: &'static str,
        /// The tool that takes it.
        echo: &'static str,
    },
    /// A scenario without a script: the calls the suite names in MCP_CONFORMANCE_CONTEXT's
    /// `toolCalls`, or (None) every listed tool whose definition is valid.
    Generic(Option<Vec<(String, Value)>>),
}

/// Resolves the scenario; the one check is the URL (the first thing the command always
/// checked, for every scenario).
pub fn config(args: ConformanceArgs) -> Result<ConformanceConfig, TargetError> {
    let target = Target::url(&args.url)?;
    let scenario = args.scenario;
    let revision = scripted_revision(args.protocol_version.as_deref());
    let (client, plan) = match steps(&scenario, revision) {
        Some((protocol, accept_defaults, calls)) => (
            ClientOptions {
                protocol,
                accept_defaults,
                scenario: Some(scenario.clone()),
                ..ClientOptions::default()
            },
            Plan::Scripted(calls),
        ),
        None => {
            let context: Value = std::env::var("MCP_CONFORMANCE_CONTEXT")
                .ok()
                .and_then(|c| serde_json::from_str(&c).ok())
                .unwrap_or(Value::Null);
            let client = ClientOptions {
                accept_defaults: true,
                scenario: Some(scenario.clone()),
                oauth: auth_options(&scenario, &context),
                ..ClientOptions::default()
            };
            let plan = if scenario == "json-schema-2020-12-preservation" {
                let (focal, echo) = SCHEMA_ECHO;
                Plan::EchoSchema { focal, echo }
            } else {
                Plan::Generic(tool_calls(&context))
            };
            (client, plan)
        }
    };
    Ok(ConformanceConfig {
        target,
        scenario,
        client,
        plan,
    })
}

/// The `toolCalls` MCP_CONFORMANCE_CONTEXT names, as (tool, arguments), or None when it names
/// none (then every valid listed tool is called).
fn tool_calls(context: &Value) -> Option<Vec<(String, Value)>> {
    let list = context["toolCalls"].as_array()?;
    Some(
        list.iter()
            .map(|c| {
                (
                    c["name"].as_str().unwrap_or("").to_string(),
                    c["arguments"].clone(),
                )
            })
            .collect(),
    )
}

pub fn run(config: ConformanceConfig) -> Result<ExitCode, ConformanceError> {
    let ConformanceConfig {
        target,
        scenario,
        client,
        plan,
    } = config;
    match plan {
        Plan::Scripted(calls) => run_scripted(target, client, calls),
        Plan::Generic(Some(named)) => run_generic(target, client, &scenario, Calls::Named(named)),
        Plan::Generic(None) => run_generic(target, client, &scenario, Calls::EveryValid),
        Plan::EchoSchema { focal, echo } => {
            run_generic(target, client, &scenario, Calls::EchoSchema { focal, echo })
        }
    }
}

/// What a scenario without a fixed script calls, decided once `tools/list` is in.
enum Calls {
    /// The calls the suite names in MCP_CONFORMANCE_CONTEXT.
    Named(Vec<(String, Value)>),
    /// Every listed tool whose definition is valid.
    EveryValid,
    /// `echo` with the listed inputSchema of `focal` (see [`SCHEMA_ECHO`]).
    EchoSchema {
        focal: &'static str,
        echo: &'static str,
    },
}

impl Calls {
    /// The (tool, arguments) to call, given what `tools/list` returned.
    fn resolve(self, tools: &[ToolInfo]) -> Result<Vec<(String, Value)>, SetupError> {
        Ok(match self {
            Calls::Named(named) => named,
            Calls::EveryValid => valid_tools(tools),
            Calls::EchoSchema { focal, echo } => {
                let schema = tools
                    .iter()
                    .find(|t| t.name == focal)
                    .and_then(ToolInfo::input_schema)
                    .ok_or(SetupError::NotListed(focal))?;
                vec![(echo.to_string(), json!({ "schema": schema }))]
            }
        })
    }
}

/// Scenarios without a fixed script (the 2026-07-28 client scenarios): the era by detection,
/// and the calls [`Calls`] picks once the tools are listed (tools with an invalid
/// x-mcp-header are never among them, as clients MUST).
fn run_generic(
    target: Target,
    opts: ClientOptions,
    scenario: &str,
    calls: Calls,
) -> Result<ExitCode, ConformanceError> {
    let rt = runtime()?;
    let result: Result<Vec<CallRecord>, SetupError> = rt.block_on(async {
        let client = Client::connect(target, opts).await?;
        let tools = client.list_tools().await?;
        let calls = calls.resolve(&tools)?;
        let mut records = Vec::new();
        for (name, a) in calls {
            records.push(client.call_tool(&name, a, CallOptions::default()).await);
        }
        client.close().await;
        Ok(records)
    });
    let records = result.map_err(|source| ConformanceError::Scenario {
        scenario: scenario.to_string(),
        source,
    })?;
    for r in &records {
        outln!(
            "{}",
            serde_json::to_string(r).map_err(ConformanceError::Record)?
        );
    }
    Ok(ExitCode::SUCCESS)
}

/// Every listed tool a client may call, with arguments synthesized from its schema; a tool
/// with an invalid x-mcp-header is left out, with a word on stderr.
fn valid_tools(tools: &[ToolInfo]) -> Vec<(String, Value)> {
    let mut calls = Vec::new();
    for t in tools {
        let header_problems = super::tool_checks::header_problems(&t.definition);
        if !header_problems.is_empty() {
            eprintln!(
                "mcp-triage: excluding tool {:?}: {}",
                t.name,
                header_problems.join("; ")
            );
            continue;
        }
        let schema = t.input_schema().unwrap_or(&Value::Null);
        calls.push((t.name.clone(), synthesize(schema)));
    }
    calls
}

/// A scenario with a script: the reference client's calls, each record printed; a failed
/// `tools/list` or a call that did not succeed is exit 1.
fn run_scripted(
    target: Target,
    opts: ClientOptions,
    calls: Vec<(&'static str, Value)>,
) -> Result<ExitCode, ConformanceError> {
    let rt = runtime()?;
    let (listed, records): (Result<usize, SetupError>, Vec<CallRecord>) = rt.block_on(async {
        let client = match Client::connect(target, opts).await {
            Ok(c) => c,
            Err(e) => return (Err(e.into()), Vec::new()),
        };
        let listed = client
            .list_tools()
            .await
            .map(|t| t.len())
            .map_err(SetupError::from);
        let mut records = Vec::new();
        for (tool, args) in calls {
            records.push(client.call_tool(tool, args, CallOptions::default()).await);
        }
        client.close().await;
        (listed, records)
    });
    let mut ok = true;
    if let Err(e) = &listed {
        eprintln!("mcp-triage: tools/list failed: {e}");
        ok = false;
    }
    for r in &records {
        outln!(
            "{}",
            serde_json::to_string(r).map_err(ConformanceError::Record)?
        );
        if r.outcome != Outcome::ToolSuccess {
            eprintln!(
                "mcp-triage: {} ended {}",
                r.tool.as_deref().unwrap_or("?"),
                r.outcome
            );
            ok = false;
        }
    }
    Ok(if ok {
        ExitCode::SUCCESS
    } else {
        Exit::Failed.into()
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cmd::args_testing::parsed;

    fn config_of(argv: &[&str]) -> Result<ConformanceConfig, TargetError> {
        config(parsed(argv))
    }

    #[test]
    fn a_scripted_scenario_gets_its_era_and_calls() {
        let c = config_of(&["http://127.0.0.1:9/mcp", "--scenario", "tools_call"]).unwrap();
        assert_eq!(c.target, Target::url("http://127.0.0.1:9/mcp").unwrap());
        assert_eq!(c.scenario, "tools_call");
        assert_eq!(
            c.client.protocol,
            VersionChoice::Fixed(ProtocolVersion::V2025_11_25)
        );
        assert_eq!(c.client.scenario.as_deref(), Some("tools_call"));
        let Plan::Scripted(calls) = c.plan else {
            panic!("a script expected");
        };
        assert_eq!(calls, [("add_numbers", json!({ "a": 5, "b": 3 }))]);
    }

    #[test]
    fn other_scenarios_detect_the_era_and_accept_defaults() {
        let c = config_of(&[
            "http://127.0.0.1:9/mcp",
            "--scenario",
            "auth/client-credentials-jwt",
        ])
        .unwrap();
        assert!(matches!(c.plan, Plan::Generic(_)));
        assert_eq!(c.client.protocol, VersionChoice::Auto);
        assert!(c.client.accept_defaults);
        let oauth = c.client.oauth.expect("auth/ scenarios use OAuth");
        assert_eq!(oauth.grant, Grant::ClientCredentials);
    }

    #[test]
    fn the_identity_grants_take_their_tokens_from_the_context() {
        let context = json!({
            "client_id": "c", "client_secret": "s", "valid_jwt": "w.j.t",
            "wrong_audience_jwt": "x", "idp_id_token": "i.d.t", "idp_client_id": "ic",
            "idp_token_endpoint": "http://127.0.0.1:3/token",
        });
        let wif = auth_options("auth/wif-jwt-bearer", &context).unwrap();
        assert_eq!(wif.grant, Grant::JwtBearer);
        assert_eq!(wif.identity_token.as_deref(), Some("w.j.t"));
        assert_eq!(wif.client_id.as_deref(), Some("c"));
        let old_name = auth_options("auth/cross-app-access-complete-flow", &context).unwrap();
        assert_eq!(old_name.grant, Grant::EnterpriseManaged);
        let ema = auth_options("auth/enterprise-managed-authorization", &context).unwrap();
        assert_eq!(ema.grant, Grant::EnterpriseManaged);
        assert_eq!(ema.identity_token.as_deref(), Some("i.d.t"));
        let idp = ema.idp.as_ref().expect("the IdP from the context");
        assert_eq!(
            (idp.token_endpoint.as_str(), idp.client_id.as_str()),
            ("http://127.0.0.1:3/token", "ic")
        );
        assert_eq!(ema.client_secret.as_deref(), Some("s"));
        let dpop = auth_options("auth/dpop-nonce", &Value::Null).unwrap();
        assert_eq!(dpop.grant, Grant::AuthorizationCode);
        assert_eq!(dpop.dpop, mcp_triage_client::DpopMode::Auto);
        // Secrets stay out of Debug.
        let shown = format!("{ema:?}");
        assert!(
            !shown.contains("i.d.t") && !shown.contains("\"s\""),
            "{shown}"
        );
    }

    #[test]
    fn the_suite_may_name_the_calls() {
        let context = json!({ "toolCalls": [{ "name": "t", "arguments": { "x": 1 } }] });
        assert_eq!(
            tool_calls(&context),
            Some(vec![("t".to_string(), json!({ "x": 1 }))])
        );
        assert_eq!(tool_calls(&Value::Null), None);
    }

    /// The 0.2.0 CLI names its revision; `tools_call` at 2026-07-28 has a server that refuses
    /// `initialize`, so the scripted scenarios speak what it names (2025-11-25 otherwise).
    #[test]
    fn scripted_scenarios_speak_the_suites_revision() {
        let at = |extra: &[&str]| {
            let argv = [
                &["http://127.0.0.1:9/mcp", "--scenario", "tools_call"],
                extra,
            ]
            .concat();
            config_of(&argv).unwrap().client.protocol
        };
        let v2026 = VersionChoice::Fixed(ProtocolVersion::V2026_07_28);
        let v2025 = VersionChoice::Fixed(ProtocolVersion::V2025_11_25);
        assert_eq!(at(&["--protocol-version", "2026-07-28"]), v2026);
        assert_eq!(at(&["--protocol-version", "2099-01-01"]), v2025);
        assert_eq!(at(&["--protocol-version", "auto"]), v2025);
        assert_eq!(at(&[]), v2025);
    }

    /// json-schema-2020-12-preservation echoes the focal tool's inputSchema as listed, every
    /// keyword of it; a server that does not list the focal tool is a setup error.
    #[test]
    fn the_schema_echo_sends_the_listed_schema_back() {
        let c = config_of(&[
            "http://127.0.0.1:9/mcp",
            "--scenario",
            "json-schema-2020-12-preservation",
        ])
        .unwrap();
        let Plan::EchoSchema { focal, echo } = c.plan else {
            panic!("the echo plan expected: {:?}", c.plan);
        };
        let schema = json!({ "$schema": "https://json-schema.org/draft/2020-12/schema",
            "$defs": { "a": { "$anchor": "x" } }, "allOf": [{ "anyOf": [{}] }],
            "if": {}, "then": {}, "else": {}, "additionalProperties": false, "x-extra": [1] });
        let tool = |name: &str, schema: Value| ToolInfo {
            name: name.to_string(),
            description: None,
            hints: Default::default(),
            annotations: None,
            header_params: Vec::new(),
            output_schema: None,
            definition: json!({ "name": name, "inputSchema": schema }),
        };
        let tools = [
            tool(focal, schema.clone()),
            tool(echo, json!({ "type": "object" })),
        ];
        let calls = Calls::EchoSchema { focal, echo }.resolve(&tools).unwrap();
        assert_eq!(calls, [(echo.to_string(), json!({ "schema": schema }))]);
        let e = Calls::EchoSchema { focal, echo }
            .resolve(&tools[1..])
            .unwrap_err();
        assert!(matches!(e, SetupError::NotListed(n) if n == focal), "{e}");
    }

    #[test]
    fn a_bad_url_is_refused() {
        let e = config_of(&["ftp://x/mcp", "--scenario", "initialize"]).unwrap_err();
        assert!(
            matches!(e, TargetError::NotAUrl(ref u) if u == "ftp://x/mcp"),
            "{e}"
        );
    }
}
