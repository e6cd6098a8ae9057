use super::*;

use std::path::{Path, PathBuf};

use tempfile::TempDir;

use crate::policy::workspace::{Sensitivity, MAX_COMPONENT_BYTES};

// ---------------------------------------------------------------------------
// Fixture: <tmp>/ws (the workspace) and <tmp>/outside, both canonical.

struct Fx {
    _tmp: TempDir,
    base: PathBuf,
    root: PathBuf,
    outside: PathBuf,
}

fn fx() -> Fx {
    let tmp = tempfile::tempdir().unwrap();
    let base = fs::canonicalize(tmp.path()).unwrap();
    let root = base.join("ws");
    let outside = base.join("outside");
    fs::create_dir(&root).unwrap();
    fs::create_dir(&outside).unwrap();
    Fx {
        _tmp: tmp,
        base,
        root,
        outside,
    }
}

fn write(path: &Path, text: &str) {
    if let Some(parent) = path.parent() {
        fs::create_dir_all(parent).unwrap();
    }
    fs::write(path, text).unwrap();
}

#[cfg(unix)]
fn link(target: impl AsRef<Path>, at: &Path) {
    std::os::unix::fs::symlink(target, at).unwrap();
}

fn read(fx: &Fx, raw: &str) -> Resolved {
    resolve(&fx.root, raw, Access::Read).unwrap_or_else(|e| panic!("read {raw:?}: {e}"))
}

fn write_ok(fx: &Fx, raw: &str) -> Resolved {
    resolve(&fx.root, raw, Access::Write).unwrap_or_else(|e| panic!("write {raw:?}: {e}"))
}

fn write_err(fx: &Fx, raw: &str) -> PathError {
    match resolve(&fx.root, raw, Access::Write) {
        Ok(r) => panic!("write {raw:?} should fail, got {r:?}"),
        Err(e) => e,
    }
}

fn rel(r: &Resolved) -> PathBuf {
    r.rel
        .clone()
        .unwrap_or_else(|| panic!("expected inside: {r:?}"))
}

// ---------------------------------------------------------------------------
// check_raw

#[test]
fn raw_empty_is_rejected() {
    assert_eq!(check_raw(""), Err(PathError::Empty));
    let fx = fx();
    assert_eq!(resolve(&fx.root, "", Access::Read), Err(PathError::Empty));
    assert_eq!(resolve(&fx.root, "", Access::Write), Err(PathError::Empty));
}

#[test]
fn raw_nul_is_rejected() {
    assert_eq!(check_raw("a\0b"), Err(PathError::Nul));
    assert_eq!(check_raw("\0"), Err(PathError::Nul));
    let fx = fx();
    assert_eq!(
        resolve(&fx.root, "note.txt\0.png", Access::Read),
        Err(PathError::Nul)
    );
}

#[test]
fn raw_whitespace_is_a_name_not_empty() {
    assert!(check_raw(" ").is_ok());
    let fx = fx();
    let r = read(&fx, " ");
    assert_eq!(rel(&r), PathBuf::from(" "));
    assert!(!r.exists);
}

#[test]
fn raw_total_length_limit() {
    let ok = "a/".repeat(MAX_PATH_BYTES / 2);
    assert_eq!(ok.len(), MAX_PATH_BYTES);
    assert!(check_raw(&ok).is_ok());
    let long = format!("{ok}a");
    assert_eq!(check_raw(&long), Err(PathError::TooLong));
}

#[test]
fn raw_component_length_limit() {
    let ok = "x".repeat(MAX_COMPONENT_BYTES);
    assert!(check_raw(&ok).is_ok());
    let long = "x".repeat(MAX_COMPONENT_BYTES + 1);
    assert_eq!(check_raw(&long), Err(PathError::TooLong));
    assert_eq!(check_raw(&format!("dir/{long}/f")), Err(PathError::TooLong));
}

#[test]
fn raw_component_length_counts_bytes_not_chars() {
    // 128 two-byte characters = 256 bytes.
    let name = "é".repeat(128);
    assert_eq!(name.chars().count(), 128);
    assert_eq!(check_raw(&name), Err(PathError::TooLong));
    assert!(check_raw(&"é".repeat(127)).is_ok());
}

