//! What a call may rely on, built by the host for one turn and handed to
//! every tool through [`ToolEnv::ctx`](super::contract::ToolEnv): the
//! principal's scope, the session and turn, the workspace, the core as the
//! turn loaded it, and the turn's cancellation. Never rebuilt from a
//! request's fields.

use std::path::PathBuf;
use std::sync::Arc;

use tokio_util::sync::CancellationToken;

use crate::auth::PrincipalScope;
use crate::core::skill_doc::{CoreRef, SkillDoc};
use crate::ids::{SessionId, TurnId};
use crate::store::Delegation;

/// Everything a call may rely on, built by the host for one turn.
#[derive(Clone)]
pub struct CallContext {
    pub scope: PrincipalScope,
    pub session_id: SessionId,
    pub turn_id: TurnId,
    /// The session's workspace folder (canonical).
    pub workspace: PathBuf,
    /// Private per-session runtime state (todo list, …).
    pub state_dir: PathBuf,
    /// Identity of the core's effective configuration; approvals cached for
    /// the session die when it changes.
    pub core_fingerprint: String,
    /// The core's skills as the turn's revision holds them (read when the
    /// revision was loaded, so a change shows from the next turn only).
    pub skills: Arc<Vec<SkillDoc>>,
    /// The session's core, as the turn loaded it.
    pub core: Arc<CoreRef>,
    pub cancel: CancellationToken,
    /// A chat channel's turn: its principal reads only this session's
    /// history ([`crate::history::Reach::bound`]).
    pub bound_session: bool,
    /// The chat platform of the turn (`slack`, `telegram`, …); empty when
    /// it came from the API. Usage is attributed by it.
    pub channel: String,
    /// Where this session sits in a delegation chain (`delegate_task`).
    pub delegation: Delegation,
}
