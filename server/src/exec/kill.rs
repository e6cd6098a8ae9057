//! Process-group ownership: start markers, checked group signals, orphan reaping.
//!
//! A [`ProcessRecord`] names a process group the Host created. Before any
//! signal, `owned` re-checks that the group is still the one recorded:
//!
//! - leader present: its start marker must equal the recorded one (a
//!   different marker means the PID was recycled; since Linux keeps a PID
//!   reserved while a process group of that id exists, the recorded group is
//!   then gone and nothing is signalled);
//! - leader gone (reaped): some process must still have the recorded PGID and
//!   a start time no earlier than the leader's marker.
//!
//! The check and the signal are two steps, so a group that dies and whose id
//! is recycled in between could in theory be hit; both steps are a few
//! microseconds apart and the id cannot be recycled while any member lives.

use std::path::Path;
use std::thread;
use std::time::{Duration, Instant};

use nix::errno::Errno;
use nix::sys::signal::{killpg, Signal};
use nix::unistd::{getpgrp, Pid};

/// How often group liveness is polled during the grace period.
const POLL: Duration = Duration::from_millis(20);
/// How long [`kill_group`] waits for members to vanish after `SIGKILL`.
const KILL_SETTLE: Duration = Duration::from_secs(1);

/// A Host-owned process group, as recorded at spawn (persist it to end the
/// group after a crash with [`reap_orphans`]).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ProcessRecord {
    /// Host-issued, unique per spawn (`proc_<32 hex>`); also names the artifacts.
    pub spawn_id: String,
    /// PID of the group leader (`/bin/sh`).
    pub pid: i32,
    /// Process group id; equal to `pid` for groups created by [`super::run`].
    pub pgid: i32,
    /// The leader's OS start marker ([`start_marker`]).
    pub start_marker: u64,
}

/// The OS start marker of `pid`: field 22 of `/proc/<pid>/stat` (start time in
/// clock ticks since boot). `None` if the process does not exist (reaped) or
/// `/proc` is unavailable. A zombie still has its marker.
pub fn start_marker(pid: i32) -> Option<u64> {
    read_stat(pid).map(|stat| stat.start)
}

/// This process: its pid and start marker.
pub fn this_process() -> Option<(i32, u64)> {
    let pid = i32::try_from(std::process::id()).ok()?;
    Some((pid, start_marker(pid)?))
}

/// This host's name (`/proc/sys/kernel/hostname`): records shared by
/// instances on several hosts (a shared home, the instances table) say
/// which host they are about.
pub fn host_name() -> Option<String> {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .ok()
        .map(|h| h.trim().to_owned())
        .filter(|h| !h.is_empty())
}

/// The current boot's id (`/proc/sys/kernel/random/boot_id`). Start markers
/// are only comparable within one boot: store this next to persisted records
/// and discard records from another boot before [`reap_orphans`].
pub fn boot_id() -> Option<String> {
    std::fs::read_to_string("/proc/sys/kernel/random/boot_id")
        .ok()
        .map(|id| id.trim().to_owned())
        .filter(|id| !id.is_empty())
}

/// Ends the recorded process group: `SIGTERM`, up to `grace` for its members
/// to exit, then `SIGKILL` (each signal only after the ownership re-check of the
/// start marker). Blocks for at most `grace` plus about a second.
///
/// Returns `true` if the group was signalled, `false` if nothing matched the
/// record (already gone, or the PID/PGID now belongs to another process).
pub fn kill_group(record: &ProcessRecord, grace: Duration) -> bool {
    if !signal_owned(record, Signal::SIGTERM) {
        return false;
    }
    let deadline = Instant::now() + grace;
    while group_alive(record) {
        let now = Instant::now();
        if now >= deadline {
            tracing::debug!(
                spawn_id = %record.spawn_id,
                pgid = record.pgid,
                "grace over, sending SIGKILL"
            );
            signal_owned(record, Signal::SIGKILL);
            settle(std::slice::from_ref(record));
            break;
        }
        thread::sleep(POLL.min(deadline - now));
    }
    true
}