#[test]
fn joined_path_length_limit() {
    let fx = fx();
    // Fits as an argument, but not once joined to the root.
    let raw = "abcdefg/".repeat((MAX_PATH_BYTES - 8) / 8);
    assert!(check_raw(&raw).is_ok());
    assert!(fx.root.as_os_str().len() + raw.len() > MAX_PATH_BYTES);
    assert_eq!(
        resolve(&fx.root, &raw, Access::Read),
        Err(PathError::TooLong)
    );
}

#[test]
fn very_long_existing_name_resolves() {
    let fx = fx();
    let name = "n".repeat(MAX_COMPONENT_BYTES);
    write(&fx.root.join(&name), "x");
    let r = read(&fx, &name);
    assert!(r.exists);
    assert_eq!(rel(&r), PathBuf::from(&name));
}

// ---------------------------------------------------------------------------
// resolve: plain paths

#[test]
fn relative_existing_file() {
    let fx = fx();
    write(&fx.root.join("note.txt"), "hello");
    let r = read(&fx, "note.txt");
    assert_eq!(r.abs, fx.root.join("note.txt"));
    assert_eq!(rel(&r), PathBuf::from("note.txt"));
    assert!(r.inside);
    assert!(r.exists);
    assert_eq!(r.sensitivity, Sensitivity::None);
    assert_eq!(r.display(), "note.txt");
}

#[test]
fn relative_and_absolute_agree() {
    let fx = fx();
    write(&fx.root.join("note.txt"), "hello");
    let a = read(&fx, "note.txt");
    let b = read(&fx, fx.root.join("note.txt").to_str().unwrap());
    assert_eq!(a, b);
}

#[test]
fn dot_is_the_root() {
    let fx = fx();
    fs::create_dir_all(fx.root.join("a")).unwrap();
    for raw in [".", "./", "./.", "a/..", "a/./../."] {
        let r = read(&fx, raw);
        assert_eq!(r.abs, fx.root, "{raw}");
        assert_eq!(r.rel, Some(PathBuf::new()), "{raw}");
        assert!(r.inside && r.exists, "{raw}");
        assert_eq!(r.display(), ".", "{raw}");
    }
    assert!(write_ok(&fx, ".").inside);
}

#[test]
fn absolute_root_is_inside() {
    let fx = fx();
    let r = read(&fx, fx.root.to_str().unwrap());
    assert_eq!(r.rel, Some(PathBuf::new()));
    assert!(r.inside);
}

#[test]
fn nested_existing_file() {
    let fx = fx();
    write(&fx.root.join("src/lib/mod.rs"), "x");
    let r = read(&fx, "src/lib/mod.rs");
    assert_eq!(rel(&r), PathBuf::from("src/lib/mod.rs"));
    assert_eq!(r.display(), "src/lib/mod.rs");
    assert!(r.exists);
}

#[test]
fn missing_file_resolves_with_exists_false() {
    let fx = fx();
    let r = read(&fx, "nope.txt");
    assert!(r.inside);
    assert!(!r.exists);
    assert_eq!(r.abs, fx.root.join("nope.txt"));
}

#[test]
fn missing_nested_path_for_write_is_the_create_case() {
    let fx = fx();
    let r = write_ok(&fx, "new/dir/file.txt");
    assert!(r.inside);
    assert!(!r.exists);
    assert_eq!(rel(&r), PathBuf::from("new/dir/file.txt"));
    assert_eq!(r.abs, fx.root.join("new/dir/file.txt"));
}

#[test]
fn existing_file_for_write() {
    let fx = fx();
    write(&fx.root.join("a.txt"), "x");
    let r = write_ok(&fx, "a.txt");
    assert!(r.exists && r.inside);
}

#[test]
fn existing_directory_resolves() {
    let fx = fx();
    fs::create_dir_all(fx.root.join("d/e")).unwrap();
    let r = read(&fx, "d/e/");
    assert!(r.exists);
    assert_eq!(rel(&r), PathBuf::from("d/e"));
}

#[test]
fn redundant_separators_and_dots() {
    let fx = fx();
    write(&fx.root.join("a/b.txt"), "x");
    for raw in ["a//b.txt", "./a/./b.txt", "a/b.txt/", ".//a//./b.txt"] {
        let r = read(&fx, raw);
        assert_eq!(rel(&r), PathBuf::from("a/b.txt"), "{raw}");
        assert!(r.exists, "{raw}");
    }
}

