#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::time::Duration;

use tokio_util::sync::CancellationToken;

use super::*;
use crate::exec::{run, ExecSpec};

fn pairs(items: &[(&str, &str)]) -> Vec<(String, String)> {
    items
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect()
}

fn get<'a>(env: &'a [(String, String)], key: &str) -> Option<&'a str> {
    env.iter().find(|(k, _)| k == key).map(|(_, v)| v.as_str())
}

/// A server environment with credentials of every kind next to the basics.
fn host_env() -> Vec<(String, String)> {
    pairs(&[
        ("PATH", "/usr/local/bin:/usr/bin:/bin"),
        ("LANG", "C.UTF-8"),
        ("LANGUAGE", "en"),
        ("LC_ALL", "C.UTF-8"),
        ("LC_TIME", "en_GB.UTF-8"),
        ("TERM", "xterm-256color"),
        ("COLORTERM", "truecolor"),
        ("TZ", "Asia/Shanghai"),
        ("TMPDIR", "/tmp"),
        ("HOME", "/root"),
        ("USER", "root"),
        ("SHELL", "/bin/bash"),
        ("OPENAI_API_KEY", "sk-live-openai-000"),
        ("ANTHROPIC_API_KEY", "sk-ant-000"),
        ("DEMIURGE_OPENAI_API_KEY", "sk-demiurge-000"),
        ("DEMIURGE_JWT_SECRET", "jwt-secret-000"),
        ("AWS_ACCESS_KEY_ID", "AKIAEXAMPLE000"),
        ("AWS_SECRET_ACCESS_KEY", "aws-secret-000"),
        ("GOOGLE_APPLICATION_CREDENTIALS", "/secrets/gcp.json"),
        ("AZURE_CLIENT_SECRET", "azure-secret-000"),
        ("SLACK_BOT_TOKEN", "xoxb-slack-000"),
        ("TELEGRAM_BOT_TOKEN", "tg-000"),
        ("DISCORD_TOKEN", "discord-000"),
        ("GITHUB_TOKEN", "ghp_000"),
        ("MCP_SERVER_TOKEN", "mcp-000"),
        ("SSH_AUTH_SOCK", "/run/ssh-agent.sock"),
        ("DBUS_SESSION_BUS_ADDRESS", "unix:path=/run/user/0/bus"),
        ("DISPLAY", ":0"),
        ("LD_PRELOAD", "/evil.so"),
        ("LC_API_TOKEN", "lc-looking-secret-000"),
        ("path", "/lowercase/is/not/PATH"),
    ])
}

const SECRET_VALUES: &[&str] = &[
    "sk-live-openai-000",
    "sk-ant-000",
    "sk-demiurge-000",
    "jwt-secret-000",
    "AKIAEXAMPLE000",
    "aws-secret-000",
    "azure-secret-000",
    "xoxb-slack-000",
    "tg-000",
    "discord-000",
    "ghp_000",
    "mcp-000",
    "lc-looking-secret-000",
];

#[test]
fn keeps_only_the_allowlist_and_sets_home() {
    let env = child_env(host_env(), Path::new("/srv/runtime/t1/home"), &[]);
    let keys: Vec<&str> = env.iter().map(|(k, _)| k.as_str()).collect();
    assert_eq!(
        keys,
        [
            "COLORTERM",
            "HOME",
            "LANG",
            "LANGUAGE",
            "LC_ALL",
            "LC_TIME",
            "PATH",
            "TERM",
            "TMPDIR",
            "TZ"
        ]
    );
    assert_eq!(get(&env, "PATH"), Some("/usr/local/bin:/usr/bin:/bin"));
    assert_eq!(get(&env, "LANG"), Some("C.UTF-8"));
    assert_eq!(get(&env, "TZ"), Some("Asia/Shanghai"));
    assert_eq!(get(&env, "HOME"), Some("/srv/runtime/t1/home"));
    for name in [
        "OPENAI_API_KEY",
        "AWS_SECRET_ACCESS_KEY",
        "DEMIURGE_OPENAI_API_KEY",
        "SLACK_BOT_TOKEN",
        "GITHUB_TOKEN",
        "SSH_AUTH_SOCK",
        "DISPLAY",
        "LD_PRELOAD",
        "USER",
        "SHELL",
        "LC_API_TOKEN",
        "path",
    ] {
        assert_eq!(get(&env, name), None, "{name} must not pass");
    }
    for (_, value) in &env {
        for secret in SECRET_VALUES {
            assert!(!value.contains(secret));
        }
    }
}

