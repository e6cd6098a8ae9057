#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tempfile::TempDir;
use tokio_util::sync::CancellationToken;

use super::*;
use crate::exec::kill::{live_members, read_stat};
use crate::exec::{child_env, TAIL_CHARS};

const GRACE: Duration = Duration::from_millis(300);

fn spec(dir: &TempDir, command: &str, timeout: Duration) -> ExecSpec {
    let env = child_env(std::env::vars(), &dir.path().join("home"), &[]);
    let mut spec = ExecSpec::new(
        command,
        dir.path(),
        env,
        timeout,
        dir.path().join("artifacts"),
    );
    spec.kill_grace = GRACE;
    spec
}

async fn run_plain(spec: ExecSpec) -> ExecResult {
    run(spec, CancellationToken::new(), |_| {}, |_, _| {})
        .await
        .unwrap()
}

/// Runs `spec` collecting every chunk per stream.
async fn run_collect(spec: ExecSpec, cancel: CancellationToken) -> (ExecResult, String, String) {
    let mut out = String::new();
    let mut err = String::new();
    let result = run(
        spec,
        cancel,
        |_| {},
        |kind, text| match kind {
            StreamKind::Stdout => out.push_str(text),
            StreamKind::Stderr => err.push_str(text),
        },
    )
    .await
    .unwrap();
    (result, out, err)
}

fn read(path: &Option<PathBuf>) -> String {
    std::fs::read_to_string(path.as_ref().unwrap()).unwrap()
}

fn mode(path: &Path) -> u32 {
    std::fs::metadata(path).unwrap().permissions().mode() & 0o7777
}

fn vm_rss_kib() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    status
        .lines()
        .find_map(|line| line.strip_prefix("VmRSS:"))
        .and_then(|rest| rest.split_whitespace().next())
        .unwrap()
        .parse()
        .unwrap()
}

/// A script whose descendants ignore TERM, sleep, and hold the pipes.
const STUBBORN: &str = "trap '' TERM; \
    (trap '' TERM; sleep 30) & \
    (trap '' TERM; sleep 30 & sleep 30) & \
    echo started; sleep 30";

#[test]
fn run_future_is_send() {
    fn assert_send<T: Send>(_: &T) {}
    let dir = tempfile::tempdir().unwrap();
    let future = run(
        spec(&dir, "true", Duration::from_secs(1)),
        CancellationToken::new(),
        |_| {},
        |_, _| {},
    );
    assert_send(&future);
}

#[tokio::test]
async fn exit_codes_and_signals() {
    let dir = tempfile::tempdir().unwrap();
    let ok = run_plain(spec(&dir, "true", Duration::from_secs(10))).await;
    assert_eq!((ok.exit_code, ok.reason), (Some(0), ExitReason::Exited));
    let three = run_plain(spec(&dir, "exit 3", Duration::from_secs(10))).await;
    assert_eq!(
        (three.exit_code, three.reason),
        (Some(3), ExitReason::Exited)
    );
    let killed = run_plain(spec(&dir, "kill -TERM $$", Duration::from_secs(10))).await;
    assert_eq!(
        (killed.exit_code, killed.reason),
        (None, ExitReason::Signaled(15))
    );
    let missing = run_plain(spec(&dir, "no-such-command-xyz", Duration::from_secs(10))).await;
    assert_eq!(missing.exit_code, Some(127));
    assert!(missing.stderr.tail.contains("no-such-command-xyz"));
}