/// Crash recovery: ends every recorded group that is still alive and still
/// matches its start marker (`SIGTERM` to all, one shared `grace`, then
/// `SIGKILL` to the survivors). Records that match nothing are left alone.
/// Returns how many groups were signalled. Blocks for at most `grace` plus
/// about a second.
pub fn reap_orphans(records: &[ProcessRecord], grace: Duration) -> usize {
    let signalled: Vec<&ProcessRecord> = records
        .iter()
        .filter(|record| signal_owned(record, Signal::SIGTERM))
        .collect();
    for record in &signalled {
        tracing::info!(
            spawn_id = %record.spawn_id,
            pgid = record.pgid,
            "ending orphaned process group"
        );
    }
    let deadline = Instant::now() + grace;
    loop {
        let alive: Vec<ProcessRecord> = signalled
            .iter()
            .filter(|record| group_alive(record))
            .map(|record| (*record).clone())
            .collect();
        if alive.is_empty() {
            break;
        }
        let now = Instant::now();
        if now >= deadline {
            for record in &alive {
                signal_owned(record, Signal::SIGKILL);
            }
            settle(&alive);
            break;
        }
        thread::sleep(POLL.min(deadline - now));
    }
    signalled.len()
}

/// Whether `record` still names a live group the Host created (see the
/// module docs). Never true for PGID 0/1 or the server's own group.
pub(crate) fn owned(record: &ProcessRecord) -> bool {
    if record.pid <= 1 || record.pgid <= 1 || record.pgid == getpgrp().as_raw() {
        return false;
    }
    match read_stat(record.pid) {
        Some(leader) if leader.start == record.start_marker => {
            leader.pgid == record.pgid || any_member(record, true)
        }
        // The leader's PID now names another process: its old group is gone.
        Some(_) if record.pid == record.pgid => false,
        _ => any_member(record, true),
    }
}

/// Whether any non-zombie process is still in the recorded group.
pub(crate) fn group_alive(record: &ProcessRecord) -> bool {
    record.pgid > 1 && any_member(record, false)
}

/// Sends `signal` to the group after the ownership re-check (and only if a
/// member is still running: a group of zombies is left alone).
fn signal_owned(record: &ProcessRecord, signal: Signal) -> bool {
    if !owned(record) || !group_alive(record) {
        return false;
    }
    match killpg(Pid::from_raw(record.pgid), signal) {
        Ok(()) => true,
        Err(Errno::ESRCH) => false,
        Err(err) => {
            tracing::warn!(
                spawn_id = %record.spawn_id,
                pgid = record.pgid,
                %err,
                "signalling process group failed"
            );
            false
        }
    }
}

/// Waits (bounded) for `SIGKILL`ed groups to disappear.
fn settle(records: &[ProcessRecord]) {
    let deadline = Instant::now() + KILL_SETTLE;
    while Instant::now() < deadline && records.iter().any(group_alive) {
        thread::sleep(Duration::from_millis(5));
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Stat {
    pub(crate) state: char,
    pub(crate) pgid: i32,
    pub(crate) start: u64,
}

impl Stat {
    fn is_dead(&self) -> bool {
        matches!(self.state, 'Z' | 'X' | 'x')
    }
}

pub(crate) fn read_stat(pid: i32) -> Option<Stat> {
    if pid <= 0 {
        return None;
    }
    let text = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    parse_stat(&text)
}

/// Parses `/proc/<pid>/stat`. The command name (field 2) may contain spaces
/// and parentheses, so fields are read after the last `)`.
pub(crate) fn parse_stat(text: &str) -> Option<Stat> {
    let rest = text.get(text.rfind(')')? + 1..)?;
    let mut fields = rest.split_ascii_whitespace();
    let state = fields.next()?.chars().next()?; // field 3
    let _ppid = fields.next()?; // field 4
    let pgid = fields.next()?.parse().ok()?; // field 5
    let start = fields.nth(22 - 6)?.parse().ok()?; // field 22
    Some(Stat { state, pgid, start })
}

/// Whether some process has the recorded PGID and started no earlier than
/// the leader (`include_dead`: also count zombies).
fn any_member(record: &ProcessRecord, include_dead: bool) -> bool {
    let Ok(entries) = std::fs::read_dir(Path::new("/proc")) else {
        return false;
    };
    entries.flatten().any(|entry| {
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|name| name.parse::<i32>().ok())
        else {
            return false;
        };
        read_stat(pid).is_some_and(|stat| {
            stat.pgid == record.pgid
                && stat.start >= record.start_marker
                && (include_dead || !stat.is_dead())
        })
    })
}

/// PIDs of the non-zombie processes in group `pgid` (test helper).
#[cfg(test)]
pub(crate) fn live_members(pgid: i32) -> Vec<i32> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .flatten()
        .filter_map(|entry| entry.file_name().to_str()?.parse::<i32>().ok())
        .filter(|pid| read_stat(*pid).is_some_and(|stat| stat.pgid == pgid && !stat.is_dead()))
        .collect()
}

#[cfg(test)]
#[path = "kill_tests.rs"]
mod tests;
