use super::*;

const DOC: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../docs/configuration.md");

#[test]
fn every_serve_flag_is_listed_with_its_environment_variable() {
    let flags = serve_flags();
    let names: Vec<&str> = flags.iter().map(|f| f.long.as_str()).collect();
    for expected in [
        "home",
        "database-url",
        "log-format",
        "bind",
        "sandbox",
        "provider",
    ] {
        assert!(
            names.contains(&expected),
            "{expected} missing from {names:?}"
        );
    }
    for f in &flags {
        assert!(!f.help.is_empty(), "--{} has no doc comment", f.long);
        let env = f.env.as_deref().unwrap_or_default();
        assert!(
            env.starts_with("DEMIURGE_") || env == "DATABASE_URL",
            "--{} has no DEMIURGE_* variable: {env:?}",
            f.long
        );
    }
    let home = flags.iter().find(|f| f.long == "home").unwrap();
    assert_eq!(home.default.as_deref(), Some(".demiurge"));
}

#[test]
fn cells_stay_on_one_line_and_pipes_are_escaped() {
    let table = render(&[FlagDoc {
        long: "x".into(),
        env: None,
        default: Some("a".into()),
        help: one_line("first line\n  second | third"),
    }]);
    assert!(
        table.ends_with("| `--x` | — | `a` | first line second \\| third |\n"),
        "{table}"
    );
}

#[test]
fn splice_replaces_only_the_generated_block() {
    let doc = format!("intro\n{BEGIN}\nold\n{END}\nmid\n{BEGIN_COMMANDS}\nold\n{END}\noutro\n");
    assert_eq!(
        splice(&doc, BEGIN, "new\n").unwrap(),
        format!("intro\n{BEGIN}\nnew\n{END}\nmid\n{BEGIN_COMMANDS}\nold\n{END}\noutro\n")
    );
    assert_eq!(
        splice(&doc, BEGIN_COMMANDS, "new\n").unwrap(),
        format!("intro\n{BEGIN}\nold\n{END}\nmid\n{BEGIN_COMMANDS}\nnew\n{END}\noutro\n")
    );
    assert!(splice("no markers", BEGIN, "x").is_none());
    assert!(splice(&format!("{END}\n{BEGIN}"), BEGIN, "x").is_none());
}

#[test]
fn every_other_command_is_listed_with_its_arguments() {
    let commands = other_commands();
    let paths: Vec<&str> = commands.iter().map(|c| c.path.as_str()).collect();
    assert_eq!(
        paths,
        [
            "token issue",
            "token revoke",
            "principal disable",
            "principal enable",
            "check command",
            "check url",
            "usage report",
            "usage rollup",
            "budget ceiling",
            "budget show",
            "audit verify",
            "audit export",
            "package list",
            "package install",
            "package uninstall",
            "package sync",
            "openapi",
            "migrate"
        ]
    );
    for c in &commands {
        assert!(!c.about.is_empty(), "{} has no description", c.path);
        for f in &c.flags {
            assert!(
                !f.help.is_empty(),
                "{} {} has no doc comment",
                c.path,
                f.long
            );
        }
    }
    let url = commands.iter().find(|c| c.path == "check url").unwrap();
    let names: Vec<&str> = url.flags.iter().map(|f| f.long.as_str()).collect();
    assert_eq!(names, ["<URL>", "url-allow"]);
    let issue = commands.iter().find(|c| c.path == "token issue").unwrap();
    let role = issue.flags.iter().find(|f| f.long == "role").unwrap();
    assert_eq!(role.default.as_deref(), Some("member"));
    let table = render_commands(&commands);
    assert!(table.contains("### `demiurge check url`"), "{table}");
    assert!(table.contains("| `<URL>` | — | — |"), "{table}");
}

/// `docs/configuration.md` shows exactly what the binary takes. To refresh
/// it after changing a flag: `DEMIURGE_UPDATE_DOCS=1 cargo test -p demiurge
/// --lib cli_reference`.
#[test]
fn docs_configuration_md_is_current() {
    let doc = std::fs::read_to_string(DOC).expect("docs/configuration.md");
    let fresh = refreshed(&doc).expect("docs/configuration.md lacks a generated block's markers");
    if fresh != doc {
        if std::env::var("DEMIURGE_UPDATE_DOCS").as_deref() == Ok("1") {
            std::fs::write(DOC, &fresh).expect("write docs/configuration.md");
        } else {
            panic!(
                "docs/configuration.md is out of date with the clap definitions; \
                 run `DEMIURGE_UPDATE_DOCS=1 cargo test -p demiurge --lib cli_reference`"
            );
        }
    }
}