#[test]
fn dotdot_inside_stays_inside() {
    let fx = fx();
    fs::create_dir_all(fx.root.join("a/b")).unwrap();
    write(&fx.root.join("c.txt"), "x");
    let r = read(&fx, "a/b/../../c.txt");
    assert_eq!(rel(&r), PathBuf::from("c.txt"));
    assert!(r.exists);
    assert_eq!(write_ok(&fx, "a/../c.txt").abs, fx.root.join("c.txt"));
}

#[test]
fn dotdot_escape_read_is_outside() {
    let fx = fx();
    write(&fx.base.join("outside.txt"), "o");
    let r = read(&fx, "../outside.txt");
    assert!(!r.inside);
    assert_eq!(r.rel, None);
    assert_eq!(r.abs, fx.base.join("outside.txt"));
    assert!(r.exists);
    assert!(r.read_needs_approval());
}

#[test]
fn dotdot_escape_write_is_denied() {
    let fx = fx();
    assert_eq!(
        write_err(&fx, "../outside.txt"),
        PathError::EscapesWorkspace("../outside.txt".into())
    );
    assert_eq!(
        write_err(&fx, "../outside.txt").to_string(),
        "path escapes workspace: ../outside.txt"
    );
}

#[test]
fn dot_slash_dotdot_dotdot_escape() {
    let fx = fx();
    fs::create_dir_all(fx.root.join("a")).unwrap();
    let r = read(&fx, "./a/../../x");
    assert!(!r.inside);
    assert_eq!(r.abs, fx.base.join("x"));
    assert!(matches!(
        write_err(&fx, "./a/../../x"),
        PathError::EscapesWorkspace(_)
    ));
}

#[test]
fn climbing_out_and_back_in_is_inside() {
    let fx = fx();
    write(&fx.root.join("f.txt"), "x");
    let r = read(&fx, "../ws/f.txt");
    assert!(r.inside);
    assert_eq!(rel(&r), PathBuf::from("f.txt"));
    assert!(write_ok(&fx, "../ws/new.txt").inside);
}

#[test]
fn many_dotdots_stop_at_filesystem_root() {
    let fx = fx();
    let r = read(&fx, &"../".repeat(64));
    assert_eq!(r.abs, PathBuf::from("/"));
    assert!(!r.inside);
    assert!(r.exists);
    assert!(matches!(
        write_err(&fx, "../../../../../../../../../../etc/passwd"),
        PathError::EscapesWorkspace(_)
    ));
}

#[test]
fn filesystem_root_and_parent_of_it() {
    let fx = fx();
    assert_eq!(read(&fx, "/").abs, PathBuf::from("/"));
    assert_eq!(read(&fx, "/..").abs, PathBuf::from("/"));
    assert!(!read(&fx, "/").inside);
    assert!(matches!(
        write_err(&fx, "/"),
        PathError::EscapesWorkspace(_)
    ));
}

#[test]
fn absolute_outside_read_is_allowed_but_outside() {
    let fx = fx();
    let target = fx.outside.join("outside.txt");
    write(&target, "o");
    let r = read(&fx, target.to_str().unwrap());
    assert!(!r.inside);
    assert!(r.exists);
    assert_eq!(r.abs, target);
    assert_eq!(r.sensitivity, Sensitivity::None);
    assert_eq!(r.display(), target.to_str().unwrap());
}

#[test]
fn absolute_outside_write_is_denied_with_argument_in_message() {
    let fx = fx();
    let target = fx.outside.join("new.txt");
    let raw = target.to_str().unwrap();
    assert_eq!(
        write_err(&fx, raw).to_string(),
        format!("path escapes workspace: {raw}")
    );
    assert!(!target.exists());
}

#[test]
fn sibling_with_common_prefix_is_outside() {
    let fx = fx();
    let sibling = fx.base.join("ws2");
    write(&sibling.join("f.txt"), "x");
    let raw = sibling.join("f.txt");
    assert!(!read(&fx, raw.to_str().unwrap()).inside);
    assert!(!read(&fx, "../ws2/f.txt").inside);
    assert!(matches!(
        write_err(&fx, "../ws2/f.txt"),
        PathError::EscapesWorkspace(_)
    ));
}

