//! What the file tools' plans ask for, given their inputs.

use serde_json::json;

use super::{Patch, ReadFile, WriteFile};
use crate::policy::approval_policy::{ApprovalPolicy, Risk};
use crate::tools::contract::{Approval, Gate, ToolStatus};
use crate::tools::testing::{fixture, plan};

fn only(gate: Gate) -> Approval {
    match gate {
        Gate::Ask(mut list) if list.len() == 1 => list.remove(0),
        other => panic!("expected one approval, got {other:?}"),
    }
}

#[test]
fn ordinary_read_inside_is_automatic_and_low() {
    let f = fixture(&["fs.read"]);
    std::fs::write(f.workspace().join("a.txt"), "hi").unwrap();
    let (gate, p) = plan::<ReadFile>(&f, "read_file", json!({"path": "a.txt"})).unwrap();
    let a = only(gate);
    assert_eq!(
        a,
        Approval {
            baseline: ApprovalPolicy::Auto,
            risk: Risk::Low,
            action: "read".into(),
            target: "a.txt".into(),
            reason: String::new(),
            preview: json!({"path": "a.txt"}),
            session_cacheable: true,
        }
    );
    assert!(p.target.inside && p.target.exists);
    assert_eq!((p.offset, p.limit), (0, super::READ_LIMIT_CHARS));
}

#[test]
fn read_window_is_clamped() {
    let f = fixture(&[]);
    for (args, want) in [
        (json!({"path": "x", "offset": -5, "limit": 0}), (0, 20_000)),
        (json!({"path": "x", "offset": 7, "limit": 10}), (7, 10)),
        (json!({"path": "x", "limit": 10_000_000}), (0, 20_000)),
        (json!({"path": "x", "offset": 3.9, "limit": "12"}), (3, 12)),
    ] {
        let (_, p) = plan::<ReadFile>(&f, "read_file", args.clone()).unwrap();
        assert_eq!((p.offset, p.limit), want, "{args}");
    }
}

#[test]
fn sensitive_read_prompts_high() {
    let f = fixture(&[]);
    std::fs::write(f.workspace().join(".env"), "K=v").unwrap();
    let a = only(
        plan::<ReadFile>(&f, "read_file", json!({"path": ".env"}))
            .unwrap()
            .0,
    );
    assert_eq!((a.baseline, a.risk), (ApprovalPolicy::Prompt, Risk::High));
    assert!(a.reason.contains("sensitive"), "{}", a.reason);
    assert_eq!(a.target, ".env");
}

#[test]
fn read_under_a_read_root_prompts_with_the_absolute_path() {
    let f = fixture(&[]);
    let file = f.read_root.path().canonicalize().unwrap().join("doc.md");
    std::fs::write(&file, "x").unwrap();
    let raw = file.display().to_string();
    let a = only(
        plan::<ReadFile>(&f, "read_file", json!({"path": raw}))
            .unwrap()
            .0,
    );
    assert_eq!((a.baseline, a.risk), (ApprovalPolicy::Prompt, Risk::High));
    assert_eq!(a.target, raw);
    assert_eq!(a.reason, "read under an operator read root");
}

#[test]
fn reads_the_walls_refuse_end_before_any_approval() {
    let f = fixture(&[]);
    std::fs::write(f.dir.path().join("server.key"), "x").unwrap();
    let home_file = f.dir.path().canonicalize().unwrap().join("server.key");
    for path in [home_file.display().to_string(), "/etc/hostname".to_owned()] {
        let o = plan::<ReadFile>(&f, "read_file", json!({"path": path})).unwrap_err();
        assert_eq!(o.status, ToolStatus::Denied, "{path}: {:?}", o.content);
    }
    let o = plan::<ReadFile>(&f, "read_file", json!({"path": "../server.key"})).unwrap_err();
    assert_eq!(o.status, ToolStatus::Denied);
}

#[test]
fn a_missing_file_is_still_asked_about_then_fails_at_execution() {
    let f = fixture(&[]);
    let (gate, p) = plan::<ReadFile>(&f, "read_file", json!({"path": "nope.txt"})).unwrap();
    assert_eq!(only(gate).target, "nope.txt");
    assert!(!p.target.exists);
}

