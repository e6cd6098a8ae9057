//! The README, run as a newcomer runs it: the server started with no
//! `--home` in a fresh folder, then every shell block of "A five-minute
//! tour" executed by `bash` as written (the CLI issuing tokens, `curl` and
//! `jq`). Only three things are put in for the test: `demiurge` is the built
//! binary rather than `cargo run`, the server's free port replaces
//! `localhost:8080`, and the endless `curl -N` stream gets a time limit
//! (its running out is the reader's Ctrl-C, not a failure).
//! Then the session's whole event log must show the seeded core's bootstrap
//! slot, a confined terminal command, an authored tool and an approval, with
//! no failure anywhere.

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use serde_json::Value;

use crate::helpers::*;

const README: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../README.md");

/// The shell blocks under `heading`, in order.
fn shell_blocks(readme: &str, heading: &str) -> Vec<String> {
    let start = readme
        .find(&format!("\n## {heading}\n"))
        .unwrap_or_else(|| panic!("README has no \"## {heading}\" section"));
    let section = &readme[start + 1..];
    let section = &section[..section[3..].find("\n## ").map_or(section.len(), |i| i + 3)];
    let mut blocks = Vec::new();
    let mut rest = section;
    while let Some(open) = rest.find("```sh\n") {
        let body = &rest[open + 6..];
        let close = body.find("\n```").expect("an unclosed shell block");
        blocks.push(body[..close].to_owned());
        rest = &body[close + 4..];
    }
    blocks
}

/// `text` with `from` replaced by `to`; the README must still say `from`.
fn put_in(text: &str, from: &str, to: &str) -> String {
    assert!(
        text.contains(from),
        "the README tour no longer contains {from:?}; update this test with it"
    );
    text.replace(from, to)
}

/// Start `demiurge serve` exactly as the README says, in `cwd`; returns the
/// child, its address and the stdout lines up to "listening on".
fn serve_in(cwd: &Path, database_url: Option<&str>) -> (std::process::Child, String, Vec<String>) {
    let mut cmd = Command::new(BIN);
    cmd.arg("serve")
        .current_dir(cwd)
        .env_remove("DEMIURGE_HOME")
        .env_remove("DATABASE_URL")
        .env_remove("DEMIURGE_PROVIDER")
        .env_remove("DEMIURGE_OPENAI_API_KEY")
        .env_remove("DEMIURGE_ANTHROPIC_API_KEY")
        .env("DEMIURGE_BIND", "127.0.0.1:0")
        .stdout(Stdio::piped())
        .stderr(Stdio::from(
            std::fs::File::create(cwd.join("server.log")).unwrap(),
        ));
    if let Some(url) = database_url {
        cmd.env("DATABASE_URL", url);
    }
    let mut child = cmd.spawn().unwrap();
    let (addr, lines) = wait_listening(&mut child, &cwd.join("server.log"));
    (child, addr, lines)
}

/// Waits in the tour's shell until the session's latest turn has ended or
/// waits for an approval: a person reads the output before the next block.
const SETTLE: &str = r#"
__stream() { curl -N --max-time 2 "$@" || [ $? -eq 28 ]; }
__settle() {
  [ -n "${SESSION:-}" ] || return 0
  for _ in $(seq 1 100); do
    last=$(curl -s -N --max-time 0.5 "$API/sessions/$SESSION/events" -H "$AUTH" \
      | sed -n 's/^data: //p' | tail -n 1 | jq -r '.type // empty' || true)
    case "$last" in
      turn.completed|turn.failed|turn.cancelled|approval.requested) return 0 ;;
    esac
    sleep 0.1
  done
  echo "the session never settled (last event: $last)" >&2
  return 1
}
"#;

