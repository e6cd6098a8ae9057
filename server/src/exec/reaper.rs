//! Reaping orphans of tenants' commands.
//!
//! The server makes itself a child subreaper, so a process whose parent
//! died inside a command's tree (a fork bomb's children, `cmd &` left behind
//! by a shell that exited) becomes the server's child instead of init's. When
//! such an orphan exits, the server reaps it at once: a zombie left for a
//! slow init (or for a server running as PID 1 in a container) would keep
//! counting against its tenant's process limit and block that tenant's next
//! commands.
//!
//! Only orphans are reaped: a zombie child whose process group is neither
//! its own (command leaders are group leaders; the exec runtime waits for
//! them) nor the server's (children the server spawned itself, such as `git`,
//! which their callers wait for).

use std::path::Path;

use tokio::signal::unix::{signal, SignalKind};
use tokio_util::sync::CancellationToken;

/// Becomes a subreaper and reaps orphans on every `SIGCHLD` until `stop`.
pub fn start(stop: CancellationToken) {
    // SAFETY: plain prctl(2) on this process.
    if unsafe { libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) } != 0 {
        tracing::warn!(
            error = %std::io::Error::last_os_error(),
            "cannot become a child subreaper; orphans of commands are left to init"
        );
    }
    let mut children = match signal(SignalKind::child()) {
        Ok(s) => s,
        Err(e) => {
            tracing::warn!(error = %e, "cannot watch SIGCHLD; orphans are not reaped");
            return;
        }
    };
    tokio::spawn(async move {
        loop {
            tokio::select! {
                got = children.recv() => if got.is_none() { return },
                () = stop.cancelled() => return,
            }
            let reaped = tokio::task::spawn_blocking(reap_orphans).await.unwrap_or(0);
            if reaped > 0 {
                tracing::debug!(reaped, "reaped orphaned command processes");
            }
        }
    });
}

/// The server's children as `(pid, state, process group)`, read from
/// `/proc/self/task/*/children`.
fn children() -> Vec<(i32, char, i32)> {
    let Ok(tasks) = std::fs::read_dir("/proc/self/task") else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for task in tasks.flatten() {
        let Ok(list) = std::fs::read_to_string(task.path().join("children")) else {
            continue;
        };
        for pid in list
            .split_whitespace()
            .filter_map(|p| p.parse::<i32>().ok())
        {
            if let Some((state, group)) = state_and_group(pid) {
                out.push((pid, state, group));
            }
        }
    }
    out
}

/// Reaps every zombie child that is an orphan of a command's tree.
pub fn reap_orphans() -> usize {
    // SAFETY: getpgrp(2)/getpid(2) cannot fail.
    let (own_group, own_pid) = unsafe { (libc::getpgrp(), libc::getpid()) };
    let mut reaped = 0;
    for (pid, state, group) in children() {
        if state == 'Z' && group != pid && group != own_group && pid != own_pid {
            let mut status = 0;
            // SAFETY: waitpid(2) on one specific zombie child, non-blocking.
            if unsafe { libc::waitpid(pid, &mut status, libc::WNOHANG) } == pid {
                reaped += 1;
            }
        }
    }
    reaped
}

/// Ends every orphan still alive among the server's children (processes of
/// tenants' commands that left their command's group, e.g. with `setsid`,
/// and outlived it) together with their groups: called at shutdown, after
/// turns and tasks have ended their own groups, so nothing a tenant started
/// outlives the server. Returns how many were signalled.
pub fn end_orphans() -> usize {
    // SAFETY: getpgrp(2)/getpid(2) cannot fail.
    let (own_group, own_pid) = unsafe { (libc::getpgrp(), libc::getpid()) };
    let mut ended = 0;
    for (pid, state, group) in children() {
        // The server's own helpers (same group) are waited for by their callers.
        if group == own_group || pid == own_pid || state == 'Z' {
            continue;
        }
        // SAFETY: signals to a child of ours and to its own group.
        unsafe {
            libc::kill(-group, libc::SIGKILL);
            libc::kill(pid, libc::SIGKILL);
        }
        ended += 1;
    }
    ended
}

/// Fields 3 (state) and 5 (process group) of `/proc/<pid>/stat`.
fn state_and_group(pid: i32) -> Option<(char, i32)> {
    let stat =
        std::fs::read_to_string(Path::new("/proc").join(pid.to_string()).join("stat")).ok()?;
    parse_state_and_group(&stat)
}

/// The command name (field 2) may hold spaces and parentheses: split after
/// its last `)`.
fn parse_state_and_group(stat: &str) -> Option<(char, i32)> {
    let rest = &stat[stat.rfind(')')? + 1..];
    let mut fields = rest.split_whitespace();
    let state = fields.next()?.chars().next()?;
    let _ppid = fields.next()?;
    let group = fields.next()?.parse().ok()?;
    Some((state, group))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stat_lines_parse_even_with_odd_command_names() {
        let cases = [
            ("123 (sh) Z 1 456 456 0 -1", Some(('Z', 456))),
            ("7 (python3) S 1 7 7 0", Some(('S', 7))),
            ("9 (a) b (c)) Z 2 33 33", Some(('Z', 33))),
            ("10 (spaces in name) R 1 10 10", Some(('R', 10))),
            ("11 (x) Z 1", None),
            ("garbage", None),
            ("", None),
        ];
        for (line, want) in cases {
            assert_eq!(parse_state_and_group(line), want, "{line}");
        }
    }

    #[test]
    fn an_orphan_in_a_command_group_is_reaped_and_a_leader_is_not() {
        // SAFETY: prctl on the test process; harmless for other tests, which
        // wait for their own children.
        unsafe { libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) };
        // A leader (own group) whose child outlives it: the child becomes ours.
        let mut leader = std::process::Command::new("/bin/sh");
        leader.args(["-c", "sleep 0.2 & exit 0"]);
        // SAFETY: setsid(2) in the child before exec.
        unsafe {
            use std::os::unix::process::CommandExt;
            leader.pre_exec(|| {
                libc::setsid();
                Ok(())
            });
        }
        let mut child = leader.spawn().unwrap();
        let leader_pid = child.id() as i32;
        assert!(child.wait().unwrap().success());
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
        let mut reaped = 0;
        while reaped == 0 && std::time::Instant::now() < deadline {
            std::thread::sleep(std::time::Duration::from_millis(50));
            reaped += reap_orphans();
        }
        assert!(reaped >= 1, "the orphaned sleep is reaped");
        assert!(
            state_and_group(leader_pid).is_none(),
            "the leader was waited for"
        );
    }
}
