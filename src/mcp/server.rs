//! One configured server and its connection: connecting (with a time limit and retries with
//! back-off when it fails), the tools it lists, and reconnecting on next use after it died.

use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use futures::FutureExt;
use futures::future::BoxFuture;
use rmcp::model::{GetPromptRequestParams, ReadResourceRequestParams};
use tokio::sync::watch;

use super::catalog::{PromptInfo, ResourceInfo};
use super::config::ServerConfig;
use super::connect::{self, Client};
use super::limits::Limits;
use super::sdk_link::SdkLink;
use super::tool::{McpTool, Remote};
use crate::tools::{DynTool, ServerStatus};

/// Attempts to connect before a server is left failed until its next use.
const ATTEMPTS: u32 = 4;
const FIRST_BACKOFF: Duration = Duration::from_secs(1);

enum State {
    Connecting,
    Connected {
        client: Arc<Client>,
        tools: Vec<Arc<dyn DynTool>>,
        /// The tools as the server listed them (name, description, annotations).
        listed: Vec<serde_json::Value>,
        prompts: Vec<PromptInfo>,
        resources: Vec<ResourceInfo>,
    },
    Failed {
        error: String,
    },
}

pub(super) struct Server {
    pub config: ServerConfig,
    pub limits: Limits,
    state: Mutex<State>,
    /// One reconnect at a time.
    reconnecting: tokio::sync::Mutex<()>,
    /// Bumped on every change of state, so the session offers the new tool list.
    changes: watch::Sender<u64>,
    sdk: Option<SdkLink>,
    /// Turned off for the session (the Agent SDK's `mcp_toggle`): its tools are not offered.
    disabled: std::sync::atomic::AtomicBool,
}

impl Server {
    pub(super) fn new(
        config: ServerConfig,
        limits: Limits,
        changes: watch::Sender<u64>,
        sdk: Option<SdkLink>,
    ) -> Server {
        Server {
            config,
            limits,
            state: Mutex::new(State::Connecting),
            reconnecting: tokio::sync::Mutex::new(()),
            changes,
            sdk,
            disabled: std::sync::atomic::AtomicBool::new(false),
        }
    }