#[test]
fn dotdot_after_missing_component_is_refused() {
    let fx = fx();
    for raw in ["missing/../x.txt", "missing/..", "a/missing/../../x"] {
        assert_eq!(
            resolve(&fx.root, raw, Access::Read),
            Err(PathError::NotFound(raw.into())),
            "{raw}"
        );
        assert_eq!(
            resolve(&fx.root, raw, Access::Write),
            Err(PathError::NotFound(raw.into())),
            "{raw}"
        );
    }
    assert_eq!(
        PathError::NotFound("missing/..".into()).to_string(),
        "path does not exist: missing/.."
    );
}

#[test]
fn component_below_a_file_does_not_exist() {
    let fx = fx();
    write(&fx.root.join("file.txt"), "x");
    let r = read(&fx, "file.txt/child");
    assert!(!r.exists);
    assert!(r.inside);
    assert_eq!(rel(&r), PathBuf::from("file.txt/child"));
}

#[test]
fn dotdot_after_a_file_is_refused() {
    let fx = fx();
    write(&fx.root.join("file.txt"), "x");
    assert_eq!(
        resolve(&fx.root, "file.txt/../other", Access::Read),
        Err(PathError::NotFound("file.txt/../other".into()))
    );
}

#[test]
fn unicode_names() {
    let fx = fx();
    write(&fx.root.join("données/日本語 ファイル.txt"), "x");
    let r = read(&fx, "données/日本語 ファイル.txt");
    assert!(r.exists && r.inside);
    assert_eq!(r.display(), "données/日本語 ファイル.txt");
    let w = write_ok(&fx, "données/🚀/новый.md");
    assert!(!w.exists);
    assert_eq!(rel(&w), PathBuf::from("données/🚀/новый.md"));
}

#[test]
fn unicode_dotdot_escape_is_still_caught() {
    let fx = fx();
    fs::create_dir_all(fx.root.join("ü")).unwrap();
    assert!(matches!(
        write_err(&fx, "ü/../../ü.txt"),
        PathError::EscapesWorkspace(_)
    ));
}

#[test]
fn tilde_is_a_literal_name() {
    let fx = fx();
    let r = read(&fx, "~/notes.txt");
    assert!(r.inside);
    assert_eq!(rel(&r), PathBuf::from("~/notes.txt"));
    assert!(write_ok(&fx, "~").inside);
}

#[cfg(unix)]
#[test]
fn backslash_is_a_literal_character_on_unix() {
    let fx = fx();
    let r = read(&fx, "..\\..\\etc\\passwd");
    assert!(r.inside);
    assert_eq!(r.rel.unwrap().components().count(), 1);
}

#[test]
fn root_given_non_canonically() {
    let fx = fx();
    write(&fx.root.join("f.txt"), "x");
    let odd_root = fx.base.join("outside/../ws/.");
    let r = resolve(&odd_root, "f.txt", Access::Write).unwrap();
    assert_eq!(r.abs, fx.root.join("f.txt"));
    assert_eq!(rel(&r), PathBuf::from("f.txt"));
}

#[test]
fn missing_root_is_an_io_error() {
    let fx = fx();
    let err = resolve(&fx.base.join("nope"), "a", Access::Read).unwrap_err();
    assert!(matches!(err, PathError::Io(ref m) if m.starts_with("workspace root is unavailable")));
}

#[test]
fn root_that_is_a_file_is_an_io_error() {
    let fx = fx();
    let file = fx.base.join("file");
    write(&file, "x");
    assert_eq!(
        resolve(&file, "a", Access::Read),
        Err(PathError::Io("workspace root is not a directory".into()))
    );
}

// ---------------------------------------------------------------------------
// resolve: symlinks

#[cfg(unix)]
#[test]
fn symlinked_file_escaping_read_is_outside() {
    let fx = fx();
    let secret = fx.outside.join("secret.txt");
    write(&secret, "s");
    link(&secret, &fx.root.join("innocent.txt"));
    let r = read(&fx, "innocent.txt");
    assert!(!r.inside);
    assert_eq!(r.abs, secret);
    assert!(r.exists);
    assert!(r.read_needs_approval());
}

#[cfg(unix)]
#[test]
fn symlinked_file_escaping_write_is_denied() {
    let fx = fx();
    let secret = fx.outside.join("secret.txt");
    write(&secret, "s");
    link(&secret, &fx.root.join("innocent.txt"));
    assert_eq!(
        write_err(&fx, "innocent.txt"),
        PathError::EscapesWorkspace("innocent.txt".into())
    );
}