async fn the_tour_on(backend: Backend) {
    let readme = std::fs::read_to_string(README).unwrap();
    assert!(
        readme.contains("```sh\ncargo run --release -- serve\n```"),
        "README's \"Run it\" no longer starts the server with `cargo run --release -- serve`"
    );
    let pg = match backend {
        Backend::Sqlite => None,
        Backend::Postgres => {
            assert!(
                readme.contains("export DATABASE_URL="),
                "README's PostgreSQL block"
            );
            Some(PgDatabase::create().await)
        }
    };
    let url = pg.as_ref().map(|p| p.url.as_str());
    // A fresh, empty folder a tenant's uid may pass through, as README asks.
    let dir = traversable_tempdir();
    let cwd = dir.path().canonicalize().unwrap();
    let (mut server, addr, stdout) = serve_in(&cwd, url);
    let operator = stdout
        .iter()
        .find_map(|l| l.strip_prefix("operator token (tenant default, valid 30 days): "))
        .unwrap_or_else(|| panic!("no operator token printed: {stdout:?}"))
        .to_owned();
    assert!(stdout.iter().any(|l| l.ends_with("/console")), "{stdout:?}");
    assert!(
        cwd.join(".demiurge").is_dir(),
        "the default home is ./.demiurge"
    );

    let blocks = shell_blocks(&readme, "A five-minute tour");
    assert!(
        blocks.len() >= 5,
        "the tour has {} shell blocks",
        blocks.len()
    );
    let mut script = String::from("set -euo pipefail\n");
    script.push_str(SETTLE);
    for block in &blocks {
        script.push_str("__settle\n");
        script.push_str(block);
        script.push('\n');
    }
    script.push_str("__settle\necho \"SESSION=$SESSION\"\n");
    let script = put_in(
        &script,
        "demiurge() { cargo run -q --release -- \"$@\"; }",
        &format!("demiurge() {{ {BIN:?} \"$@\"; }}"),
    );
    let script = put_in(&script, "localhost:8080", &addr);
    let script = put_in(&script, "curl -N $API", "__stream $API");

    let mut bash = Command::new("bash");
    bash.arg("-c")
        .arg(&script)
        .current_dir(&cwd)
        .env_remove("DEMIURGE_HOME")
        .env_remove("DATABASE_URL");
    if let Some(url) = url {
        bash.env("DATABASE_URL", url);
    }
    let out = tokio::task::spawn_blocking(move || bash.output().unwrap())
        .await
        .unwrap();
    let printed = String::from_utf8_lossy(&out.stdout).into_owned();
    let log = std::fs::read_to_string(cwd.join("server.log")).unwrap_or_default();
    assert!(
        out.status.success(),
        "{backend:?}: the tour failed: {}\nstdout:\n{printed}\nserver log:\n{log}",
        String::from_utf8_lossy(&out.stderr)
    );
    let session = printed
        .lines()
        .find_map(|l| l.strip_prefix("SESSION="))
        .unwrap()
        .to_owned();
    assert_eq!(printed.matches("{\"turn_id\":").count(), 3, "{printed}");
    // `curl` prints the turn's id without a newline, so the listed name
    // ends a line rather than filling one.
    assert!(
        printed.lines().any(|l| l == "echo" || l.ends_with("}echo")),
        "the echo tool is listed: {printed}"
    );
    assert!(
        !log.contains('\u{1b}'),
        "the server log (a file) carries escape bytes"
    );

    // Everything the session recorded, read as alice.
    let client = demiurge::net::client_builder().build().unwrap();
    let alice = {
        let mut cli = Command::new(BIN);
        cli.args([
            "token",
            "issue",
            "--tenant",
            "default",
            "--principal",
            "alice",
        ])
        .current_dir(&cwd)
        .env_remove("DEMIURGE_HOME")
        .env_remove("DATABASE_URL");
        if let Some(url) = url {
            cli.env("DATABASE_URL", url);
        }
        let o = cli.output().unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        String::from_utf8(o.stdout).unwrap().trim().to_owned()
    };
    let events = all_events(&client, &addr, &alice, &session).await;
    let kinds: Vec<&str> = events.iter().filter_map(|e| e["type"].as_str()).collect();
    for bad in ["slot.failed", "turn.failed", "turn.cancelled"] {
        assert!(
            !kinds.contains(&bad),
            "{backend:?}: {bad} in the tour: {events:#?}\nserver log:\n{log}"
        );
    }
    assert_eq!(
        kinds.iter().filter(|k| **k == "turn.completed").count(),
        3,
        "{kinds:?}"
    );
    let results: Vec<&Value> = events
        .iter()
        .filter(|e| e["type"] == "tool.result")
        .collect();
    assert_eq!(results.len(), 2, "{results:#?}");
    for r in &results {
        assert_eq!(r["data"]["status"], "succeeded", "{backend:?}: {r}\n{log}");
    }
    assert_eq!(results[1]["data"]["content"], "echo: hi", "{}", results[1]);
    assert!(
        kinds.contains(&"approval.requested") && kinds.contains(&"approval.resolved"),
        "{kinds:?}"
    );
    // The workspace the terminal listed is the absolute one under ./.demiurge.
    let ws = cwd.join(".demiurge/tenants/default/workspaces/alice/default");
    assert!(ws.is_dir(), "{}", ws.display());

    // The operator token printed at first start works as printed.
    let r = client
        .get(format!("http://{addr}/v1/sessions"))
        .bearer_auth(&operator)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    let _ = server.kill();
    let _ = server.wait();
}

/// The session's events from the start, until the stream goes quiet.
async fn all_events(client: &reqwest::Client, addr: &str, token: &str, sid: &str) -> Vec<Value> {
    use futures_util::StreamExt;
    let resp = client
        .get(format!("http://{addr}/v1/sessions/{sid}/events"))
        .bearer_auth(token)
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 200);
    let mut stream = resp.bytes_stream();
    let mut buf = String::new();
    let mut out = Vec::new();
    while let Ok(Some(Ok(chunk))) =
        tokio::time::timeout(Duration::from_millis(1500), stream.next()).await
    {
        buf.push_str(&String::from_utf8_lossy(&chunk));
        while let Some(i) = buf.find("\n\n") {
            let block: String = buf.drain(..i + 2).collect();
            for data in block.lines().filter_map(|l| l.strip_prefix("data:")) {
                out.push(serde_json::from_str(data.trim_start()).unwrap());
            }
        }
    }
    out
}

#[tokio::test]
async fn the_readme_tour_runs_as_written() {
    for backend in backends() {
        the_tour_on(backend).await;
    }
}

/// As root, children run as per-tenant uids: a home inside a folder they
/// cannot pass through is announced at start with the fix, not found later
/// as a failed turn.
#[tokio::test]
async fn a_home_children_cannot_reach_is_announced_at_start() {
    if !running_as_root() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    use std::os::unix::fs::PermissionsExt;
    // No way through for others.
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o700)).unwrap();
    let cwd = dir.path().canonicalize().unwrap();
    let (mut server, _addr, _) = serve_in(&cwd, None);
    let log = std::fs::read_to_string(cwd.join("server.log")).unwrap();
    let _ = server.kill();
    let _ = server.wait();
    let warning = log
        .lines()
        .find(|l| l.starts_with("WARNING: child processes are unavailable"))
        .unwrap_or_else(|| panic!("no warning on stderr:\n{log}"));
    assert!(warning.contains("chmod o+x"), "{warning}");
    assert!(warning.contains(&cwd.display().to_string()), "{warning}");
}
