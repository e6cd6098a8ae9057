use super::*;

use std::path::{Path, PathBuf};

fn sens(path: &str, access: Access) -> Option<&'static str> {
    is_sensitive(Path::new(path), access).kind()
}

fn assert_sensitive_table(cases: &[(&str, Option<&str>)], access: Access) {
    for (path, want) in cases {
        assert_eq!(sens(path, access), *want, "{path:?} ({access:?})");
    }
}

// ---------------------------------------------------------------------------
// is_sensitive (pure)

#[test]
fn sensitive_dir_segments() {
    assert_sensitive_table(
        &[
            (".git", Some("git")),
            (".git/config", Some("git")),
            ("sub/.git/HEAD", Some("git")),
            (".venv/bin/python", Some("venv")),
            (".demiurge/state.db", Some("demiurge_state")),
            (".ssh", Some("ssh")),
            (".ssh/config", Some("ssh")),
            (".aws/config", Some("aws")),
            ("home/.kube/config", Some("kube")),
        ],
        Access::Read,
    );
}

#[test]
fn dir_segment_lookalikes_are_not_sensitive() {
    assert_sensitive_table(
        &[
            (".gitignore", None),
            (".github/workflows/ci.yml", None),
            (".gitattributes", None),
            ("x.git", None),
            ("git/config", None),
            ("venv/bin/python", None),
            (".venv2/x", None),
            ("demiurge/x", None),
            ("ssh/config", None),
            (".sshd", None),
            ("aws/creds", None),
            (".kubeconfig", None),
        ],
        Access::Read,
    );
}

#[test]
fn env_prefix_rule() {
    assert_sensitive_table(
        &[
            (".env", Some("env_file")),
            (".env.local", Some("env_file")),
            (".env.example", Some("env_file")),
            (".envrc", Some("env_file")),
            (".environment", Some("env_file")),
            ("app/.env.production", Some("env_file")),
            (".env/readme.md", Some("env_file")),
        ],
        Access::Read,
    );
}

#[test]
fn env_lookalikes_are_not_sensitive() {
    // Only a segment *starting with* `.env` counts, exactly as upstream.
    assert_sensitive_table(
        &[
            ("environment.txt", None),
            ("my.env.example", None),
            ("env", None),
            ("x.env", None),
            ("app.env", None),
            (".en", None),
            ("_env", None),
            ("dotenv/.xenv", None),
        ],
        Access::Read,
    );
}

#[test]
fn credential_file_names_last_segment_only() {
    assert_sensitive_table(
        &[
            (".netrc", Some("netrc")),
            (".npmrc", Some("npmrc")),
            (".pgpass", Some("pgpass")),
            (".pypirc", Some("pypirc")),
            ("project/.npmrc", Some("npmrc")),
            // Not the last segment: not matched (upstream rule).
            (".netrc/x", None),
            (".npmrc/child", None),
            // Look-alikes.
            (".netrc.bak", None),
            ("netrc", None),
            ("npmrc", None),
            (".pgpass~", None),
        ],
        Access::Read,
    );
}

#[test]
fn private_key_names() {
    assert_sensitive_table(
        &[
            ("id_rsa", Some("private_key")),
            ("id_dsa", Some("private_key")),
            ("id_ecdsa", Some("private_key")),
            ("id_ed25519", Some("private_key")),
            ("keys/id_ed25519", Some("private_key")),
            ("server.pem", Some("private_key")),
            ("certs/ca.pem", Some("private_key")),
            ("tls.key", Some("private_key")),
            (".key", Some("private_key")),
            ("private.key", Some("private_key")),
            ("my_private_key.txt", Some("private_key")),
            ("privatekey", Some("private_key")),
            ("PRIVATE-KEYS.json", Some("private_key")),
            // `key` may be part of another word: upstream matches it anyway.
            ("monkey_private.txt", Some("private_key")),
        ],
        Access::Read,
    );
}

#[test]
fn private_key_lookalikes_are_not_sensitive() {
    assert_sensitive_table(
        &[
            ("id_rsa.pub", None),
            ("id_ed25519.pub", None),
            ("id_rsa_backup", None),
            ("key.txt", None),
            ("keychain", None),
            ("private.txt", None),
            ("private/notes.md", None),
            ("keys/public.txt", None),
            ("server.pem.txt", None),
            ("pem", None),
            ("key", None),
            // Directory segments do not count for the key rules.
            ("private-keys/readme.md", None),
            ("id_rsa/readme.md", None),
        ],
        Access::Read,
    );
}

