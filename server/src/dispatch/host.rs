//! The host's services as the tools see them ([`crate::tools::host`]):
//! [`HostServices`], built at start-up, with one impl per concern, each
//! delegating to the service that owns it: the task queue, the event log
//! (live output), history search, clarifications, core changes and the
//! authored runners.

use std::sync::Arc;

use futures_util::future::BoxFuture;

use super::clarify::Clarifications;
use crate::auth::PrincipalScope;
use crate::core::changes::CoreChanges;
use crate::core::edit::{Authority, CoreChange, CoreEditError, Edit};
use crate::core::path::{CoreFilePath, RevisionSpec};
use crate::core::rollback::CoreRollback;
use crate::core::runs::{RunDone, RunOp};
use crate::events::EventLog;
use crate::redact::lines::LineRedactor;
use crate::redact::redactor::{SecretRedactor, View};
use crate::tools::context::CallContext;
use crate::tools::contract::ToolEnv;
use crate::tools::host::{
    Answer, ClarifyHost, CoreHost, HistoryHost, OutputHost, RunnerHost, TaskHost, TaskJob,
};
use crate::wire::events::{self, EventPayload};

/// The services a tool may call, held together; the dispatcher hands them
/// to every tool as its [`Host`](crate::tools::host::Host). Each concern's
/// impl delegates to the one service that owns it.
pub struct HostServices {
    pub tasks: crate::tasks::Tasks,
    /// The event log, for live output.
    pub events: EventLog,
    /// History search runs its store queries here.
    pub store: crate::store::Store,
    pub clarifications: Clarifications,
    pub core_changes: CoreChanges,
    pub runners: Arc<crate::authored::Runners>,
}

impl TaskHost for HostServices {
    fn start_task<'a>(
        &'a self,
        call: &'a ToolEnv<'a>,
        kind: &'static str,
        summary: String,
        options: crate::tasks::StartOptions,
        job: TaskJob,
    ) -> BoxFuture<'a, Result<String, crate::tasks::StartError>> {
        let mut known = SecretRedactor::new();
        known.discover_json(call.args);
        Box::pin(self.tasks.start(
            &call.ctx.scope,
            call.ctx.session_id,
            kind,
            summary,
            known,
            options,
            job,
        ))
    }

    fn children(&self) -> Option<Arc<dyn crate::tasks::children::ChildRunner>> {
        self.tasks.children()
    }

    fn schedules(&self) -> Option<crate::tasks::schedules::Schedules> {
        Some(self.tasks.schedules().clone())
    }

    fn background_over_cap(&self, scope: &PrincipalScope) -> Option<String> {
        self.tasks.over_cap(scope)
    }

    fn session_tasks<'a>(
        &'a self,
        ctx: &'a CallContext,
    ) -> BoxFuture<'a, crate::error::Result<Vec<crate::store::TaskRow>>> {
        Box::pin(self.tasks.list(&ctx.scope, Some(ctx.session_id)))
    }

    fn task<'a>(
        &'a self,
        scope: &'a PrincipalScope,
        id: &'a str,
    ) -> BoxFuture<'a, crate::error::Result<crate::store::TaskRow>> {
        Box::pin(self.tasks.get(scope, id))
    }

    fn cancel_task<'a>(
        &'a self,
        scope: &'a PrincipalScope,
        id: &'a str,
    ) -> BoxFuture<'a, crate::error::Result<crate::store::TaskRow>> {
        Box::pin(self.tasks.cancel(scope, id))
    }

    fn wait_task<'a>(
        &'a self,
        scope: &'a PrincipalScope,
        id: &'a str,
        timeout: std::time::Duration,
    ) -> BoxFuture<'a, crate::error::Result<(crate::store::TaskRow, bool)>> {
        Box::pin(self.tasks.wait(scope, id, timeout))
    }
}