#[tokio::test]
async fn stdout_and_stderr_are_separate_and_mirrored_to_artifacts() {
    let dir = tempfile::tempdir().unwrap();
    let (result, out, err) = run_collect(
        spec(
            &dir,
            "echo out1; echo err1 >&2; printf 'out2\\n'; echo err2 >&2",
            Duration::from_secs(10),
        ),
        CancellationToken::new(),
    )
    .await;
    assert_eq!(result.stdout.tail, "out1\nout2\n");
    assert_eq!(result.stderr.tail, "err1\nerr2\n");
    assert_eq!(out, result.stdout.tail);
    assert_eq!(err, result.stderr.tail);
    assert_eq!(
        (result.stdout.total_bytes, result.stdout.total_chars),
        (10, 10)
    );
    assert!(!result.stdout.truncated && !result.stderr.truncated);
    assert_eq!(read(&result.stdout_artifact), "out1\nout2\n");
    assert_eq!(read(&result.stderr_artifact), "err1\nerr2\n");
    assert!(result.artifact_error.is_none());
    let out_path = result.stdout_artifact.as_ref().unwrap();
    let err_path = result.stderr_artifact.as_ref().unwrap();
    assert_eq!(mode(out_path), 0o600);
    assert_eq!(mode(err_path), 0o600);
    assert_eq!(mode(&dir.path().join("artifacts")), 0o700);
    let id = &result.record.spawn_id;
    assert!(id.starts_with("proc_") && id.len() == 37, "{id}");
    assert_eq!(
        out_path.file_name().unwrap().to_str().unwrap(),
        format!("{id}.stdout.log")
    );
    assert_eq!(
        err_path.file_name().unwrap().to_str().unwrap(),
        format!("{id}.stderr.log")
    );
}

#[tokio::test]
async fn each_command_leads_its_own_session_and_is_recorded_first() {
    let dir = tempfile::tempdir().unwrap();
    type Seen = Option<(ProcessRecord, Option<u64>)>;
    let seen: Arc<Mutex<Seen>> = Arc::default();
    let seen2 = Arc::clone(&seen);
    let result = run(
        spec(
            &dir,
            "read -r line < /proc/$$/stat; echo \"$line\"",
            Duration::from_secs(10),
        ),
        CancellationToken::new(),
        move |record| {
            *seen2.lock().unwrap() = Some((record.clone(), start_marker(record.pid)));
        },
        |_, _| {},
    )
    .await
    .unwrap();
    let (record, marker_at_spawn) = seen.lock().unwrap().clone().unwrap();
    assert_eq!(record, result.record);
    assert_eq!(record.pgid, record.pid);
    assert_eq!(marker_at_spawn, Some(record.start_marker));
    // The shell's own stat line: pid, pgid (field 5) and session (field 6).
    let line = result.stdout.tail.trim();
    let after = &line[line.rfind(')').unwrap() + 2..];
    let fields: Vec<&str> = after.split_whitespace().collect();
    assert_eq!(
        line.split_whitespace().next().unwrap(),
        record.pid.to_string()
    );
    assert_eq!(fields[2], record.pid.to_string(), "pgid");
    assert_eq!(fields[3], record.pid.to_string(), "session id");
    assert_eq!(fields[19], record.start_marker.to_string(), "start marker");
}

#[tokio::test]
async fn a_50_mb_output_keeps_an_exact_tail_in_flat_memory() {
    const LAST: u64 = 6_500_000;
    let dir = tempfile::tempdir().unwrap();
    let mut total: u64 = 0;
    for n in 1..=LAST {
        total += n.to_string().len() as u64 + 1;
    }
    assert!(total > 50_000_000);
    let mut lines = Vec::new();
    let mut chars = 0;
    let mut n = LAST;
    while chars < TAIL_CHARS {
        let line = format!("{n}\n");
        chars += line.len();
        lines.push(line);
        n -= 1;
    }
    lines.reverse();
    let joined = lines.concat();
    let expected = &joined[joined.len() - TAIL_CHARS..];

    let before = vm_rss_kib();
    let mut chunk_bytes: u64 = 0;
    let mut chunk_count: u64 = 0;
    let result = run(
        spec(&dir, &format!("seq 1 {LAST}"), Duration::from_secs(120)),
        CancellationToken::new(),
        |_| {},
        |kind, text| {
            assert_eq!(kind, StreamKind::Stdout);
            chunk_bytes += text.len() as u64;
            chunk_count += 1;
        },
    )
    .await
    .unwrap();
    let after = vm_rss_kib();

    assert_eq!(result.exit_code, Some(0));
    assert_eq!(result.stdout.tail.chars().count(), TAIL_CHARS);
    assert_eq!(result.stdout.tail, expected);
    assert_eq!(result.stdout.total_bytes, total);
    assert_eq!(result.stdout.total_chars, total);
    assert!(result.stdout.truncated);
    assert_eq!(chunk_bytes, total);
    assert!(chunk_count > 1);
    let artifact = result.stdout_artifact.as_ref().unwrap();
    assert_eq!(std::fs::metadata(artifact).unwrap().len(), total);
    let growth = after.saturating_sub(before);
    assert!(
        growth < 20 * 1024,
        "RSS grew by {growth} KiB (before {before}, after {after})"
    );
}