#[test]
fn write_only_manifest_rules() {
    assert_sensitive_table(
        &[
            ("pyproject.toml", None),
            ("uv.lock", None),
            ("sub/pyproject.toml", None),
        ],
        Access::Read,
    );
    assert_sensitive_table(
        &[
            ("pyproject.toml", Some("pyproject")),
            ("uv.lock", Some("uv_lock")),
            ("sub/pyproject.toml", Some("pyproject")),
            ("UV.LOCK", Some("uv_lock")),
            ("requirements.txt", None),
            ("pyproject.toml.bak", None),
            ("pyproject.toml/x", None),
            ("Cargo.toml", None),
        ],
        Access::Write,
    );
}

#[test]
fn read_rules_also_apply_to_writes() {
    for path in [
        ".env",
        ".git/x",
        ".ssh/id_rsa",
        ".npmrc",
        "a.pem",
        ".kube/c",
    ] {
        assert!(
            is_sensitive(Path::new(path), Access::Write).is_sensitive(),
            "{path}"
        );
    }
}

#[test]
fn sensitivity_is_case_insensitive() {
    assert_sensitive_table(
        &[
            (".ENV", Some("env_file")),
            (".Env.Local", Some("env_file")),
            (".GIT/HEAD", Some("git")),
            (".SSH/config", Some("ssh")),
            (".Aws/credentials", Some("aws")),
            (".KUBE/config", Some("kube")),
            (".VENV/x", Some("venv")),
            (".Demiurge/x", Some("demiurge_state")),
            (".NETRC", Some("netrc")),
            (".NpmRc", Some("npmrc")),
            (".PGPASS", Some("pgpass")),
            (".PyPiRc", Some("pypirc")),
            ("ID_RSA", Some("private_key")),
            ("Id_Ed25519", Some("private_key")),
            ("SERVER.PEM", Some("private_key")),
            ("Tls.Key", Some("private_key")),
            ("MyPrivateKey", Some("private_key")),
        ],
        Access::Read,
    );
}

#[test]
fn sensitivity_uses_unicode_lowercase() {
    // U+212A KELVIN SIGN lower-cases to ASCII `k`, as in Python's str.lower().
    assert_eq!(sens(".\u{212A}ube/config", Access::Read), Some("kube"));
    assert_eq!(sens("\u{212A}eys.pem", Access::Read), Some("private_key"));
    // A Cyrillic look-alike does not fold to ASCII.
    assert_eq!(sens(".\u{0435}nv", Access::Read), None);
}

#[test]
fn first_matching_rule_names_the_kind() {
    assert_sensitive_table(
        &[
            (".ssh/id_rsa", Some("ssh")),
            (".env/.git/x", Some("git")),
            (".aws/.ssh/x", Some("aws")),
            (".env/id_rsa", Some("env_file")),
            (".env/.npmrc", Some("env_file")),
            ("a/.npmrc.key", Some("private_key")),
        ],
        Access::Read,
    );
    assert_eq!(sens(".git/pyproject.toml", Access::Write), Some("git"));
}

#[test]
fn sensitivity_skips_non_normal_components() {
    assert_sensitive_table(
        &[
            ("", None),
            (".", None),
            ("/", None),
            ("..", None),
            ("../.env", Some("env_file")),
            ("/home/u/.ssh/id_rsa", Some("ssh")),
            ("/etc/passwd", None),
            ("./a/./b", None),
        ],
        Access::Read,
    );
}

#[cfg(unix)]
#[test]
fn sensitivity_handles_non_utf8_names() {
    use std::ffi::OsStr;
    use std::os::unix::ffi::OsStrExt;
    let env = Path::new(OsStr::from_bytes(b".env\xff\xfe"));
    assert_eq!(is_sensitive(env, Access::Read).kind(), Some("env_file"));
    let plain = Path::new(OsStr::from_bytes(b"data\xff.txt"));
    assert_eq!(is_sensitive(plain, Access::Read), Sensitivity::None);
}

#[test]
fn sensitivity_helpers() {
    assert!(!Sensitivity::None.is_sensitive());
    assert_eq!(Sensitivity::None.kind(), None);
    assert!(Sensitivity::Sensitive("ssh").is_sensitive());
    assert_eq!(Sensitivity::Sensitive("ssh").kind(), Some("ssh"));
}

// ---------------------------------------------------------------------------
// normalize_relative (pure)

