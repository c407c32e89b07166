//! The six phases every tool call goes through: schema, semantic checks, pre-tool hooks,
//! permission, execution, post-tool hooks. A failing phase ends the call with an `is_error`
//! result that tells the model what to fix.

use std::sync::Arc;
use std::time::{Duration, Instant};

use futures::future::BoxFuture;
use serde_json::{Value, json};
use tokio::sync::mpsc::UnboundedSender;

use super::hooks::{HookEvent, HookSite, HookVerdict, Hooks, PermissionAnswer};
use super::review::Verdict;
use super::{AskAnswer, AskRequest, Asker};
use crate::event::PhaseTimings;
use crate::event::{Denial, Event, ToolStatus};
use crate::permissions::{Access, Confinement, Decision, PermissionPolicy, PermissionRequest};
use crate::settings;
use crate::text::elide_middle;
use crate::tools::{DynTool, PreparedCall, Progress, ToolContext, ToolError, ToolOutput, Toolbox};

/// The text of the result of every call the user cancelled.
pub const CANCELLED: &str = "The tool call was cancelled by the user.";

/// How long a cancelled tool gets to stop on its own (Bash kills its process group) before its
/// future is dropped.
const CANCEL_GRACE: Duration = Duration::from_secs(3);

/// Everything the phases need; shared by every call of every batch.
pub(crate) struct Pipeline {
    pub tools: Toolbox,
    pub ctx: ToolContext,
    pub policy: Arc<dyn PermissionPolicy>,
    pub asker: Arc<dyn Asker>,
    pub hooks: Arc<Hooks>,
    pub events: UnboundedSender<Event>,
    /// One permission prompt at a time, even when parallel calls all need one.
    ask_turn: tokio::sync::Mutex<()>,
    /// Auto mode's reviewer, when the session has one.
    pub reviewer: std::sync::OnceLock<Arc<super::review::Reviewer>>,
}

/// A call that passed phases 1 and 2.
pub(crate) struct Admitted {
    tool: Arc<dyn DynTool>,
    input: Value,
    prepared: Box<dyn PreparedCall>,
    pub timings: PhaseTimings,
}

impl Admitted {
    pub(super) fn is_concurrency_safe(&self) -> bool {
        self.prepared.is_concurrency_safe()
    }

    pub(super) fn summary(&self) -> String {
        self.prepared.summary()
    }
}

/// How a call ended.
pub(crate) struct Outcome {
    pub output: ToolOutput,
    pub status: ToolStatus,
    pub denial: Option<Denial>,
    pub timings: PhaseTimings,
}

impl Outcome {
    pub(super) fn cancelled(timings: PhaseTimings) -> Self {
        Outcome {
            output: ToolOutput::error(CANCELLED),
            status: ToolStatus::Cancelled,
            denial: None,
            timings,
        }
    }

    /// A call that ran (or was stopped by a failing phase) without being cancelled or denied.
    pub(super) fn ended(output: ToolOutput, timings: PhaseTimings) -> Self {
        let status = if output.is_error {
            ToolStatus::Error
        } else {
            ToolStatus::Ok
        };
        Outcome {
            output,
            status,
            denial: None,
            timings,
        }
    }

    fn error(message: impl Into<String>, timings: PhaseTimings) -> Self {
        Outcome::ended(ToolOutput::error(message), timings)
    }
}

/// What a call that may write changes, relative to the project root: only its file for Edit
/// and Write, anything (`None`) for a command or an outside service.
fn written_paths(access: Access, root: &std::path::Path) -> Option<Vec<String>> {
    match access {
        Access::Write(path) => Some(
            path.strip_prefix(root)
                .ok()
                .map(|p| p.to_string_lossy().into_owned())
                .into_iter()
                .collect(),
        ),
        Access::None | Access::Read(_) => Some(Vec::new()),
        Access::Execute(_) | Access::External => None,
    }
}

/// The concurrency slot a running call holds. A hook may rewrite a parallel-safe call into one
/// that must run alone; the call then waits until it is alone before going on.
pub(crate) trait Slot: Send {
    fn make_exclusive(&mut self) -> BoxFuture<'_, ()>;
}