#[cfg(unix)]
#[test]
fn symlinked_dir_escaping_read_is_outside() {
    let fx = fx();
    write(&fx.outside.join("secret.txt"), "s");
    link(&fx.outside, &fx.root.join("link"));
    let r = read(&fx, "link/secret.txt");
    assert!(!r.inside);
    assert_eq!(r.abs, fx.outside.join("secret.txt"));
}

#[cfg(unix)]
#[test]
fn symlinked_dir_escaping_write_is_denied() {
    let fx = fx();
    write(&fx.outside.join("secret.txt"), "s");
    link(&fx.outside, &fx.root.join("link"));
    assert!(matches!(
        write_err(&fx, "link/secret.txt"),
        PathError::EscapesWorkspace(_)
    ));
    assert!(matches!(
        write_err(&fx, "link"),
        PathError::EscapesWorkspace(_)
    ));
}

#[cfg(unix)]
#[test]
fn new_file_under_parent_symlinked_outside_is_denied() {
    let fx = fx();
    link(&fx.outside, &fx.root.join("out"));
    for raw in ["out/new.txt", "out/deeper/new.txt", "./out/x/../y"] {
        let err = resolve(&fx.root, raw, Access::Write).unwrap_err();
        assert!(
            matches!(err, PathError::EscapesWorkspace(_) | PathError::NotFound(_)),
            "{raw}: {err}"
        );
    }
    assert!(matches!(
        write_err(&fx, "out/new.txt"),
        PathError::EscapesWorkspace(_)
    ));
    assert!(!fx.outside.join("new.txt").exists());
}

#[cfg(unix)]
#[test]
fn relative_symlink_escaping() {
    let fx = fx();
    write(&fx.outside.join("s.txt"), "s");
    fs::create_dir_all(fx.root.join("sub")).unwrap();
    link("../../outside", &fx.root.join("sub/rel"));
    let r = read(&fx, "sub/rel/s.txt");
    assert!(!r.inside);
    assert_eq!(r.abs, fx.outside.join("s.txt"));
    assert!(matches!(
        write_err(&fx, "sub/rel/s.txt"),
        PathError::EscapesWorkspace(_)
    ));
}

#[cfg(unix)]
#[test]
fn symlink_staying_inside_file() {
    let fx = fx();
    write(&fx.root.join("real/data.txt"), "x");
    link("real/data.txt", &fx.root.join("alias.txt"));
    let r = write_ok(&fx, "alias.txt");
    assert!(r.inside && r.exists);
    assert_eq!(rel(&r), PathBuf::from("real/data.txt"));
    assert_eq!(r.display(), "real/data.txt");
}

#[cfg(unix)]
#[test]
fn symlink_staying_inside_dir() {
    let fx = fx();
    fs::create_dir_all(fx.root.join("a/b")).unwrap();
    link(fx.root.join("a/b"), &fx.root.join("short"));
    let r = write_ok(&fx, "short/new.txt");
    assert!(!r.exists);
    assert_eq!(rel(&r), PathBuf::from("a/b/new.txt"));
}

#[cfg(unix)]
#[test]
fn symlink_to_workspace_ancestor_from_subdir_stays_inside() {
    let fx = fx();
    write(&fx.root.join("top.txt"), "x");
    fs::create_dir_all(fx.root.join("sub")).unwrap();
    link("..", &fx.root.join("sub/up"));
    let r = read(&fx, "sub/up/top.txt");
    assert!(r.inside);
    assert_eq!(rel(&r), PathBuf::from("top.txt"));
    // One more level is outside.
    let above = read(&fx, "sub/up/..");
    assert!(!above.inside);
    assert_eq!(above.abs, fx.base);
}

#[cfg(unix)]
#[test]
fn symlink_chain_ending_outside() {
    let fx = fx();
    write(&fx.outside.join("t.txt"), "x");
    link(fx.outside.join("t.txt"), &fx.root.join("c"));
    link("c", &fx.root.join("b"));
    link("b", &fx.root.join("a"));
    let r = read(&fx, "a");
    assert!(!r.inside);
    assert_eq!(r.abs, fx.outside.join("t.txt"));
    assert!(matches!(
        write_err(&fx, "a"),
        PathError::EscapesWorkspace(_)
    ));
}