#[test]
fn normalize_relative_collapses() {
    let cases = [
        ("a/./b", "a/b"),
        ("a/../b", "b"),
        ("a/b/../../c", "c"),
        ("./a//b/", "a/b"),
        ("a/..", ""),
        ("", ""),
        (".", ""),
        ("données/./日本", "données/日本"),
    ];
    for (input, want) in cases {
        assert_eq!(
            normalize_relative(Path::new(input)),
            Some(PathBuf::from(want)),
            "{input}"
        );
    }
}

#[test]
fn normalize_relative_refuses_climbing_and_absolute() {
    for input in ["..", "../a", "a/../..", "a/../../b", "./..", "/abs", "/"] {
        assert_eq!(normalize_relative(Path::new(input)), None, "{input}");
    }
}

// ---------------------------------------------------------------------------
// classify (pure)

#[test]
fn classify_inside() {
    let c = classify(
        Path::new("/srv/ws"),
        Path::new("/srv/ws/a/.env"),
        Access::Read,
        "a/.env",
    )
    .unwrap();
    assert!(c.inside);
    assert_eq!(c.rel, Some(PathBuf::from("a/.env")));
    assert_eq!(c.sensitivity, Sensitivity::Sensitive("env_file"));
}

#[test]
fn classify_root_itself() {
    let c = classify(
        Path::new("/srv/ws"),
        Path::new("/srv/ws"),
        Access::Write,
        ".",
    )
    .unwrap();
    assert!(c.inside);
    assert_eq!(c.rel, Some(PathBuf::new()));
    assert_eq!(c.sensitivity, Sensitivity::None);
}

#[test]
fn classify_outside_read_and_write() {
    let c = classify(
        Path::new("/srv/ws"),
        Path::new("/srv/ws2/x"),
        Access::Read,
        "../ws2/x",
    )
    .unwrap();
    assert!(!c.inside);
    assert_eq!(c.rel, None);
    assert_eq!(
        classify(
            Path::new("/srv/ws"),
            Path::new("/srv/ws2/x"),
            Access::Write,
            "../ws2/x"
        ),
        Err(PathError::EscapesWorkspace("../ws2/x".into()))
    );
}

#[test]
fn classify_relative_vs_absolute_sensitivity() {
    // Inside: judged relative to the root, so the root's `.git` does not count.
    let inside = classify(
        Path::new("/repo/.git/ws"),
        Path::new("/repo/.git/ws/a.txt"),
        Access::Read,
        "a.txt",
    )
    .unwrap();
    assert_eq!(inside.sensitivity, Sensitivity::None);
    // Outside: judged on the whole path.
    let outside = classify(
        Path::new("/srv/ws"),
        Path::new("/home/u/.ssh/known_hosts"),
        Access::Read,
        "/home/u/.ssh/known_hosts",
    )
    .unwrap();
    assert_eq!(outside.sensitivity, Sensitivity::Sensitive("ssh"));
}

// ---------------------------------------------------------------------------
// Resolved helpers and error messages

#[test]
fn resolved_display_and_approval() {
    let inside = Resolved {
        abs: PathBuf::from("/ws/a/b.txt"),
        rel: Some(PathBuf::from("a/b.txt")),
        inside: true,
        sensitivity: Sensitivity::None,
        exists: true,
    };
    assert_eq!(inside.display(), "a/b.txt");
    assert!(!inside.read_needs_approval());

    let sensitive = Resolved {
        sensitivity: Sensitivity::Sensitive("env_file"),
        ..inside.clone()
    };
    assert!(sensitive.read_needs_approval());

    let outside = Resolved {
        abs: PathBuf::from("/etc/hosts"),
        rel: None,
        inside: false,
        sensitivity: Sensitivity::None,
        exists: true,
    };
    assert_eq!(outside.display(), "/etc/hosts");
    assert!(outside.read_needs_approval());
}

#[test]
fn error_messages() {
    assert_eq!(PathError::Empty.to_string(), "path is empty");
    assert_eq!(PathError::Nul.to_string(), "path contains a NUL byte");
    assert_eq!(PathError::TooLong.to_string(), "path is too long");
    assert_eq!(
        PathError::EscapesWorkspace("../x".into()).to_string(),
        "path escapes workspace: ../x"
    );
    assert_eq!(
        PathError::NotFound("a/../b".into()).to_string(),
        "path does not exist: a/../b"
    );
    assert_eq!(PathError::Io("boom".into()).to_string(), "boom");
}
