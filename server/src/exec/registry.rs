//! Durable records of running processes (`runtime/processes/<spawn_id>.json`),
//! so a restarted server can find groups a crash left behind and end them.
//! A record is written when the process starts and removed when its run ends.
//! Instances sharing a home share the folder: a record names the server
//! process that owns it, and one whose owner still runs belongs to another
//! live instance, never to the restart reaping.

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::{boot_id, reap_orphans, ProcessRecord};

#[derive(Serialize, Deserialize)]
struct Stored {
    spawn_id: String,
    pid: i32,
    pgid: i32,
    start_marker: u64,
    /// Start markers only compare within one boot.
    boot_id: Option<String>,
    /// The server process that started it (pid and start marker).
    #[serde(default)]
    server: Option<(i32, u64)>,
    /// The host it runs on (a home may be shared across hosts).
    #[serde(default)]
    host: Option<String>,
}

/// Whether `server` is a server process other than this one, still running.
fn owned_by_another_live_server(server: Option<(i32, u64)>) -> bool {
    match server {
        Some((pid, marker)) => {
            super::kill::this_process().is_none_or(|(me, _)| me != pid)
                && super::kill::start_marker(pid) == Some(marker)
        }
        None => false,
    }
}

#[derive(Clone, Debug)]
pub struct ProcessRegistry {
    dir: PathBuf,
}

impl ProcessRegistry {
    pub fn new(home: &Path) -> Self {
        Self {
            dir: crate::home::HomeLayout::new(home).processes_dir(),
        }
    }

    fn path(&self, spawn_id: &str) -> Option<PathBuf> {
        // Host-issued ids only; never a path from elsewhere.
        spawn_id
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_')
            .then(|| self.dir.join(format!("{spawn_id}.json")))
    }

    /// Record a started process (best effort: failure is logged, the run goes on).
    pub fn started(&self, r: &ProcessRecord) {
        let Some(path) = self.path(&r.spawn_id) else {
            return;
        };
        let stored = Stored {
            spawn_id: r.spawn_id.clone(),
            pid: r.pid,
            pgid: r.pgid,
            start_marker: r.start_marker,
            boot_id: boot_id(),
            server: super::kill::this_process(),
            host: super::kill::host_name(),
        };
        let result = crate::bootstrap::private_dir(&self.dir)
            .map_err(|e| e.to_string())
            .and_then(|()| serde_json::to_vec(&stored).map_err(|e| e.to_string()))
            .and_then(|body| write_whole(&self.dir, &path, &body).map_err(|e| e.to_string()));
        if let Err(e) = result {
            tracing::warn!(error = %e, spawn_id = %r.spawn_id, "could not record a running process");
        }
    }

    /// Removes the record of a run that ended.
    pub fn finished(&self, spawn_id: &str) {
        if let Some(path) = self.path(spawn_id) {
            let _ = std::fs::remove_file(path);
        }
    }

    /// At start-up: end every recorded group of this boot that is still alive
    /// (start marker re-checked) and whose server is gone, then forget those
    /// records; another live instance's stay. Returns how many groups were
    /// signalled.
    pub fn reap_after_restart(&self, grace: Duration) -> usize {
        let Ok(entries) = std::fs::read_dir(&self.dir) else {
            return 0;
        };
        let boot = boot_id();
        let mut records = Vec::new();
        let mut files = Vec::new();
        let host = super::kill::host_name();
        for e in entries.flatten() {
            let p = e.path();
            if let Ok(bytes) = std::fs::read(&p) {
                if let Ok(s) = serde_json::from_slice::<Stored>(&bytes) {
                    let this_boot = s.boot_id.is_some() && s.boot_id == boot;
                    // Another live instance's (on this host, or on another
                    // host sharing the home): its own restart reaps it.
                    if (this_boot && owned_by_another_live_server(s.server))
                        || (!this_boot && s.host.is_some() && s.host != host)
                    {
                        continue;
                    }
                    if this_boot {
                        records.push(ProcessRecord {
                            spawn_id: s.spawn_id,
                            pid: s.pid,
                            pgid: s.pgid,
                            start_marker: s.start_marker,
                        });
                    }
                }
            }
            files.push(p);
        }
        let ended = if records.is_empty() {
            0
        } else {
            reap_orphans(&records, grace)
        };
        for f in files {
            let _ = std::fs::remove_file(f);
        }
        ended
    }
}