#[cfg(unix)]
#[test]
fn dangling_symlink_pointing_outside_cannot_be_written_through() {
    let fx = fx();
    link(fx.outside.join("planted.txt"), &fx.root.join("trap.txt"));
    assert!(matches!(
        write_err(&fx, "trap.txt"),
        PathError::EscapesWorkspace(_)
    ));
    let r = read(&fx, "trap.txt");
    assert!(!r.inside);
    assert!(!r.exists);
    assert_eq!(r.abs, fx.outside.join("planted.txt"));
}

#[cfg(unix)]
#[test]
fn dangling_symlink_pointing_inside_resolves_to_target() {
    let fx = fx();
    link("later/target.txt", &fx.root.join("pending.txt"));
    let r = write_ok(&fx, "pending.txt");
    assert!(!r.exists);
    assert_eq!(rel(&r), PathBuf::from("later/target.txt"));
}

#[cfg(unix)]
#[test]
fn dotdot_through_symlink_is_physical_not_lexical() {
    let fx = fx();
    fs::create_dir_all(fx.outside.join("deep/dir")).unwrap();
    link(fx.outside.join("deep/dir"), &fx.root.join("l"));
    // Lexically "l/.." is the root; physically it is outside/deep.
    let r = read(&fx, "l/..");
    assert!(!r.inside);
    assert_eq!(r.abs, fx.outside.join("deep"));
    assert!(matches!(
        write_err(&fx, "l/../x.txt"),
        PathError::EscapesWorkspace(_)
    ));
}

#[cfg(unix)]
#[test]
fn dotdot_through_inside_symlink_lands_physically() {
    let fx = fx();
    fs::create_dir_all(fx.root.join("a/b/c")).unwrap();
    link(fx.root.join("a/b/c"), &fx.root.join("l"));
    // Lexically "l/../../x" escapes; physically it is a/x.
    let r = write_ok(&fx, "l/../../x");
    assert_eq!(rel(&r), PathBuf::from("a/x"));
}

#[cfg(unix)]
#[test]
fn symlink_to_filesystem_root() {
    let fx = fx();
    link("/", &fx.root.join("slash"));
    let r = read(&fx, "slash/etc");
    assert!(!r.inside);
    assert_eq!(r.abs, PathBuf::from("/etc"));
    assert!(matches!(
        write_err(&fx, "slash/tmp/x"),
        PathError::EscapesWorkspace(_)
    ));
}

#[cfg(unix)]
#[test]
fn symlink_loop_is_an_error() {
    let fx = fx();
    link("b", &fx.root.join("a"));
    link("a", &fx.root.join("b"));
    let err = resolve(&fx.root, "a", Access::Read).unwrap_err();
    assert!(matches!(err, PathError::Io(ref m) if m.contains("too many levels")));
    link("self", &fx.root.join("self"));
    let err = resolve(&fx.root, "self/x", Access::Write).unwrap_err();
    assert!(matches!(err, PathError::Io(_)));
}

#[cfg(unix)]
#[test]
fn symlink_hop_limit() {
    let fx = fx();
    write(&fx.root.join("l0"), "x");
    for i in 1..=MAX_SYMLINK_HOPS + 1 {
        link(format!("l{}", i - 1), &fx.root.join(format!("l{i}")));
    }
    let ok = read(&fx, &format!("l{MAX_SYMLINK_HOPS}"));
    assert_eq!(rel(&ok), PathBuf::from("l0"));
    assert!(matches!(
        resolve(
            &fx.root,
            &format!("l{}", MAX_SYMLINK_HOPS + 1),
            Access::Read
        ),
        Err(PathError::Io(_))
    ));
}

#[cfg(unix)]
#[test]
fn root_reached_through_a_symlink_alias() {
    let fx = fx();
    write(&fx.root.join("f.txt"), "x");
    let alias = fx.base.join("alias");
    link(&fx.root, &alias);
    // Root passed as the alias, path given absolute through the alias.
    let raw = alias.join("f.txt");
    let r = resolve(&alias, raw.to_str().unwrap(), Access::Write).unwrap();
    assert!(r.inside);
    assert_eq!(r.abs, fx.root.join("f.txt"));
    // And through the canonical root.
    assert!(write_ok(&fx, raw.to_str().unwrap()).inside);
}