enum Permission {
    Granted(Confinement),
    /// Approved with this input in place of the model's: phases 1 and 2 run again on it.
    Changed(Value),
    Refused(String),
    Cancelled,
}

impl Pipeline {
    pub(super) fn new(
        tools: Toolbox,
        ctx: ToolContext,
        policy: Arc<dyn PermissionPolicy>,
        asker: Arc<dyn Asker>,
        hooks: Arc<Hooks>,
        events: UnboundedSender<Event>,
    ) -> Self {
        Pipeline {
            tools,
            ctx,
            policy,
            asker,
            hooks,
            events,
            ask_turn: tokio::sync::Mutex::new(()),
            reviewer: std::sync::OnceLock::new(),
        }
    }

    /// Phases 1 (schema) and 2 (semantic checks). The error is the text of the result.
    pub(super) fn admit(
        &self,
        name: &str,
        input: Value,
        ctx: &ToolContext,
    ) -> Result<Admitted, (String, PhaseTimings)> {
        let mut timings = PhaseTimings::default();
        let Some(tool) = self.tools.find(name) else {
            let all = self.tools.all();
            let names: Vec<&str> = all.iter().map(|t| t.name()).collect();
            return Err((
                format!(
                    "There is no tool named `{name}`. The available tools are: {}.",
                    names.join(", ")
                ),
                timings,
            ));
        };
        let start = Instant::now();
        let checked = tool.check_schema(&input);
        timings.schema = start.elapsed();
        if let Err(message) = checked {
            return Err((message, timings));
        }
        let start = Instant::now();
        let prepared = tool.prepare(&input, ctx);
        timings.semantic = start.elapsed();
        match prepared {
            Ok(prepared) => Ok(Admitted {
                tool,
                input,
                prepared,
                timings,
            }),
            Err(message) => Err((message, timings)),
        }
    }

