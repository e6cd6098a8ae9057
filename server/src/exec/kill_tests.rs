#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::io::{BufRead, BufReader};
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use super::*;

const GRACE: Duration = Duration::from_millis(200);

/// `sh -c script` leading its own process group, and its record.
fn spawn_group(script: &str) -> (Child, ProcessRecord) {
    let child = Command::new("/bin/sh")
        .arg("-c")
        .arg(script)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .process_group(0)
        .spawn()
        .unwrap();
    let pid = child.id() as i32;
    let record = ProcessRecord {
        spawn_id: "proc_test".to_owned(),
        pid,
        pgid: pid,
        start_marker: start_marker(pid).unwrap(),
    };
    (child, record)
}

fn first_line(child: &mut Child) -> String {
    let mut line = String::new();
    BufReader::new(child.stdout.as_mut().unwrap())
        .read_line(&mut line)
        .unwrap();
    line.trim().to_owned()
}

fn wait_until_gone(pgid: i32) -> bool {
    let deadline = Instant::now() + Duration::from_secs(3);
    while Instant::now() < deadline {
        if live_members(pgid).is_empty() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    false
}

#[test]
fn parses_stat_after_the_last_paren() {
    let fields: Vec<String> = (3..=52).map(|n| n.to_string()).collect();
    let text = format!("1234 (we) ird (name)) S {}\n", fields[1..].join(" "));
    let stat = parse_stat(&text).unwrap();
    assert_eq!(stat.state, 'S');
    assert_eq!(stat.pgid, 5);
    assert_eq!(stat.start, 22);
    assert!(parse_stat("1234 (short) S 1 2").is_none());
    assert!(parse_stat("no paren at all").is_none());
}

#[test]
fn start_marker_of_live_and_missing_processes() {
    let me = std::process::id() as i32;
    let marker = start_marker(me).unwrap();
    assert_eq!(start_marker(me), Some(marker));
    assert_eq!(start_marker(0), None);
    assert_eq!(start_marker(-1), None);
    assert_eq!(start_marker(i32::MAX), None);
    assert!(boot_id().is_some_and(|id| id.len() >= 32));
}

#[test]
fn never_targets_the_servers_own_group_or_init() {
    let me = std::process::id() as i32;
    let own = ProcessRecord {
        spawn_id: "own".to_owned(),
        pid: me,
        pgid: getpgrp().as_raw(),
        start_marker: start_marker(me).unwrap(),
    };
    assert!(!owned(&own));
    let init = ProcessRecord {
        spawn_id: "init".to_owned(),
        pid: 1,
        pgid: 1,
        start_marker: start_marker(1).unwrap_or(0),
    };
    assert!(!owned(&init));
    assert!(!kill_group(&init, Duration::ZERO));
}

#[test]
fn a_mismatched_start_marker_is_never_signalled() {
    let (mut child, record) = spawn_group("exec sleep 30");
    for wrong in [
        record.start_marker + 1,
        record.start_marker.saturating_sub(1),
    ] {
        let stale = ProcessRecord {
            start_marker: wrong,
            ..record.clone()
        };
        assert!(!kill_group(&stale, GRACE), "marker {wrong}");
        assert!(
            child.try_wait().unwrap().is_none(),
            "stale record killed the process"
        );
    }
    assert!(kill_group(&record, GRACE));
    assert_eq!(child.wait().unwrap().signal(), Some(15));
}

#[test]
fn term_is_escalated_to_kill_after_the_grace() {
    let (mut child, record) = spawn_group("trap '' TERM; echo ready; sleep 30; sleep 30");
    assert_eq!(first_line(&mut child), "ready");
    let started = Instant::now();
    assert!(kill_group(&record, GRACE));
    assert!(started.elapsed() >= GRACE);
    assert_eq!(child.wait().unwrap().signal(), Some(9));
    assert!(wait_until_gone(record.pgid));
}

#[test]
fn members_are_found_after_the_leader_was_reaped() {
    let (mut child, record) = spawn_group("sleep 30 & echo $!");
    let member: i32 = first_line(&mut child).parse().unwrap();
    assert!(child.wait().unwrap().success());
    assert_eq!(start_marker(record.pid), None, "leader reaped");
    assert_eq!(read_stat(member).unwrap().pgid, record.pgid);
    // A group member that started before the recorded leader is not ours.
    let older = ProcessRecord {
        start_marker: read_stat(member).unwrap().start + 1,
        ..record.clone()
    };
    assert!(!kill_group(&older, GRACE));
    assert_eq!(live_members(record.pgid), vec![member]);
    assert!(kill_group(&record, GRACE));
    assert!(wait_until_gone(record.pgid));
    assert!(!kill_group(&record, GRACE), "nothing left to signal");
}

#[test]
fn reap_orphans_ends_live_matching_groups_only() {
    let (mut a, rec_a) = spawn_group("exec sleep 30");
    let (mut b, rec_b) = spawn_group("trap '' TERM; echo ready; sleep 30; sleep 30");
    assert_eq!(first_line(&mut b), "ready");
    let (mut c, rec_c) = spawn_group("exec sleep 30");
    let stale = ProcessRecord {
        start_marker: rec_c.start_marker + 7,
        ..rec_c.clone()
    };
    let gone = ProcessRecord {
        spawn_id: "gone".to_owned(),
        pid: i32::MAX,
        pgid: i32::MAX,
        start_marker: 1,
    };
    let ended = reap_orphans(&[rec_a.clone(), rec_b.clone(), stale, gone], GRACE);
    assert_eq!(ended, 2);
    assert_eq!(a.wait().unwrap().signal(), Some(15));
    assert_eq!(b.wait().unwrap().signal(), Some(9));
    assert!(
        c.try_wait().unwrap().is_none(),
        "stale record must not be signalled"
    );
    assert!(kill_group(&rec_c, GRACE));
    c.wait().unwrap();
}
