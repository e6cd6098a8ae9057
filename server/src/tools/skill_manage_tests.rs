use serde_json::json;

use super::*;
use crate::tools::testing::{fixture, plan};

fn args(v: serde_json::Value) -> Args {
    serde_json::from_value(v).expect("args")
}

#[test]
fn plain_names_pass() {
    for (raw, want) in [
        ("deploy", "deploy"),
        ("  deploy  ", "deploy"),
        ("my-skill_2", "my-skill_2"),
        ("notes.v2", "notes.v2"),
        ("résumé", "résumé"),
    ] {
        assert_eq!(check_name(raw).unwrap(), want, "{raw}");
    }
}

#[test]
fn escaping_names_are_denied() {
    for raw in [
        "/etc",
        "/",
        "\\\\server\\share",
        "C:evil",
        "c:\\windows",
        "~root",
        "..",
        ".",
        "../agent.yaml",
        "a/b",
        "a\\b",
        ".hidden",
        ".git",
        "..skill",
        "skills/../../x",
    ] {
        let r = check_name(raw).unwrap_err();
        assert_eq!(r.status, ToolStatus::Denied, "{raw}: {r:?}");
    }
}

#[test]
fn malformed_names_are_invalid() {
    let long = "a".repeat(200);
    for raw in ["", "   ", "a\u{0}b", "line\nbreak", long.as_str()] {
        let r = check_name(raw).unwrap_err();
        assert_eq!(r.status, ToolStatus::Invalid, "{raw:?}: {r:?}");
    }
}

#[test]
fn support_paths_stay_in_the_support_folders() {
    for raw in [
        "references/checklist.md",
        "templates/a/b/c.txt",
        "scripts/run.sh",
        "assets/logo.png",
        " references/x.md ",
    ] {
        assert!(check_support_path(raw).is_ok(), "{raw}");
    }
    for raw in [
        "/etc/passwd",
        "/references/x",
        "C:/x",
        "~/x",
        "../x",
        "references/../../agent.yaml",
        "references/../SKILL.md",
        "references/./x",
        "references//x",
        "references/",
        "references/.env",
        ".git/config",
        "references/sub/.hidden/x",
        "SKILL.md",
        "other/x.md",
        "Reference/x.md",
        "references\\..\\x",
    ] {
        let r = check_support_path(raw).unwrap_err();
        assert_eq!(r.status, ToolStatus::Denied, "{raw}: {r:?}");
    }
    for raw in ["", "references", "assets", "refs\u{7}/x"] {
        assert!(check_support_path(raw).is_err(), "{raw:?}");
    }
    assert_eq!(
        check_support_path("references").unwrap_err().status,
        ToolStatus::Invalid
    );
}

#[test]
fn under_root_is_strictly_below() {
    let root = "agent/skills";
    assert!(under_root(root, "agent/skills/x/SKILL.md"));
    assert!(under_root(root, "agent/skills/x.md"));
    assert!(under_root("agent/skills/", "agent/skills/x.md"));
    assert!(!under_root(root, "agent/skills"));
    assert!(!under_root(root, "agent/skills/"));
    assert!(!under_root(root, "agent/skillsX/y.md"));
    assert!(!under_root(root, "agent/SOUL.md"));
    assert!(!under_root(root, "agent.yaml"));
    assert!(!under_root(root, "agent/skills/../agent.yaml"));
    assert!(!under_root(root, "agent/skills/.hidden/SKILL.md"));
    assert!(!under_root(root, "/agent/skills/x.md"));
    assert!(under_root("", "x/SKILL.md"));
    assert!(!under_root("", "../x"));
}

#[test]
fn targets_resolve_listed_then_packaged_then_single_then_new() {
    let root = "agent/skills";
    let t = resolve_target(
        root,
        "deploy",
        Some("agent/skills/ops/deploy/SKILL.md"),
        false,
        false,
    );
    assert_eq!(
        (t.file.as_str(), t.dir.as_str(), t.packaged, t.exists),
        (
            "agent/skills/ops/deploy/SKILL.md",
            "agent/skills/ops/deploy",
            true,
            true
        )
    );
    assert_eq!(t.whole(), "agent/skills/ops/deploy");
    let t = resolve_target(root, "style", Some("agent/skills/style.md"), false, false);
    assert!(!t.packaged && t.exists);
    assert_eq!(t.whole(), "agent/skills/style.md");
    let t = resolve_target(root, "x", None, true, true);
    assert_eq!(t.file, "agent/skills/x/SKILL.md");
    let t = resolve_target(root, "x", None, false, true);
    assert_eq!((t.file.as_str(), t.packaged), ("agent/skills/x.md", false));
    let t = resolve_target(root, "x", None, false, false);
    assert_eq!(
        (t.file.as_str(), t.packaged, t.exists),
        ("agent/skills/x/SKILL.md", true, false)
    );
    let t = resolve_target("", "x", None, false, false);
    assert_eq!((t.file.as_str(), t.dir.as_str()), ("x/SKILL.md", "x"));
}