#[tokio::test]
async fn timeout_ends_the_whole_tree_even_when_it_ignores_term() {
    let dir = tempfile::tempdir().unwrap();
    let started = Instant::now();
    let result = run_plain(spec(&dir, STUBBORN, Duration::from_millis(500))).await;
    assert_eq!(result.reason, ExitReason::TimedOut);
    assert_eq!(result.exit_code, None);
    assert_eq!(result.stdout.tail, "started\n");
    assert!(
        started.elapsed() < Duration::from_secs(8),
        "{:?}",
        started.elapsed()
    );
    assert!(result.elapsed >= Duration::from_millis(500) + GRACE);
    assert_eq!(live_members(result.record.pgid), Vec::<i32>::new());
}

#[tokio::test]
async fn cancellation_ends_the_whole_tree() {
    let dir = tempfile::tempdir().unwrap();
    let cancel = CancellationToken::new();
    let trigger = cancel.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(400)).await;
        trigger.cancel();
        // A second trigger is a no-op (single flight).
        trigger.cancel();
    });
    let started = Instant::now();
    let (result, out, _) = run_collect(spec(&dir, STUBBORN, Duration::from_secs(60)), cancel).await;
    assert_eq!(result.reason, ExitReason::Cancelled);
    assert_eq!(out, "started\n");
    assert!(
        started.elapsed() < Duration::from_secs(8),
        "{:?}",
        started.elapsed()
    );
    assert_eq!(live_members(result.record.pgid), Vec::<i32>::new());
}

#[tokio::test]
async fn cancelled_before_start_runs_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let cancel = CancellationToken::new();
    cancel.cancel();
    let err = run(
        spec(&dir, "touch ran", Duration::from_secs(5)),
        cancel,
        |_| panic!("spawned"),
        |_, _| {},
    )
    .await
    .unwrap_err();
    assert!(matches!(err, ExecError::Cancelled));
    assert!(!dir.path().join("ran").exists());
}

/// TERM ends the leader and pipes close, but a member that ignores TERM and
/// holds no pipe still gets KILL.
#[tokio::test]
async fn members_without_pipes_are_still_killed() {
    let dir = tempfile::tempdir().unwrap();
    let script = "(trap '' TERM; exec sleep 30) >/dev/null 2>&1 & echo started; sleep 30";
    let result = run_plain(spec(&dir, script, Duration::from_millis(400))).await;
    assert_eq!(result.reason, ExitReason::TimedOut);
    assert_eq!(live_members(result.record.pgid), Vec::<i32>::new());
}

/// The leader exits but a background child keeps stdout open: the call waits
/// for EOF up to the timeout, then ends the group.
#[tokio::test]
async fn a_background_child_holding_the_pipe_is_ended_at_the_timeout() {
    let dir = tempfile::tempdir().unwrap();
    let result = run_plain(spec(
        &dir,
        "sleep 30 & echo done",
        Duration::from_millis(500),
    ))
    .await;
    assert_eq!(result.reason, ExitReason::TimedOut);
    assert_eq!(result.exit_code, Some(0));
    assert_eq!(result.stdout.tail, "done\n");
    assert!(result.elapsed < Duration::from_secs(5));
    assert_eq!(live_members(result.record.pgid), Vec::<i32>::new());
}

