//! `--ui ADDR` and its limits, shared by `proxy` and `wrap`: the live page, `/events` and
//! Prometheus `/metrics` (crate `mcp-triage-proxy`, module `ui`).

use std::net::SocketAddr;

use clap::Args;
use mcp_triage_proxy::http::ProxyError;
use mcp_triage_proxy::ui::{self, UiGuard, UiHandle, UiHub, UiOptions};
use mcp_triage_proxy::RecordConsumer;

#[derive(Args)]
#[command(next_help_heading = "Live view and metrics")]
pub struct UiArgs {
    /// Serve a live page of calls by tool and layer, recent failures and (unsafe) retries on
    /// this address, with its SSE feed at /events and Prometheus metrics at /metrics (port 0
    /// picks a free port). Off by default: without it nothing of the view runs.
    #[arg(long, value_name = "ADDR")]
    ui: Option<SocketAddr>,
    /// Distinct tool names that get their own metric series and page rows; later names are
    /// counted as tool="other" (tool names come from clients: this bounds label cardinality).
    #[arg(long, value_name = "N", default_value_t = ui::metrics::DEFAULT_MAX_TOOLS as u32,
          requires = "ui", value_parser = clap::value_parser!(u32).range(1..=100_000))]
    ui_max_tools: u32,
    /// Recent failures and recent retries the page keeps (each).
    #[arg(long, value_name = "N", default_value_t = ui::DEFAULT_RECENT as u32,
          requires = "ui", value_parser = clap::value_parser!(u32).range(0..=100_000))]
    ui_recent: u32,
    /// Events queued for one /events client; a client that falls this far behind is dropped
    /// (its browser reconnects and gets a fresh snapshot) so it never slows the proxy.
    #[arg(long, value_name = "N", default_value_t = ui::DEFAULT_CLIENT_QUEUE as u32,
          requires = "ui", value_parser = clap::value_parser!(u32).range(1..=1_000_000))]
    ui_client_queue: u32,
    /// /events clients at once; past it a new one gets a 503.
    #[arg(long, value_name = "N", default_value_t = ui::DEFAULT_MAX_CLIENTS as u32,
          requires = "ui", value_parser = clap::value_parser!(u32).range(1..=10_000))]
    ui_max_clients: u32,
    /// Require this token on every request to the view (`Authorization: Bearer TOKEN`, or
    /// `?token=TOKEN` in the page's URL); set it when --ui is not a loopback address (a warning
    /// says so otherwise). From the environment, so it stays out of `ps`.
    #[arg(long, value_name = "TOKEN", env = "MCP_TRIAGE_UI_TOKEN", hide_env_values = true,
          requires = "ui", value_parser = non_empty_token)]
    ui_token: Option<String>,
}

/// The `--ui` listener did not start.
#[derive(Debug, thiserror::Error)]
#[error("--ui: {0}")]
pub struct UiError(#[source] pub ProxyError);

/// `--ui-token` given empty.
#[derive(Debug, thiserror::Error)]
#[error("the token must not be empty")]
pub struct EmptyToken;

fn non_empty_token(s: &str) -> Result<String, EmptyToken> {
    if s.is_empty() {
        return Err(EmptyToken);
    }
    Ok(s.to_string())
}

impl UiArgs {
    /// The view's state when --ui is given, labelled `server`.
    pub fn hub(&self, server: String) -> Option<UiHub> {
        self.ui?;
        let mut o = UiOptions::new(server);
        o.max_tools = self.ui_max_tools as usize;
        o.recent = self.ui_recent as usize;
        o.client_queue = self.ui_client_queue as usize;
        o.max_clients = self.ui_max_clients as usize;
        Some(UiHub::new(o))
    }

    /// Adds the view's record consumer to `consumers`.
    pub fn add_consumer(hub: Option<&UiHub>, consumers: &mut Vec<Box<dyn RecordConsumer>>) {
        if let Some(hub) = hub {
            consumers.push(Box::new(hub.consumer()));
        }
    }

    /// Starts the UI listener (on the current runtime) when there is a hub, and says where.
    pub async fn start(
        &self,
        who: &str,
        hub: Option<UiHub>,
        guard: UiGuard,
    ) -> Result<Option<UiHandle>, UiError> {
        let (Some(addr), Some(hub)) = (self.ui, hub) else {
            return Ok(None);
        };
        let mut guard = guard;
        guard.token = self.ui_token.clone();
        if let Some(w) = ui::exposure_warning(addr, &guard) {
            eprintln!("{who}: {w}");
        }
        let handle = ui::start(addr, hub, guard).await.map_err(UiError)?;
        eprintln!(
            "{who}: live view on {} (metrics: {}metrics)",
            handle.url(),
            handle.url()
        );
        Ok(Some(handle))
    }
}