    /// Phases 3 to 6 for a call that holds its concurrency slot. `ctx.cancel` is the batch's
    /// token: once it fires the call ends as cancelled.
    pub(super) async fn complete(
        &self,
        id: &str,
        call: Admitted,
        ctx: &ToolContext,
        slot: &mut dyn Slot,
    ) -> Outcome {
        let cancel = ctx.cancel.clone();
        let mut call = call;
        let mut timings = call.timings;
        // Owned: a pre-tool hook may replace the call (and so the tool it borrows from).
        let tool_name = call.tool.name().to_string();
        let name = tool_name.as_str();
        let cwd = ctx.current_dir();
        let site = HookSite {
            cwd: &cwd,
            project_root: &ctx.project_root,
            tool_use_id: id,
        };

        let start = Instant::now();
        let pre = tokio::select! {
            biased;
            _ = cancel.cancelled() => return Outcome::cancelled(timings),
            pre = self.hooks.pre_tool_use(name, &call.input, site) => pre,
        };
        timings.pre_hooks = start.elapsed();
        // A denied call never runs, so a rewrite that came with the denial does not matter.
        let rewrite = match pre.verdict {
            Some(HookVerdict::Deny(_)) => None,
            _ => pre.updated_input,
        };
        if let Some(input) = rewrite
            && let Err(outcome) = self
                .readmit(
                    &mut call,
                    input,
                    "A PreToolUse hook",
                    &mut timings,
                    ctx,
                    slot,
                )
                .await
        {
            return outcome;
        }

        let start = Instant::now();
        let permission = self.authorize(id, &call, pre.verdict, ctx).await;
        timings.permission = start.elapsed();
        let confinement = match permission {
            Permission::Granted(confinement) => confinement,
            Permission::Cancelled => return Outcome::cancelled(timings),
            Permission::Refused(message) => return self.refuse(id, &call, message, timings),
            Permission::Changed(input) => {
                let who = "The permission answer";
                if let Err(outcome) = self
                    .readmit(&mut call, input, who, &mut timings, ctx, slot)
                    .await
                {
                    return outcome;
                }
                // The answer approved the changed call, as a hook's allow would: a deny rule
                // still binds it.
                match self
                    .authorize(id, &call, Some(HookVerdict::Allow), ctx)
                    .await
                {
                    Permission::Granted(confinement) => confinement,
                    Permission::Refused(message) => {
                        return self.refuse(id, &call, message, timings);
                    }
                    // A hook's allow never asks, so nothing else comes back; were it to, the
                    // call does not run.
                    Permission::Cancelled | Permission::Changed(_) => {
                        return Outcome::cancelled(timings);
                    }
                }
            }
        };

        let start = Instant::now();
        let input = call.input.clone();
        let mut call_ctx = ctx.clone();
        call_ctx.confinement = confinement;
        let checkpoints = ctx
            .checkpoints
            .clone()
            .filter(|_| !call.prepared.is_read_only());
        let written = match &checkpoints {
            Some(checkpoints) => {
                let detail = crate::checkpoint::record::Detail::tool(name, id);
                let written = written_paths(call.prepared.access(ctx), &ctx.project_root);
                match &written {
                    Some(paths) => checkpoints.take_before_write(detail, paths).await,
                    None => {
                        checkpoints
                            .take(crate::checkpoint::Kind::Tool, detail)
                            .await;
                    }
                }
                Some(written)
            }
            None => None,
        };
        let executed = self.execute(id, call.prepared, &call_ctx).await;
        if let (Some(checkpoints), Some(written)) = (checkpoints, written) {
            let anything = written.is_none();
            checkpoints.wrote(written);
            if anything {
                let detail = crate::checkpoint::record::Detail::tool(name, id);
                checkpoints.refresh_soon(detail);
            }
        }
        timings.execution = start.elapsed();
        let Some(mut output) = executed else {
            return Outcome::cancelled(timings);
        };

        let start = Instant::now();
        let post = tokio::select! {
            biased;
            _ = cancel.cancelled() => None,
            post = self.hooks.post_tool_use(name, &input, &output, site) => Some(post),
        };
        timings.post_hooks = start.elapsed();
        if let Some(post) = post {
            if let Some(replacement) = post.replacement {
                output.content = replacement;
            }
            for note in post.notes {
                output.content.push_str("\n\n[PostToolUse hook] ");
                output.content.push_str(&note);
            }
        }
        Outcome::ended(output, timings)
    }

    /// Phases 1 and 2 again for `input`, which `who` put in place of the call's own; a call
    /// that became one that must run alone waits until it is alone.
    async fn readmit(
        &self,
        call: &mut Admitted,
        input: Value,
        who: &str,
        timings: &mut PhaseTimings,
        ctx: &ToolContext,
        slot: &mut dyn Slot,
    ) -> Result<(), Outcome> {
        let was_safe = call.is_concurrency_safe();
        match self.admit(call.tool.name(), input, ctx) {
            Ok(rewritten) => {
                timings.schema += rewritten.timings.schema;
                timings.semantic += rewritten.timings.semantic;
                *call = rewritten;
            }
            Err((message, extra)) => {
                timings.schema += extra.schema;
                timings.semantic += extra.semantic;
                return Err(Outcome::error(
                    format!(
                        "{who} changed the input of this call, and the changed input is \
                         invalid: {message}"
                    ),
                    *timings,
                ));
            }
        }
        if was_safe && !call.is_concurrency_safe() {
            tokio::select! {
                biased;
                _ = ctx.cancel.cancelled() => return Err(Outcome::cancelled(*timings)),
                () = slot.make_exclusive() => {}
            }
        }
        Ok(())
    }

    fn refuse(&self, id: &str, call: &Admitted, message: String, timings: PhaseTimings) -> Outcome {
        let denial = Denial {
            tool_name: call.tool.name().to_string(),
            tool_use_id: id.to_string(),
            tool_input: call.input.clone(),
            reason: message.clone(),
        };
        let _ = self.events.send(Event::PermissionDenied(denial.clone()));
        Outcome {
            output: ToolOutput::error(message),
            status: ToolStatus::Denied,
            denial: Some(denial),
            timings,
        }
    }