/// A descendant in its own session (outside the owned group) that keeps a
/// pipe open does not hang the call.
#[tokio::test]
async fn a_pipe_held_outside_the_group_does_not_hang_the_call() {
    let dir = tempfile::tempdir().unwrap();
    let pid_file = dir.path().join("escaped.pid");
    let script = format!(
        "setsid sh -c 'echo $$ > {}; exec sleep 30' & echo started; sleep 30",
        pid_file.display()
    );
    let started = Instant::now();
    let result = run_plain(spec(&dir, &script, Duration::from_millis(400))).await;
    let took = started.elapsed();
    let escaped: i32 = std::fs::read_to_string(&pid_file)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    let _ = nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(escaped),
        nix::sys::signal::Signal::SIGKILL,
    );
    assert_eq!(result.reason, ExitReason::TimedOut);
    assert_eq!(result.stdout.tail, "started\n");
    assert!(took < Duration::from_secs(5), "{took:?}");
    assert_eq!(live_members(result.record.pgid), Vec::<i32>::new());
}

#[tokio::test]
async fn dropping_the_run_future_ends_the_group() {
    let dir = tempfile::tempdir().unwrap();
    let recorded: Arc<Mutex<Option<ProcessRecord>>> = Arc::default();
    let slot = Arc::clone(&recorded);
    let future = run(
        spec(&dir, STUBBORN, Duration::from_secs(60)),
        CancellationToken::new(),
        move |record| *slot.lock().unwrap() = Some(record.clone()),
        |_, _| {},
    );
    assert!(tokio::time::timeout(Duration::from_millis(400), future)
        .await
        .is_err());
    let record = recorded.lock().unwrap().clone().unwrap();
    let deadline = Instant::now() + Duration::from_secs(5);
    while !live_members(record.pgid).is_empty() && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(live_members(record.pgid), Vec::<i32>::new());
}

#[tokio::test]
async fn bound_secrets_never_appear_in_tails_chunks_or_artifacts() {
    let dir = tempfile::tempdir().unwrap();
    let mut spec = spec(
        &dir,
        "printf 'plain hunter2\\n'; printf 'hun'; sleep 0.1; printf 'ter2\\n'; \
         printf 'err hunter2 and s3cr\\n' >&2; sleep 0.1; printf 'et-token\\n' >&2",
        Duration::from_secs(10),
    );
    spec.secrets = vec![
        ("DB_PASSWORD".to_owned(), "hunter2".to_owned()),
        ("API_TOKEN".to_owned(), "s3cr\net-token".to_owned()),
    ];
    let (result, out, err) = run_collect(spec, CancellationToken::new()).await;
    let stdout_art = read(&result.stdout_artifact);
    let stderr_art = read(&result.stderr_artifact);
    for text in [
        &result.stdout.tail,
        &result.stderr.tail,
        &out,
        &err,
        &stdout_art,
        &stderr_art,
    ] {
        assert!(!text.contains("hunter2"), "{text}");
        assert!(!text.contains("et-token"), "{text}");
    }
    assert_eq!(
        result.stdout.tail,
        "plain <redacted:DB_PASSWORD>\n<redacted:DB_PASSWORD>\n"
    );
    assert_eq!(
        result.stderr.tail,
        "err <redacted:DB_PASSWORD> and <redacted:API_TOKEN>\n"
    );
    assert_eq!(out, result.stdout.tail);
    assert_eq!(err, result.stderr.tail);
    assert_eq!(stdout_art, result.stdout.tail);
    assert_eq!(stderr_art, result.stderr.tail);
    // Totals describe what the process wrote.
    assert_eq!(
        result.stdout.total_bytes,
        "plain hunter2\nhunter2\n".len() as u64
    );
}