fn new_target() -> SkillTarget {
    resolve_target("agent/skills", "x", None, false, false)
}

fn packaged() -> SkillTarget {
    resolve_target("agent/skills", "x", None, true, false)
}

fn single() -> SkillTarget {
    resolve_target("agent/skills", "x", None, false, true)
}

fn yes(_: &str) -> bool {
    true
}

fn no(_: &str) -> bool {
    false
}

#[test]
fn each_action_plans_its_operation() {
    let root = "agent/skills";
    let (op, t) = plan_op(
        root,
        &new_target(),
        args(json!({"action": "create", "name": "x", "content": "hi"})),
        no,
    )
    .unwrap();
    assert_eq!(t, "agent/skills/x/SKILL.md");
    assert!(matches!(op, Op::Put { ref content, .. } if content == "hi"));
    let (op, _) = plan_op(
        root,
        &packaged(),
        args(json!({"action": "update", "name": "x", "content": "v2"})),
        no,
    )
    .unwrap();
    assert!(matches!(op, Op::Put { ref path, .. } if path == "agent/skills/x/SKILL.md"));
    let (op, t) = plan_op(
        root,
        &packaged(),
        args(json!({"action": "delete", "name": "x"})),
        no,
    )
    .unwrap();
    assert_eq!(
        op,
        Op::RemoveTree {
            path: "agent/skills/x".into()
        }
    );
    assert_eq!(t, "agent/skills/x");
    let (op, _) = plan_op(
        root,
        &single(),
        args(json!({"action": "delete", "name": "x"})),
        no,
    )
    .unwrap();
    assert!(matches!(op, Op::Remove { ref path, .. } if path == "agent/skills/x.md"));
    let (op, _) = plan_op(
        root,
        &packaged(),
        args(json!({"action": "write_file", "name": "x",
        "file_path": "references/a.md", "file_content": ""})),
        no,
    )
    .unwrap();
    assert!(
        matches!(op, Op::Put { ref path, ref shown, .. } if path == "agent/skills/x/references/a.md" && shown == "references/a.md")
    );
    let (op, _) = plan_op(
        root,
        &packaged(),
        args(json!({"action": "remove_file", "name": "x",
        "file_path": "scripts/a.sh"})),
        yes,
    )
    .unwrap();
    assert!(matches!(op, Op::Remove { ref path, .. } if path == "agent/skills/x/scripts/a.sh"));
    let (op, _) = plan_op(
        root,
        &packaged(),
        args(json!({"action": "patch", "name": "x",
        "old_string": "a", "new_string": ""})),
        no,
    )
    .unwrap();
    assert!(
        matches!(op, Op::Patch { ref path, ref shown, .. } if path == "agent/skills/x/SKILL.md" && shown == "SKILL.md")
    );
    let (op, _) = plan_op(root, &packaged(), args(json!({"action": "patch", "name": "x",
        "file_path": "templates/t.txt", "old_string": "a", "new_string": "b", "replace_all": true})), yes).unwrap();
    assert!(
        matches!(op, Op::Patch { ref path, all: true, .. } if path == "agent/skills/x/templates/t.txt")
    );
}