impl OutputHost for HostServices {
    /// Chunks must already be free of bound secrets; they are redacted again
    /// here, line by line (a token split across reads is seen whole),
    /// knowing the secrets of the call's arguments.
    fn output_sink(&self, call: &ToolEnv<'_>) -> tokio::sync::mpsc::Sender<(&'static str, String)> {
        let (tx, mut rx) = tokio::sync::mpsc::channel::<(&'static str, String)>(OUTPUT_QUEUE);
        let mut known = SecretRedactor::new();
        known.discover_json(call.args);
        let live = LiveOutput {
            events: self.events.clone(),
            session_id: call.ctx.session_id,
            turn_id: call.ctx.turn_id,
            call_id: call.call_id.to_owned(),
            sent: 0,
        };
        tokio::spawn(async move {
            let mut live = live;
            let mut lines = LineRedactor::new(known, View::Event);
            while let Some((stream, text)) = rx.recv().await {
                // Past the preview nothing more is shown: drain without redacting.
                if live.full() {
                    continue;
                }
                let text = lines.push(stream, &text);
                if !live.send(stream, &text).await {
                    return;
                }
            }
            for stream in lines.open_streams() {
                if live.full() {
                    break;
                }
                let text = lines.finish(stream);
                if !live.send(stream, &text).await {
                    return;
                }
            }
        });
        tx
    }
}

impl HistoryHost for HostServices {
    fn search_history<'a>(
        &'a self,
        reach: &'a crate::history::Reach,
        request: &'a crate::history::Request,
    ) -> BoxFuture<'a, Result<crate::history::Page, crate::history::SearchError>> {
        Box::pin(crate::history::search(&self.store, reach, request, None))
    }
}

impl ClarifyHost for HostServices {
    fn clarify<'a>(
        &'a self,
        ctx: &'a CallContext,
        question: &'a str,
        choices: &'a [String],
    ) -> BoxFuture<'a, crate::error::Result<Answer>> {
        Box::pin(self.clarifications.ask(
            &ctx.scope,
            ctx.session_id,
            ctx.turn_id,
            question,
            choices,
            &ctx.cancel,
        ))
    }
}

impl CoreHost for HostServices {
    fn change_core<'a>(
        &'a self,
        ctx: &'a CallContext,
        edits: Vec<(CoreFilePath, Edit)>,
        message: String,
    ) -> BoxFuture<'a, Result<CoreChange, CoreEditError>> {
        Box::pin(self.core_changes.change(
            &ctx.scope,
            &ctx.core.id,
            edits,
            message,
            Authority::Approved,
        ))
    }

    fn rollback_core<'a>(
        &'a self,
        ctx: &'a CallContext,
        target: RevisionSpec,
        reason: Option<String>,
    ) -> BoxFuture<'a, Result<CoreRollback, CoreEditError>> {
        Box::pin(async move {
            self.core_changes
                .rollback(
                    &ctx.scope,
                    &ctx.core.id,
                    &target,
                    reason.as_deref(),
                    Authority::Approved,
                )
                .await
        })
    }

    /// A session acts on the runs of its own core only.
    fn evolve_run<'a>(
        &'a self,
        ctx: &'a CallContext,
        op: RunOp,
    ) -> BoxFuture<'a, Result<RunDone, CoreEditError>> {
        Box::pin(self.core_changes.evolve_run(&ctx.scope, &ctx.core.id, op))
    }
}

impl RunnerHost for HostServices {
    fn pool(&self) -> &crate::authored::Runners {
        &self.runners
    }
}

/// The live view of one call's output: a preview of at most
/// [`LIVE_OUTPUT_CHARS`] redacted characters; past it the rest is only in the
/// tails and the artifact, so a flood cannot fill the event log.
struct LiveOutput {
    events: EventLog,
    session_id: crate::ids::SessionId,
    turn_id: crate::ids::TurnId,
    call_id: String,
    sent: usize,
}

impl LiveOutput {
    fn full(&self) -> bool {
        self.sent >= LIVE_OUTPUT_CHARS
    }

    /// Append one `tool.output` event; false when the log refuses it.
    async fn send(&mut self, stream: &'static str, text: &str) -> bool {
        if text.is_empty() || self.full() {
            return true;
        }
        let room = LIVE_OUTPUT_CHARS - self.sent;
        let (text, cut) = match text.char_indices().nth(room) {
            Some((i, _)) => (&text[..i], true),
            None => (text, false),
        };
        self.sent += text.chars().count();
        let truncated = cut || self.full();
        if truncated {
            self.sent = LIVE_OUTPUT_CHARS;
        }
        let payload = EventPayload::ToolOutput(events::ToolOutput {
            call_id: self.call_id.clone(),
            stream: stream.to_owned(),
            text: text.to_owned(),
            truncated,
        });
        self.events
            .append(self.session_id, Some(self.turn_id), payload)
            .await
            .is_ok()
    }
}

/// Characters of live output streamed per call as `tool.output` events.
const LIVE_OUTPUT_CHARS: usize = 64 * 1024;

/// Live output chunks queued per call; beyond this they are dropped from the
/// live view (the artifact keeps everything).
const OUTPUT_QUEUE: usize = 256;