#[tokio::test]
async fn an_unwritable_artifact_dir_still_runs_and_drains() {
    let dir = tempfile::tempdir().unwrap();
    let blocker = dir.path().join("not-a-dir");
    std::fs::write(&blocker, b"x").unwrap();
    let mut spec = spec(
        &dir,
        "seq 1 20000; echo oops >&2; exit 4",
        Duration::from_secs(10),
    );
    spec.artifact_dir = blocker.join("artifacts");
    let (result, out, _) = run_collect(spec, CancellationToken::new()).await;
    assert_eq!(result.exit_code, Some(4));
    assert!(result.stdout.tail.ends_with("19999\n20000\n"));
    assert_eq!(result.stdout.total_bytes, out.len() as u64);
    assert_eq!(result.stderr.tail, "oops\n");
    assert_eq!(
        (
            result.stdout_artifact.clone(),
            result.stderr_artifact.clone()
        ),
        (None, None)
    );
    let error = result.artifact_error.unwrap();
    assert!(
        error.contains("stdout: artifact directory:") && error.contains("stderr:"),
        "{error}"
    );
}

#[tokio::test]
async fn utf8_split_across_writes_is_decoded_whole() {
    let dir = tempfile::tempdir().unwrap();
    let result = run_plain(spec(
        &dir,
        "printf 'caf\\303'; sleep 0.1; printf '\\251 \\377\\n'",
        Duration::from_secs(10),
    ))
    .await;
    assert_eq!(result.stdout.tail, "café \u{fffd}\n");
    assert_eq!(result.stdout.total_bytes, 8);
    assert_eq!(result.stdout.total_chars, 7);
}

#[tokio::test]
async fn cwd_and_spawn_errors() {
    let dir = tempfile::tempdir().unwrap();
    let mut missing = spec(&dir, "true", Duration::from_secs(5));
    missing.cwd = dir.path().join("nope");
    assert!(matches!(run_plain_err(missing).await, ExecError::Cwd(_)));
    let file = dir.path().join("file");
    std::fs::write(&file, b"x").unwrap();
    let mut not_dir = spec(&dir, "true", Duration::from_secs(5));
    not_dir.cwd = file;
    assert!(matches!(run_plain_err(not_dir).await, ExecError::Cwd(_)));
    let mut bad_env = spec(&dir, "true", Duration::from_secs(5));
    bad_env.env.push(("BAD".to_owned(), "a\0b".to_owned()));
    assert!(matches!(run_plain_err(bad_env).await, ExecError::Spawn(_)));
    // No artifact is left behind by a command that never started.
    let leftovers = std::fs::read_dir(dir.path().join("artifacts")).map_or(0, |d| d.count());
    assert_eq!(leftovers, 0);
}

#[tokio::test]
async fn the_working_directory_and_environment_are_the_given_ones() {
    let dir = tempfile::tempdir().unwrap();
    let work = dir.path().join("work");
    std::fs::create_dir(&work).unwrap();
    let mut spec = spec(
        &dir,
        "pwd; echo \"$ONLY_THIS\"; echo \"${HOME}\"",
        Duration::from_secs(5),
    );
    spec.cwd = work.clone();
    spec.env = vec![
        ("ONLY_THIS".to_owned(), "yes".to_owned()),
        ("HOME".to_owned(), "/nowhere".to_owned()),
    ];
    let result = run_plain(spec).await;
    assert_eq!(
        result.stdout.tail,
        format!("{}\nyes\n/nowhere\n", work.display())
    );
    assert!(read_stat(result.record.pid).is_none(), "leader reaped");
}

async fn run_plain_err(spec: ExecSpec) -> ExecError {
    run(spec, CancellationToken::new(), |_| {}, |_, _| {})
        .await
        .unwrap_err()
}