#[cfg(unix)]
#[test]
fn sensitivity_follows_the_symlink_target() {
    let fx = fx();
    write(&fx.root.join(".env"), "SECRET=1");
    link(".env", &fx.root.join("harmless.txt"));
    let r = read(&fx, "harmless.txt");
    assert!(r.inside);
    assert_eq!(r.sensitivity, Sensitivity::Sensitive("env_file"));
    assert!(r.read_needs_approval());
}

#[cfg(unix)]
#[test]
fn symlink_named_like_a_secret_pointing_to_plain_file_is_not_sensitive() {
    let fx = fx();
    write(&fx.root.join("plain.txt"), "x");
    link("plain.txt", &fx.root.join(".env"));
    assert_eq!(read(&fx, ".env").sensitivity, Sensitivity::None);
}

// ---------------------------------------------------------------------------
// resolve: sensitivity

#[test]
fn resolve_marks_sensitive_paths() {
    let fx = fx();
    let cases = [
        (".env", Access::Read, Some("env_file")),
        (".ssh/id_rsa", Access::Read, Some("ssh")),
        ("private.key", Access::Read, Some("private_key")),
        ("pyproject.toml", Access::Write, Some("pyproject")),
        ("pyproject.toml", Access::Read, None),
        (".npmrc", Access::Read, Some("npmrc")),
        (".pypirc", Access::Read, Some("pypirc")),
        (".netrc", Access::Read, Some("netrc")),
        (".aws/credentials", Access::Read, Some("aws")),
        (".kube/config", Access::Read, Some("kube")),
    ];
    for (raw, access, want) in cases {
        let r = resolve(&fx.root, raw, access).unwrap();
        assert_eq!(r.sensitivity.kind(), want, "{raw} {access:?}");
        assert!(r.inside);
    }
}

#[test]
fn sensitive_write_inside_is_allowed_with_sensitivity() {
    let fx = fx();
    let r = write_ok(&fx, ".git/hooks/pre-commit");
    assert!(r.inside);
    assert_eq!(r.sensitivity, Sensitivity::Sensitive("git"));
}

#[test]
fn outside_private_key_is_sensitive() {
    let fx = fx();
    let key = fx.outside.join("id_ed25519");
    write(&key, "k");
    let r = read(&fx, key.to_str().unwrap());
    assert!(!r.inside);
    assert_eq!(r.sensitivity, Sensitivity::Sensitive("private_key"));
}

#[test]
fn outside_sensitivity_uses_the_whole_absolute_path() {
    let fx = fx();
    let creds = fx.outside.join(".aws/credentials");
    write(&creds, "k");
    assert_eq!(
        read(&fx, creds.to_str().unwrap()).sensitivity,
        Sensitivity::Sensitive("aws")
    );
    let state = fx.outside.join(".demiurge/agents/agent.yaml");
    assert_eq!(
        read(&fx, state.to_str().unwrap()).sensitivity,
        Sensitivity::Sensitive("demiurge_state")
    );
}

#[test]
fn inside_sensitivity_ignores_the_roots_own_location() {
    // A workspace that itself lives under `.git` / `.venv`: only the path
    // relative to the root counts.
    let tmp = tempfile::tempdir().unwrap();
    let root = fs::canonicalize(tmp.path()).unwrap().join(".venv/.git/ws");
    fs::create_dir_all(&root).unwrap();
    write(&root.join("a.txt"), "x");
    let r = resolve(&root, "a.txt", Access::Read).unwrap();
    assert!(r.inside);
    assert_eq!(r.sensitivity, Sensitivity::None);
    assert!(!r.read_needs_approval());
    // Once outside, the absolute path is judged.
    let up = resolve(&root, "../x.txt", Access::Read).unwrap();
    assert_eq!(up.sensitivity, Sensitivity::Sensitive("venv"));
}

#[test]
fn sensitivity_is_case_insensitive_in_resolve() {
    let fx = fx();
    assert_eq!(
        read(&fx, ".ENV.Production").sensitivity,
        Sensitivity::Sensitive("env_file")
    );
    assert_eq!(
        write_ok(&fx, "PyProject.TOML").sensitivity,
        Sensitivity::Sensitive("pyproject")
    );
}