/// Write `body` to `path` (in `dir`) so that a reader, or the reaper after a
/// crash, sees either no record or the whole one: written beside `dir`
/// first, then renamed into it.
fn write_whole(dir: &Path, path: &Path, body: &[u8]) -> std::io::Result<()> {
    let name = path.file_name().unwrap_or_default().to_string_lossy();
    let partial = dir.with_file_name(format!(".processes.{name}.partial"));
    std::fs::write(&partial, body)?;
    std::fs::rename(&partial, path).inspect_err(|_| {
        let _ = std::fs::remove_file(&partial);
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_appear_whole_and_leave_nothing_behind() {
        let home = tempfile::tempdir().unwrap();
        let registry = ProcessRegistry::new(home.path());
        let record = ProcessRecord {
            spawn_id: "proc_abc".into(),
            pid: 1,
            pgid: 1,
            start_marker: 7,
        };
        registry.started(&record);
        let runtime = home.path().join("runtime");
        let names: Vec<String> = std::fs::read_dir(&runtime)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        assert_eq!(names, vec!["processes".to_owned()], "no partial file left");
        let stored: Stored = serde_json::from_slice(
            &std::fs::read(runtime.join("processes/proc_abc.json")).unwrap(),
        )
        .unwrap();
        assert_eq!((stored.pgid, stored.start_marker), (1, 7));
        registry.finished("proc_abc");
        assert_eq!(
            std::fs::read_dir(runtime.join("processes"))
                .unwrap()
                .count(),
            0
        );
        // Ids that are not host-issued never become paths.
        registry.started(&ProcessRecord {
            spawn_id: "../x".into(),
            ..record
        });
        assert!(!runtime.join("x.json").exists());
    }

    /// Instances sharing a home: a restart reaps only groups whose server is
    /// gone; a live instance's (here init, always alive) and another host's
    /// records stay, a dead server's group ends.
    #[test]
    fn a_restart_reaps_only_what_no_live_server_owns() {
        use std::os::unix::process::CommandExt;
        let home = tempfile::tempdir().unwrap();
        let registry = ProcessRegistry::new(home.path());
        let spawn = || {
            std::process::Command::new("sleep")
                .arg("30")
                .process_group(0)
                .spawn()
                .unwrap()
        };
        let (mut kept, mut ended) = (spawn(), spawn());
        let write = |id: &str,
                     child: &std::process::Child,
                     server: Option<(i32, u64)>,
                     host: Option<String>| {
            let pid = i32::try_from(child.id()).unwrap();
            let stored = Stored {
                spawn_id: id.into(),
                pid,
                pgid: pid,
                start_marker: super::super::kill::start_marker(pid).unwrap(),
                boot_id: boot_id(),
                server,
                host,
            };
            std::fs::create_dir_all(&registry.dir).unwrap();
            std::fs::write(
                registry.dir.join(format!("{id}.json")),
                serde_json::to_vec(&stored).unwrap(),
            )
            .unwrap();
        };
        let init = super::super::kill::start_marker(1).map(|m| (1, m));
        write("proc_live", &kept, init, super::super::kill::host_name());
        // A server pid that is gone (a marker no process has).
        write(
            "proc_dead",
            &ended,
            Some((i32::MAX - 1, 1)),
            super::super::kill::host_name(),
        );
        std::fs::write(
            registry.dir.join("proc_elsewhere.json"),
            serde_json::to_vec(&Stored {
                spawn_id: "proc_elsewhere".into(),
                pid: 1,
                pgid: 1,
                start_marker: 1,
                boot_id: Some("another-boot".into()),
                server: None,
                host: Some("another-host".into()),
            })
            .unwrap(),
        )
        .unwrap();
        assert_eq!(registry.reap_after_restart(Duration::from_millis(500)), 1);
        assert!(ended.wait().is_ok());
        assert!(
            kept.try_wait().unwrap().is_none(),
            "a live server's group was ended"
        );
        let mut left: Vec<String> = std::fs::read_dir(&registry.dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        left.sort();
        assert_eq!(left, ["proc_elsewhere.json", "proc_live.json"]);
        let _ = kept.kill();
        let _ = kept.wait();
    }
}