    /// Phase 4. A hook's verdict outranks the policy.
    async fn authorize(
        &self,
        id: &str,
        call: &Admitted,
        hook: Option<HookVerdict>,
        ctx: &ToolContext,
    ) -> Permission {
        let name = call.tool.name();
        let cwd = ctx.current_dir();
        let access = call.prepared.access(ctx);
        let request = PermissionRequest {
            tool: name,
            access: &access,
            read_only: call.prepared.is_read_only(),
            cwd: Some(&cwd),
        };
        let hook_asked = matches!(hook, Some(HookVerdict::Ask(_)));
        let decision = match hook {
            Some(HookVerdict::Allow) => {
                // Deny beats allow everywhere: a hook spares the question, never a deny rule.
                if let Decision::Deny(reason) = self.policy.decide(&request) {
                    return Permission::Refused(format!(
                        "Permission to use {name} was denied: {reason}"
                    ));
                }
                return Permission::Granted(Confinement::Approved);
            }
            Some(HookVerdict::Deny(reason)) => {
                return Permission::Refused(format!(
                    "A PreToolUse hook blocked this call: {reason}"
                ));
            }
            Some(HookVerdict::Ask(reason)) if reason.is_empty() => {
                Decision::Ask("A PreToolUse hook asked for confirmation.".into())
            }
            Some(HookVerdict::Ask(reason)) => Decision::Ask(reason),
            None => self.policy.decide(&request),
        };
        let reason = match decision {
            Decision::Allow => return Permission::Granted(self.policy.confinement(&request)),
            Decision::Deny(reason) => {
                return Permission::Refused(format!(
                    "Permission to use {name} was denied: {reason}"
                ));
            }
            Decision::Ask(reason) => reason,
        };
        let mut reason = reason;
        if !hook_asked
            && let Some(reviewer) = self.reviewer.get()
            && self.policy.reviewable(&request)
        {
            let review = tokio::select! {
                biased;
                _ = ctx.cancel.cancelled() => return Permission::Cancelled,
                review = reviewer.review(name, &call.input) => review,
            };
            let info = super::review::info(id, name, &review);
            reviewer.record(info.clone());
            let _ = self.events.send(Event::AutoReview(info));
            match review.verdict {
                Verdict::Allow => return Permission::Granted(Confinement::Reviewed),
                Verdict::Block(why) => {
                    return Permission::Refused(format!(
                        "Auto mode blocked this {name} call: {}. Choose another way to reach \
                         the goal, or ask the user to do this step.",
                        why.trim_end_matches('.')
                    ));
                }
                Verdict::AskUser(why) => reason = format!("{reason} ({why})"),
            }
        }
        let rule = self.policy.suggest_rule(&request);
        if let Some(answered) = self
            .permission_hooks(name, &call.input, &rule, &cwd, ctx)
            .await
        {
            return answered;
        }
        let question_reason = reason.clone();
        let question = AskRequest {
            tool: name.to_string(),
            tool_use_id: id.to_string(),
            input: call.input.clone(),
            summary: format!("{name}: {}", call.prepared.summary()),
            reason,
            suggested_rule: rule.clone(),
            preview: call.prepared.preview(ctx),
        };
        let answer = tokio::select! {
            biased;
            _ = ctx.cancel.cancelled() => return Permission::Cancelled,
            answer = async {
                let _turn = self.ask_turn.lock().await;
                self.asker.ask(question).await
            } => answer,
        };
        match answer {
            AskAnswer::AllowOnce => Permission::Granted(Confinement::Approved),
            AskAnswer::AllowChanged(input) => Permission::Changed(input),
            AskAnswer::AllowForSession(chosen) => {
                let rule = chosen.unwrap_or(rule);
                if !rule.trim().is_empty() {
                    self.policy.grant(&rule);
                }
                Permission::Granted(Confinement::Approved)
            }
            AskAnswer::AllowAlways | AskAnswer::AllowRule(_) => {
                let rule = match answer {
                    AskAnswer::AllowRule(chosen) => chosen,
                    _ => rule,
                };
                if !rule.trim().is_empty() {
                    self.policy.grant(&rule);
                    let path = settings::local_settings_path(&ctx.project_root);
                    if let Err(e) = settings::append_allow_rule(&path, &rule) {
                        tracing::warn!("the rule {rule} is granted for this session only: {e}");
                    }
                }
                Permission::Granted(Confinement::Approved)
            }
            AskAnswer::Deny(message) => {
                let mut text = format!(
                    "This {name} call needed the user's approval ({}) and was not approved.",
                    question_reason.trim_end_matches('.')
                );
                if let Some(message) = message.filter(|m| !m.trim().is_empty()) {
                    text.push_str(" The user said: ");
                    text.push_str(message.trim());
                }
                Permission::Refused(text)
            }
        }
    }