#[test]
fn refusals_are_typed() {
    let root = "agent/skills";
    let cases: Vec<(SkillTarget, serde_json::Value, ToolStatus)> = vec![
        (
            packaged(),
            json!({"action": "create", "name": "x", "content": "a"}),
            ToolStatus::Invalid,
        ),
        (
            new_target(),
            json!({"action": "create", "name": "x"}),
            ToolStatus::Invalid,
        ),
        (
            new_target(),
            json!({"action": "create", "name": "x", "content": ""}),
            ToolStatus::Invalid,
        ),
        (
            new_target(),
            json!({"action": "update", "name": "x", "content": "a"}),
            ToolStatus::NotFound,
        ),
        (
            new_target(),
            json!({"action": "delete", "name": "x"}),
            ToolStatus::NotFound,
        ),
        (
            packaged(),
            json!({"action": "update", "name": "x"}),
            ToolStatus::Invalid,
        ),
        (
            packaged(),
            json!({"action": "patch", "name": "x", "new_string": "b"}),
            ToolStatus::Invalid,
        ),
        (
            packaged(),
            json!({"action": "patch", "name": "x", "old_string": "a"}),
            ToolStatus::Invalid,
        ),
        (
            single(),
            json!({"action": "write_file", "name": "x", "file_path": "references/a", "file_content": "a"}),
            ToolStatus::Invalid,
        ),
        (
            packaged(),
            json!({"action": "write_file", "name": "x", "file_path": "references/a"}),
            ToolStatus::Invalid,
        ),
        (
            packaged(),
            json!({"action": "write_file", "name": "x", "file_path": "../../../agent.yaml", "file_content": "a"}),
            ToolStatus::Denied,
        ),
        (
            packaged(),
            json!({"action": "write_file", "name": "x", "file_path": "/etc/passwd", "file_content": "a"}),
            ToolStatus::Denied,
        ),
        (
            packaged(),
            json!({"action": "write_file", "name": "x", "file_path": "references/.env", "file_content": "a"}),
            ToolStatus::Denied,
        ),
        (
            packaged(),
            json!({"action": "write_file", "name": "x", "file_path": "SKILL.md", "file_content": "a"}),
            ToolStatus::Denied,
        ),
        (
            packaged(),
            json!({"action": "remove_file", "name": "x", "file_path": "references/missing"}),
            ToolStatus::NotFound,
        ),
        (
            packaged(),
            json!({"action": "remove_file", "name": "x", "file_path": "references/../../y.md"}),
            ToolStatus::Denied,
        ),
        (
            packaged(),
            json!({"action": "patch", "name": "x", "file_path": "references/none", "old_string": "a", "new_string": "b"}),
            ToolStatus::NotFound,
        ),
        (
            packaged(),
            json!({"action": "patch", "name": "x", "file_path": "../SKILL.md", "old_string": "a", "new_string": "b"}),
            ToolStatus::Denied,
        ),
    ];
    for (target, a, want) in cases {
        let r = plan_op(root, &target, args(a.clone()), no).unwrap_err();
        assert_eq!(r.status, want, "{a}: {r:?}");
    }
}

#[test]
fn a_listed_skill_outside_the_root_is_refused() {
    // A listing that points elsewhere (it cannot, but the wall holds anyway).
    let t = resolve_target("agent/skills", "x", Some("agent/SOUL.md"), false, false);
    let r = plan_op(
        "agent/skills",
        &t,
        args(json!({"action": "update", "name": "x", "content": "a"})),
        no,
    )
    .unwrap_err();
    assert_eq!(r.status, ToolStatus::Denied);
}

#[test]
fn replacements_match_once_or_all() {
    assert_eq!(replace("a b a", "b", "c", false, "f").unwrap(), "a c a");
    assert_eq!(replace("a b a", "a", "x", true, "f").unwrap(), "x b x");
    assert!(replace("a b a", "a", "x", false, "f")
        .unwrap_err()
        .contains("matched 2 times"));
    assert!(replace("abc", "z", "x", false, "f")
        .unwrap_err()
        .contains("not found in f"));
}

#[test]
fn the_plan_asks_for_fs_write_approval_naming_the_target() {
    let f = fixture(&["fs.write"]);
    let (gate, p) = plan::<SkillManage>(
        &f,
        "skill_manage",
        json!({"action": "create", "name": "deploy", "content": "# deploy"}),
    )
    .unwrap();
    let Gate::Ask(asks) = gate else {
        panic!("no approval asked")
    };
    assert_eq!(asks.len(), 1);
    assert_eq!(asks[0].baseline, ApprovalPolicy::Prompt);
    assert_eq!(asks[0].risk, Risk::High);
    assert_eq!(asks[0].action, "skill.create");
    assert_eq!(asks[0].target, "agent/skills/deploy/SKILL.md");
    assert_eq!(p.target, "agent/skills/deploy/SKILL.md");
}

#[test]
fn the_plan_refuses_escapes_and_links_before_any_approval() {
    let f = fixture(&["fs.write"]);
    let core = f.ctx.core.dir.clone();
    std::fs::create_dir_all(core.join("agent/skills/linked")).unwrap();
    std::fs::write(core.join("agent/skills/linked/SKILL.md"), "x").unwrap();
    std::os::unix::fs::symlink("/tmp", core.join("agent/skills/linked/references")).unwrap();
    std::os::unix::fs::symlink("/etc", core.join("agent/skills/evil")).unwrap();
    for a in [
        json!({"action": "create", "name": "../escape", "content": "x"}),
        json!({"action": "create", "name": "/abs", "content": "x"}),
        json!({"action": "create", "name": ".hidden", "content": "x"}),
        json!({"action": "write_file", "name": "linked", "file_path": "references/x.md", "file_content": "x"}),
        json!({"action": "create", "name": "evil", "content": "x"}),
    ] {
        let o = plan::<SkillManage>(&f, "skill_manage", a.clone()).unwrap_err();
        assert_eq!(o.status, ToolStatus::Denied, "{a}: {:?}", o.content);
    }
}