    fn state(&self) -> MutexGuard<'_, State> {
        crate::sys::sync::lock(&self.state)
    }

    fn set(&self, state: State) {
        *self.state() = state;
        self.changes.send_modify(|g| *g += 1);
    }

    pub(super) fn is_connecting(&self) -> bool {
        matches!(*self.state(), State::Connecting)
    }

    pub(super) fn tools(&self) -> Vec<Arc<dyn DynTool>> {
        if self.is_disabled() {
            return Vec::new();
        }
        match &*self.state() {
            State::Connected { tools, .. } => tools.clone(),
            _ => Vec::new(),
        }
    }

    pub(super) fn prompts(&self) -> Vec<PromptInfo> {
        match &*self.state() {
            State::Connected { prompts, .. } => prompts.clone(),
            _ => Vec::new(),
        }
    }

    pub(super) fn resources(&self) -> Vec<ResourceInfo> {
        match &*self.state() {
            State::Connected { resources, .. } => resources.clone(),
            _ => Vec::new(),
        }
    }

    fn is_disabled(&self) -> bool {
        self.disabled.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// Offers the server's tools again, or stops offering them.
    pub(super) fn set_enabled(&self, enabled: bool) {
        self.disabled
            .store(!enabled, std::sync::atomic::Ordering::Relaxed);
        self.changes.send_modify(|g| *g += 1);
    }

    /// Connects again now, whatever the state of the connection.
    pub(super) async fn reconnect(self: &Arc<Self>) -> Result<(), String> {
        let _one = self.reconnecting.lock().await;
        self.connect_or_fail().await
    }

    /// Connects; a failure leaves the server failed with why. The caller holds `reconnecting`.
    async fn connect_or_fail(self: &Arc<Self>) -> Result<(), String> {
        let outcome = self.connect().await;
        if let Err(error) = &outcome {
            self.set(State::Failed {
                error: error.clone(),
            });
        }
        outcome
    }

    pub(super) fn status(&self) -> ServerStatus {
        if self.is_disabled() {
            return ServerStatus {
                name: self.config.name.clone(),
                status: "disabled".into(),
                tools: 0,
                error: None,
            };
        }
        let (status, tools, error) = match &*self.state() {
            State::Connecting => ("pending", 0, None),
            State::Connected { tools, .. } => ("connected", tools.len(), None),
            State::Failed { error } => ("failed", 0, Some(error.clone())),
        };
        ServerStatus {
            name: self.config.name.clone(),
            status: status.to_string(),
            tools,
            error,
        }
    }

    /// The Agent SDK's `McpServerStatus`: state, the server's own name and version, its
    /// configuration, scope and tools.
    pub(super) fn report(&self) -> serde_json::Value {
        let status = self.status();
        let mut report = serde_json::json!({
            "name": status.name,
            "status": status.status,
            "scope": self.config.scope,
            "config": self.config.transport,
        });
        if let Some(error) = status.error {
            report["error"] = error.into();
        }
        if let State::Connected { client, listed, .. } = &*self.state() {
            report["tools"] = listed.clone().into();
            if let Some(peer) = client.peer_info()
                && let Some(info) = &peer.server_info
            {
                report["serverInfo"] = serde_json::json!({
                    "name": info.name,
                    "version": info.version,
                });
            }
        }
        report
    }

    /// The first connection, in the background: retried with back-off, reported once.
    pub(super) async fn start(self: Arc<Self>) {
        let mut backoff = FIRST_BACKOFF;
        for attempt in 1..=ATTEMPTS {
            match self.connect().await {
                Ok(()) => return,
                Err(error) => {
                    if attempt == 1 && self.limits.report {
                        eprintln!(
                            "ouro: MCP server \"{}\" ({}) did not start: {error}. The session goes on without it; it is retried in the background.",
                            self.config.name,
                            self.config.transport.describe()
                        );
                    }
                    tracing::debug!(server = %self.config.name, attempt, "mcp connect failed: {error}");
                    self.set(State::Failed { error });
                }
            }
            if attempt < ATTEMPTS {
                tokio::time::sleep(backoff).await;
                backoff *= 2;
            }
        }
    }

    async fn connect(self: &Arc<Self>) -> Result<(), String> {
        let name = &self.config.name;
        let transport = self
            .config
            .transport
            .expanded(name)
            .map_err(|e| e.to_string())?;
        let limit = self.limits.connect_timeout;
        let timed_out = || {
            format!(
                "no answer within {} s (raise MCP_TIMEOUT, in ms, for a slow server)",
                limit.as_secs_f64()
            )
        };
        let client =
            tokio::time::timeout(limit, connect::open(name, &transport, self.sdk.as_ref()))
                .await
                .map_err(|_| timed_out())??;
        let listed = tokio::time::timeout(limit, client.list_all_tools())
            .await
            .map_err(|_| timed_out())?
            .map_err(|e| format!("listing its tools failed: {e}"))?;
        let mut tools: Vec<Arc<dyn DynTool>> = Vec::new();
        for tool in &listed {
            match McpTool::new(self.clone(), tool) {
                Ok(t) => tools.push(Arc::new(t)),
                Err(e) => tracing::warn!(server = %name, tool = %tool.name, "tool skipped: {e}"),
            }
        }
        let listed = listed
            .iter()
            .map(|t| {
                let mut info = serde_json::json!({"name": t.name});
                if let Some(description) = &t.description {
                    info["description"] = description.as_ref().into();
                }
                if let Some(annotations) = &t.annotations
                    && let Ok(annotations) = serde_json::to_value(annotations)
                {
                    info["annotations"] = annotations;
                }
                info
            })
            .collect();
        let client = Arc::new(client);
        self.set(State::Connected {
            client: client.clone(),
            tools,
            listed,
            prompts: Vec::new(),
            resources: Vec::new(),
        });
        // Tools first: prompts and resources join when listed, so a slow listing never
        // holds the tools back.
        let server = self.clone();
        tokio::spawn(async move {
            let name = server.config.name.clone();
            let listed = tokio::time::timeout(limit, catalog(&name, &client)).await;
            let Ok((listed_prompts, listed_resources)) = listed else {
                tracing::debug!(server = %name, "listing prompts and resources timed out");
                return;
            };
            if let State::Connected {
                client: current,
                prompts,
                resources,
                ..
            } = &mut *server.state()
                && Arc::ptr_eq(current, &client)
            {
                *prompts = listed_prompts;
                *resources = listed_resources;
            }
        });
        Ok(())
    }

    /// The live connection; a server that died or failed is started again first.
    pub(super) async fn client(self: &Arc<Self>) -> Result<Arc<Client>, String> {
        if let Some(client) = self.live() {
            return Ok(client);
        }
        let _one = self.reconnecting.lock().await;
        if let Some(client) = self.live() {
            return Ok(client);
        }
        self.connect_or_fail().await?;
        self.live()
            .ok_or_else(|| "it closed right after connecting".into())
    }

    /// `prompts/get`, as JSON.
    pub(super) async fn get_prompt(
        self: &Arc<Self>,
        name: &str,
        arguments: serde_json::Map<String, serde_json::Value>,
    ) -> Result<serde_json::Value, String> {
        let client = self.client().await?;
        let params = GetPromptRequestParams::new(name).with_arguments(arguments);
        let result = self.within_call_limit(client.get_prompt(params)).await?;
        serde_json::to_value(result).map_err(|e| e.to_string())
    }

    /// `resources/read`, as JSON.
    pub(super) async fn read_resource(
        self: &Arc<Self>,
        uri: &str,
    ) -> Result<serde_json::Value, String> {
        let client = self.client().await?;
        let params = ReadResourceRequestParams::new(uri);
        let result = self.within_call_limit(client.read_resource(params)).await?;
        serde_json::to_value(result).map_err(|e| e.to_string())
    }

    async fn within_call_limit<T>(
        &self,
        request: impl Future<Output = Result<T, rmcp::ServiceError>>,
    ) -> Result<T, String> {
        let limit = self.limits.call_timeout;
        match tokio::time::timeout(limit, request).await {
            Ok(Ok(result)) => Ok(result),
            Ok(Err(e)) => {
                self.lost(&e.to_string());
                Err(e.to_string())
            }
            Err(_) => Err(format!(
                "no answer within {} s (MCP_TOOL_TIMEOUT)",
                limit.as_secs()
            )),
        }
    }

    fn live(&self) -> Option<Arc<Client>> {
        match &*self.state() {
            State::Connected { client, .. } if !client.is_closed() => Some(client.clone()),
            _ => None,
        }
    }

    /// A call failed at the transport: if the connection is gone, the next use reconnects.
    pub(super) fn lost(&self, error: &str) {
        let closed =
            matches!(&*self.state(), State::Connected { client, .. } if client.is_closed());
        if closed {
            tracing::debug!(server = %self.config.name, "mcp connection lost: {error}");
            self.set(State::Failed {
                error: format!("the connection closed ({error}); it reconnects on next use"),
            });
        }
    }
}