#[tokio::test]
async fn a_disk_filler_stops_at_the_command_quota_and_its_group_is_ended() {
    let dir = TempDir::new().unwrap();
    let quota = crate::exec::StorageQuota::new(64 * 1024, 1 << 40);
    let mut spec = spec(&dir, "yes 0123456789abcdef", Duration::from_secs(30));
    spec.output_budget = quota.budget("acme");
    let started = Instant::now();
    let r = run_plain(spec).await;
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "{:?}",
        started.elapsed()
    );
    assert_eq!(r.reason, ExitReason::OutputQuota);
    assert_eq!(
        r.quota_exceeded,
        Some(crate::exec::QuotaLimit::Command(64 * 1024))
    );
    let written = std::fs::metadata(r.stdout_artifact.as_ref().unwrap())
        .unwrap()
        .len();
    assert!(written <= 64 * 1024 && written > 60 * 1024, "{written}");
    assert_eq!(quota.used("acme"), written);
    // The tail and totals still describe the stream as read.
    assert!(r.stdout.total_bytes >= written);
    assert!(r.stdout.tail.ends_with("0123456789abcdef\n"));
    assert!(r.artifact_error.is_none());
    assert!(live_members(r.record.pgid).is_empty());
}

#[tokio::test]
async fn both_streams_share_the_command_quota_and_a_quiet_command_is_untouched() {
    let dir = TempDir::new().unwrap();
    let quota = crate::exec::StorageQuota::new(1000, 1500);
    let mut quiet = spec(&dir, "echo hi; echo there >&2", Duration::from_secs(10));
    quiet.output_budget = quota.budget("acme");
    let r = run_plain(quiet).await;
    assert_eq!(
        (r.reason, r.exit_code, r.quota_exceeded),
        (ExitReason::Exited, Some(0), None)
    );
    assert_eq!(quota.used("acme"), 9);
    let mut loud = spec(
        &dir,
        "head -c 800 /dev/zero | tr '\\0' a; head -c 800 /dev/zero | tr '\\0' b >&2; sleep 20",
        Duration::from_secs(30),
    );
    loud.output_budget = quota.budget("acme");
    let r = run_plain(loud).await;
    assert_eq!(r.reason, ExitReason::OutputQuota);
    assert_eq!(
        r.quota_exceeded,
        Some(crate::exec::QuotaLimit::Command(1000))
    );
    let sizes: u64 = [&r.stdout_artifact, &r.stderr_artifact]
        .iter()
        .map(|p| std::fs::metadata(p.as_ref().unwrap()).unwrap().len())
        .sum();
    assert_eq!(sizes, 1000);
    assert_eq!(quota.used("acme"), 1009);
    // The tenant has 491 bytes left: the next loud command stops at the tenant cap.
    let mut next = spec(&dir, "yes", Duration::from_secs(30));
    next.output_budget = quota.budget("acme");
    let r = run_plain(next).await;
    assert_eq!(
        r.quota_exceeded,
        Some(crate::exec::QuotaLimit::Tenant(1500))
    );
    assert_eq!(quota.used("acme"), 1500);
}

/// A command's CPU time, its children's included, is read as it exits and
/// lands in the tally of the call that ran it; a sleeping command uses
/// next to none.
#[tokio::test]
async fn cpu_time_is_measured_and_tallied() {
    let dir = TempDir::new().unwrap();
    // The busy loop runs in a child the shell waits for.
    let busy = "sh -c 'i=0; while [ $i -lt 300000 ]; do i=$((i+1)); done'; echo done";
    let (result, tally) =
        crate::usage::Tally::scope(run_plain(spec(&dir, busy, Duration::from_secs(60)))).await;
    assert_eq!(result.exit_code, Some(0));
    let cpu = result.cpu_ms.expect("cpu time read");
    assert!(cpu >= 20, "a busy loop used {cpu} ms");
    assert_eq!(tally.cpu_ms(), cpu);
    let idle = run_plain(spec(&dir, "sleep 0.3", Duration::from_secs(10))).await;
    assert!(idle.cpu_ms.expect("cpu time read") < cpu);
    // Killed at its timeout: still read.
    let killed = run_plain(spec(
        &dir,
        "while :; do :; done",
        Duration::from_millis(400),
    ))
    .await;
    assert_eq!(killed.reason, ExitReason::TimedOut);
    assert!(killed.cpu_ms.expect("cpu time read") >= 100, "{killed:?}");
}