#[test]
fn overlay_applies_last_and_bad_entries_are_dropped() {
    let host = pairs(&[("PATH", "/bin"), ("LANG", ""), ("TMP", "/t")]);
    let overlay = pairs(&[
        ("DB_PASSWORD", "hunter2"),
        ("TZ", "UTC"),
        ("TMP", "/other"),
        ("BAD=NAME", "x"),
        ("1BAD", "x"),
        ("", "x"),
        ("NUL_VALUE", "a\0b"),
    ]);
    let env = child_env(host, Path::new("/h"), &overlay);
    assert_eq!(get(&env, "LANG"), None, "empty host values are skipped");
    assert_eq!(get(&env, "DB_PASSWORD"), Some("hunter2"));
    assert_eq!(get(&env, "TZ"), Some("UTC"));
    assert_eq!(get(&env, "TMP"), Some("/other"));
    for name in ["BAD=NAME", "1BAD", "", "NUL_VALUE"] {
        assert_eq!(get(&env, name), None);
    }
}

#[test]
fn reserved_targets() {
    for name in [
        "PATH",
        "HOME",
        "LD_PRELOAD",
        "PYTHONPATH",
        "NODE_OPTIONS",
        "BASH_ENV",
        "LC_ALL",
    ] {
        assert!(is_reserved_env_target(name), "{name}");
    }
    for name in ["DB_PASSWORD", "API_TOKEN", "path"] {
        assert!(!is_reserved_env_target(name), "{name}");
    }
}

#[test]
fn runtime_home_is_private() {
    let dir = tempfile::tempdir().unwrap();
    let home = dir.path().join("tenants/t1/home");
    ensure_runtime_home(&home).unwrap();
    let mode = std::fs::metadata(&home).unwrap().permissions().mode() & 0o7777;
    assert_eq!(mode, 0o700);
    std::fs::set_permissions(&home, std::fs::Permissions::from_mode(0o755)).unwrap();
    ensure_runtime_home(&home).unwrap();
    let mode = std::fs::metadata(&home).unwrap().permissions().mode() & 0o7777;
    assert_eq!(mode, 0o700);
    let file = dir.path().join("file");
    std::fs::write(&file, b"x").unwrap();
    assert!(ensure_runtime_home(&file).is_err());
}

/// `env` run with the built environment shows the runtime HOME and no credential.
#[tokio::test]
async fn a_real_child_sees_only_the_built_environment() {
    let dir = tempfile::tempdir().unwrap();
    let home = dir.path().join("home");
    ensure_runtime_home(&home).unwrap();
    let mut host: Vec<(String, String)> = std::env::vars().collect();
    host.extend(host_env().into_iter().filter(|(k, _)| k != "PATH"));
    let env = child_env(host, &home, &[]);
    let spec = ExecSpec::new(
        "env",
        dir.path(),
        env.clone(),
        Duration::from_secs(10),
        dir.path().join("artifacts"),
    );
    let result = run(spec, CancellationToken::new(), |_| {}, |_, _| {})
        .await
        .unwrap();
    assert_eq!(result.exit_code, Some(0));
    let out = &result.stdout.tail;
    assert!(
        out.lines()
            .any(|line| line == format!("HOME={}", home.display())),
        "{out}"
    );
    for name in [
        "OPENAI_API_KEY=",
        "AWS_SECRET_ACCESS_KEY=",
        "DEMIURGE_OPENAI_API_KEY=",
        "SLACK_BOT_TOKEN=",
    ] {
        assert!(!out.contains(name), "{name} leaked: {out}");
    }
    for secret in SECRET_VALUES {
        assert!(!out.contains(secret), "{secret} leaked");
    }
    // /bin/sh may add PWD/SHLVL/_ of its own; everything else is what we passed.
    for line in out.lines() {
        let key = line.split('=').next().unwrap_or_default();
        assert!(
            get(&env, key).is_some() || ["PWD", "SHLVL", "_", "OLDPWD"].contains(&key),
            "unexpected variable {key}"
        );
    }
}