#[test]
fn wrong_argument_types_are_invalid_and_name_the_field() {
    let f = fixture(&[]);
    let o = plan::<ReadFile>(&f, "read_file", json!({"path": 5})).unwrap_err();
    assert_eq!(o.status, ToolStatus::Invalid);
    let msg = o.content.as_str().unwrap();
    assert!(msg.contains("read_file") && msg.contains("path"), "{msg}");
    let o = plan::<ReadFile>(&f, "read_file", json!({"path": "a", "offset": true})).unwrap_err();
    assert!(o.content.as_str().unwrap().contains("offset"));
}

#[test]
fn writes_always_prompt_high_per_exact_path() {
    let f = fixture(&[]);
    let (gate, p) = plan::<WriteFile>(
        &f,
        "write_file",
        json!({"path": "dir/new.txt", "content": "héllo"}),
    )
    .unwrap();
    assert_eq!(
        only(gate),
        Approval {
            baseline: ApprovalPolicy::Prompt,
            risk: Risk::High,
            action: "write".into(),
            target: "dir/new.txt".into(),
            reason: "write dir/new.txt".into(),
            preview: json!({"path": "dir/new.txt", "chars": 5}),
            session_cacheable: true,
        }
    );
    assert!(p.create_parents);
    assert!(!f.workspace().join("dir").exists(), "plans write nothing");
    let (_, p) = plan::<WriteFile>(
        &f,
        "write_file",
        json!({"path": "x", "content": "", "create_parent_dirs": false}),
    )
    .unwrap();
    assert!(!p.create_parents);
}

#[test]
fn writes_of_sensitive_paths_are_critical() {
    let f = fixture(&[]);
    let a = only(
        plan::<WriteFile>(&f, "write_file", json!({"path": ".env", "content": "K=v"}))
            .unwrap()
            .0,
    );
    assert_eq!(
        (a.baseline, a.risk),
        (ApprovalPolicy::Prompt, Risk::Critical)
    );
    assert!(
        a.reason.starts_with("write of a sensitive path"),
        "{}",
        a.reason
    );
}

#[test]
fn writes_outside_the_workspace_are_refused_without_asking() {
    let f = fixture(&[]);
    for path in ["../escape.txt", "/etc/evil", "a/../../b"] {
        let o =
            plan::<WriteFile>(&f, "write_file", json!({"path": path, "content": "x"})).unwrap_err();
        assert!(
            matches!(o.status, ToolStatus::Denied | ToolStatus::Invalid),
            "{path}: {:?}",
            o.status
        );
    }
}

#[test]
fn patch_plans() {
    let f = fixture(&[]);
    std::fs::write(f.workspace().join("p.txt"), "a b a").unwrap();
    let o =
        plan::<Patch>(&f, "patch", json!({"path": "p.txt", "old": "", "new": "x"})).unwrap_err();
    assert_eq!(o.status, ToolStatus::Invalid);
    let o = plan::<Patch>(
        &f,
        "patch",
        json!({"path": "q.txt", "old": "a", "new": "x"}),
    )
    .unwrap_err();
    assert_eq!(o.status, ToolStatus::Failed);
    let (gate, p) = plan::<Patch>(
        &f,
        "patch",
        json!({"path": "p.txt", "old": "a", "new": "xy", "count": 1}),
    )
    .unwrap();
    let a = only(gate);
    assert_eq!((a.action.as_str(), a.risk), ("patch", Risk::High));
    assert_eq!(
        a.preview,
        json!({"path": "p.txt", "old_chars": 1, "new_chars": 2, "count": 1})
    );
    assert_eq!(p.count, 1);
    let (_, p) =
        plan::<Patch>(&f, "patch", json!({"path": "p.txt", "old": "a", "new": ""})).unwrap();
    assert_eq!(p.count, -1, "every occurrence by default");
}

#[test]
fn an_evolver_in_a_run_may_not_write_dependency_files() {
    let mut f = fixture(&["fs.write"]);
    // Anywhere else a dependency manifest is an ordinary (asked) write.
    let args = json!({"path": "c/pyproject.toml", "content": "[project]\n"});
    assert!(plan::<WriteFile>(&f, "write_file", args.clone()).is_ok());
    f.ctx.delegation.workspace_run = Some("evolve-1".into());
    let o = plan::<WriteFile>(&f, "write_file", args).unwrap_err();
    assert_eq!(o.status, ToolStatus::Denied, "{:?}", o.content);
    assert!(o.content.as_str().unwrap().contains("pyproject.toml"));
    let o = plan::<WriteFile>(
        &f,
        "write_file",
        json!({"path": "c/agent/skills/a/SKILL.md", "content": "# a\n"}),
    );
    assert!(o.is_ok());
}
