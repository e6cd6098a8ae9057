//! Process runtime for the `terminal` tool: one Host-owned lifecycle for every
//! command the Host runs on a tenant's behalf.
//!
//! # Environment ([`mod@env`])
//!
//! A child never inherits the server's environment. [`child_env`] builds it
//! from an allowlist (`PATH`, `LANG`, `LANGUAGE`, the `LC_*` locale
//! categories, `TERM`, `COLORTERM`, `TZ`, `TMPDIR`, `TMP`, `TEMP`), points
//! `HOME` at a dedicated per-tenant runtime directory and then applies the
//! explicit (approved) overlay. Provider, channel, MCP, cloud and desktop
//! credentials in the server environment therefore never reach a child.
//! [`run`] clears the environment and passes exactly [`ExecSpec::env`].
//!
//! # Process ownership ([`spawn`], [`kill`])
//!
//! Every command runs as `/bin/sh -c COMMAND` in a new session, so it leads
//! its own process group (PGID = PID). The Host records a [`ProcessRecord`]:
//! PID, PGID, a Host-issued `spawn_id` and the OS start marker (field 22 of
//! `/proc/<pid>/stat`, see [`start_marker`]). [`run`] hands the record to its
//! `on_spawn` callback before any output is read so the caller can persist it.
//!
//! Timeout, cancellation (turn, task or server shutdown, all expressed through
//! the [`CancellationToken`](tokio_util::sync::CancellationToken) given to
//! [`run`]) end the whole group: `SIGTERM`, a grace period
//! ([`ExecSpec::kill_grace`]), then `SIGKILL`. Termination is single-flight:
//! the first trigger wins and later ones are ignored. Dropping the [`run`]
//! future before it finishes also ends the group.
//!
//! Before every signal, [`kill_group`] re-checks the start marker: the
//! leader's marker must still match, or (once the leader has been reaped) some
//! process must still be in the group and have started no earlier than the
//! leader. A recycled PID is never signalled. After a crash, [`reap_orphans`]
//! ends the recorded groups that are still alive under the same rule.
//!
//! # Output ([`drain`])
//!
//! Stdout and stderr are drained continuously, in fixed-size reads. Each
//! stream keeps a [`TAIL_CHARS`]-character tail plus totals and a truncation
//! flag ([`StreamSummary`]); nothing is buffered whole. Live chunks go to the
//! `on_chunk` callback. The full stream is written incrementally to a private
//! artifact (`<artifact_dir>/<spawn_id>.stdout.log` / `.stderr.log`, mode
//! 0600, directory created 0700). Exact bound secret values are replaced by
//! `<redacted:TARGET>` before text reaches the tail, a chunk or an artifact,
//! also when a value is split across reads ([`scrub`]). If an artifact cannot
//! be opened or written the pipes keep draining, and
//! [`ExecResult::artifact_error`] is set: the caller must fail the operation.
//!
//! # Quotas ([`quota`])
//!
//! Artifacts take bytes from the command's [`OutputBudget`]
//! ([`ExecSpec::output_budget`]): a per-command cap and the tenant's total.
//! When a write would pass either, the artifact keeps what fits and is
//! closed, the pipes keep draining (tails and totals stay exact), the group
//! is ended like at a timeout and the run ends with
//! [`ExitReason::OutputQuota`] and [`ExecResult::quota_exceeded`] naming the
//! limit.
//!
//! Redaction covers exact values only; transformed or encoded secrets are not
//! caught. A descendant that creates its own session leaves the owned group
//! (the drain stops waiting for such a process shortly after the group is
//! gone); its confinement and limits stay with it.
//!
//! Orphans inside a command's tree (a fork bomb's children, a job a shell
//! left behind) are reparented to the server, a child subreaper, and reaped
//! the moment they exit ([`reaper`]), so they never hold a tenant's process
//! limit as zombies.
//!
//! # Confinement ([`sandbox`])
//!
//! Every child enters the walls of [`sandbox::Confinement`] between fork and
//! exec: Landlock (its workspace, HOME and temp read-write, system folders
//! read-only, nothing of the server), a per-tenant uid on a root server, and
//! resource limits.

pub mod drain;
pub mod env;
pub mod kill;
pub mod quota;
pub mod reaper;
pub mod sandbox;
pub mod scrub;
pub mod spawn;

mod registry;
pub use drain::{StreamKind, StreamSummary, TAIL_CHARS};
pub use env::{child_env, confine_env, ensure_runtime_home, is_reserved_env_target};
pub use kill::{boot_id, kill_group, reap_orphans, start_marker, ProcessRecord};
pub use quota::{OutputBudget, QuotaLimit, StorageQuota};
pub use registry::ProcessRegistry;
pub use spawn::{run, ExecError, ExecResult, ExecSpec, ExitReason, DEFAULT_KILL_GRACE};
