use super::*;

#[test]
fn ordinary_core_paths_parse() {
    for ok in [
        "agent.yaml",
        "agent/SOUL.md",
        "agent/tools/echo/tool.yaml",
        "agent/skills/deploy/SKILL.md",
        "a b/c-d_e.txt",
        "日本/語.md",
        "x..y",
        "x.",
    ] {
        let p = CoreFilePath::parse(ok).unwrap_or_else(|e| panic!("{ok}: {e}"));
        assert_eq!(p.as_str(), ok);
    }
    assert_eq!(
        CoreFilePath::parse("agent/tools/t.yaml")
            .unwrap()
            .segments()
            .collect::<Vec<_>>(),
        vec!["agent", "tools", "t.yaml"]
    );
}

#[test]
fn escapes_and_hidden_entries_are_refused_with_a_reason() {
    let cases = [
        ("", "empty"),
        ("/etc/passwd", "absolute"),
        ("../other/agent.yaml", ".."),
        ("agent/../../x", ".."),
        ("..", ".."),
        ("./agent.yaml", "\".\""),
        ("agent/./x", "\".\""),
        (".git/config", "hidden"),
        ("agent/.git/HEAD", "hidden"),
        (".env", "hidden"),
        ("agent/.hidden", "hidden"),
        ("agent//x", "empty segment"),
        ("agent/", "empty segment"),
        ("agent\\..\\x", "'\\\\'"),
        ("agent/\u{0}x", "'\\0'"),
        ("a\nb", "'\\n'"),
    ];
    for (raw, needle) in cases {
        let e = CoreFilePath::parse(raw).expect_err(raw);
        assert!(e.0.contains(needle), "{raw:?}: {e} lacks {needle:?}");
    }
    assert!(CoreFilePath::parse(&"a/".repeat(300)).is_err());
    assert!(CoreFilePath::parse(&"x".repeat(256)).is_err());
    assert!(CoreFilePath::parse(&"x".repeat(255)).is_ok());
}

#[test]
fn revisions_are_names_or_hex_only() {
    assert_eq!(RevisionSpec::parse("live"), Ok(RevisionSpec::Live));
    assert_eq!(RevisionSpec::parse("previous"), Ok(RevisionSpec::Previous));
    assert_eq!(
        RevisionSpec::parse("ABCDEF12"),
        Ok(RevisionSpec::Commit("abcdef12".into()))
    );
    assert!(RevisionSpec::parse(&"a".repeat(40)).is_ok());
    for bad in [
        "",
        "abc",
        &"a".repeat(41),
        "HEAD",
        "HEAD~1",
        "--output=/tmp/x",
        "main",
        "abcd^{tree}",
        "abcd..ef01",
        "@{-1}",
        "ghij",
    ] {
        assert!(RevisionSpec::parse(bad).is_err(), "{bad:?}");
    }
    assert_eq!(
        RevisionSpec::Commit("abcd".into()).to_git(),
        "abcd^{commit}"
    );
    assert_eq!(RevisionSpec::Live.to_git(), "refs/demiurge/live^{commit}");
}

#[test]
fn commit_messages_are_bounded_and_clean() {
    assert_eq!(commit_message("  fix tool  ").unwrap(), "fix tool");
    assert_eq!(commit_message("a\n\nbody\tx").unwrap(), "a\n\nbody\tx");
    assert!(commit_message("   ").is_err());
    assert!(commit_message(&"x".repeat(501)).is_err());
    assert!(commit_message("bell\u{7}").is_err());
}