    /// Before the user is asked: a PermissionRequest hook may answer instead, and
    /// Notification hooks hear that ouro is waiting for the user.
    async fn permission_hooks(
        &self,
        name: &str,
        input: &Value,
        rule: &str,
        cwd: &std::path::Path,
        ctx: &ToolContext,
    ) -> Option<Permission> {
        if self.hooks.has(HookEvent::PermissionRequest) {
            let fields = json!({
                "tool_name": name,
                "tool_input": input,
                "permission_suggestions": [
                    {"type": "addRules", "rules": [{"toolName": name, "ruleContent": rule}],
                     "behavior": "allow", "destination": "localSettings"}
                ],
            });
            let asking = self.hooks.fire(
                HookEvent::PermissionRequest,
                name,
                fields,
                cwd,
                &ctx.project_root,
            );
            // Dropping the hook's future kills it, as Ctrl-C does a PreToolUse hook.
            let fired = tokio::select! {
                biased;
                () = ctx.cancel.cancelled() => return Some(Permission::Cancelled),
                fired = asking => fired,
            };
            match fired.permission {
                Some(PermissionAnswer::Allow) => {
                    return Some(Permission::Granted(Confinement::Approved));
                }
                Some(PermissionAnswer::AllowChanged(input)) => {
                    return Some(Permission::Changed(input));
                }
                Some(PermissionAnswer::Deny { message }) => {
                    return Some(Permission::Refused(format!(
                        "A PermissionRequest hook denied this call: {message}"
                    )));
                }
                None => {}
            }
        }
        if self.hooks.has(HookEvent::Notification) {
            let hooks = self.hooks.clone();
            let (cwd, root) = (cwd.to_path_buf(), ctx.project_root.clone());
            let fields = json!({
                "message": format!("ouro needs your permission to use {name}"),
                "notification_type": "permission_prompt",
            });
            tokio::spawn(async move {
                hooks
                    .fire(
                        HookEvent::Notification,
                        "permission_prompt",
                        fields,
                        &cwd,
                        &root,
                    )
                    .await;
            });
        }
        None
    }

    /// Phase 5. `None` means cancelled. A tool that finishes within the grace period after a
    /// cancel reports what it actually did, so the history never hides a side effect.
    async fn execute(
        &self,
        id: &str,
        prepared: Box<dyn PreparedCall>,
        ctx: &ToolContext,
    ) -> Option<ToolOutput> {
        let max_chars = prepared.max_result_chars();
        let progress = Progress::new(id, Some(self.events.clone()));
        let run = prepared.run(ctx, &progress);
        tokio::pin!(run);
        let result = tokio::select! {
            result = &mut run => result,
            _ = ctx.cancel.cancelled() => tokio::time::timeout(CANCEL_GRACE, &mut run)
                .await
                .unwrap_or(Err(ToolError::Cancelled)),
        };
        match result {
            Ok(mut output) => {
                output.content = elide_middle(&output.content, max_chars);
                Some(output)
            }
            Err(ToolError::Cancelled) => None,
            Err(e) => Some(ToolOutput::error(elide_middle(&e.to_string(), max_chars))),
        }
    }
}