/// The prompts and resources of a server that declares them. A server whose listing fails
/// still serves its tools.
async fn catalog(name: &str, client: &Client) -> (Vec<PromptInfo>, Vec<ResourceInfo>) {
    let capabilities = client.peer_info().map(|info| info.capabilities.clone());
    let offers =
        |f: fn(&rmcp::model::ServerCapabilities) -> bool| capabilities.as_ref().is_some_and(f);
    let mut prompts = Vec::new();
    if offers(|c| c.prompts.is_some()) {
        match client.list_all_prompts().await {
            Ok(listed) => prompts = listed.iter().map(|p| PromptInfo::new(name, p)).collect(),
            Err(e) => tracing::debug!(server = %name, "listing prompts failed: {e}"),
        }
    }
    let mut resources = Vec::new();
    if offers(|c| c.resources.is_some()) {
        match client.list_all_resources().await {
            Ok(listed) => resources = listed.iter().map(|r| ResourceInfo::new(name, r)).collect(),
            Err(e) => tracing::debug!(server = %name, "listing resources failed: {e}"),
        }
    }
    (prompts, resources)
}

impl Remote for Server {
    fn server_name(&self) -> &str {
        &self.config.name
    }

    fn limits(&self) -> &Limits {
        &self.limits
    }

    fn connection(self: Arc<Self>) -> BoxFuture<'static, Result<Arc<Client>, String>> {
        async move { self.client().await }.boxed()
    }

    fn lost(&self, error: &str) {
        Server::lost(self, error);
    }
}
