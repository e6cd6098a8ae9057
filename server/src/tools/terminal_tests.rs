//! What the terminal's plan asks for, given its inputs.

use serde_json::{json, Value};

use super::{PlannedCommand, Terminal};
use crate::policy::approval_policy::{ApprovalPolicy, Risk};
use crate::tools::contract::{Approval, Gate, ToolOutcome, ToolStatus};
use crate::tools::testing::{fixture, plan, Fixture};

fn planned(f: &Fixture, args: Value) -> Result<(Gate, PlannedCommand), ToolOutcome> {
    plan::<Terminal>(f, "terminal", args)
}

fn asked(f: &Fixture, args: Value) -> Approval {
    match planned(f, args.clone()) {
        Ok((Gate::Ask(mut list), _)) if list.len() == 1 => list.remove(0),
        other => panic!("{args}: expected one approval, got {other:?}"),
    }
}

fn early(f: &Fixture, args: Value) -> ToolOutcome {
    match planned(f, args.clone()) {
        Err(o) => o,
        Ok((gate, _)) => panic!("{args}: expected an early outcome, got {gate:?}"),
    }
}

#[test]
fn literal_read_only_commands_need_no_approval() {
    let f = fixture(&["terminal.exec"]);
    std::fs::write(f.workspace().join("a.txt"), "x").unwrap();
    for command in ["ls", "pwd", "cat a.txt", "  ls -la  "] {
        let (gate, p) = planned(&f, json!({"command": command})).unwrap();
        assert_eq!(gate, Gate::UnlessDenied, "{command}");
        assert_eq!(p.command, command.trim());
        assert_eq!((p.timeout, p.background), (30, false));
    }
}

#[test]
fn other_commands_ask_once_for_their_execution_shape() {
    let f = fixture(&[]);
    let a = asked(
        &f,
        json!({"command": "touch new.txt", "timeout_seconds": 500}),
    );
    assert_eq!(a.baseline, ApprovalPolicy::Prompt);
    assert_eq!(a.action, "exec");
    assert!(a.session_cacheable);
    // `<guard rule>:<16 hex digits of the shape>`.
    let (rule, shape) = a.target.rsplit_once(':').unwrap();
    assert!(!rule.is_empty());
    assert_eq!(shape.len(), 16);
    assert!(shape.chars().all(|c| c.is_ascii_hexdigit()));
    assert_eq!(a.preview["command"], "touch new.txt");
    assert_eq!(a.preview["executable"], "touch");
    assert_eq!(a.preview["cwd"], "", "the workspace root, relative");
    assert_eq!(a.preview["timeout_seconds"], 120, "timeouts are capped");
    assert_eq!(a.preview["background"], false);
    assert_eq!(a.preview["guard"]["rule"], rule);
    assert!(!f.workspace().join("new.txt").exists(), "plans run nothing");
}

#[test]
fn the_shape_binds_the_approval() {
    let f = fixture(&[]);
    std::fs::create_dir(f.workspace().join("sub")).unwrap();
    let base = json!({"command": "touch x"});
    let target = |args: Value| asked(&f, args).target;
    let first = target(base.clone());
    assert_eq!(first, target(base.clone()), "same shape, same target");
    for other in [
        json!({"command": "touch y"}),
        json!({"command": "touch x", "cwd": "sub"}),
        json!({"command": "touch x", "timeout_seconds": 31}),
        json!({"command": "touch x", "background": true}),
        json!({"command": "touch x", "env": {"A": "1"}}),
    ] {
        assert_ne!(first, target(other.clone()), "{other}");
    }
}

#[test]
fn an_overlay_or_a_path_leading_out_makes_a_read_ask_high() {
    let f = fixture(&[]);
    let a = asked(&f, json!({"command": "ls", "env": {"LANG_X": "1", "N": 2}}));
    assert_eq!(a.risk, Risk::High);
    assert_eq!(a.preview["env_keys"], json!(["LANG_X", "N"]));
    let (_, p) = planned(&f, json!({"command": "ls", "env": {"N": 2}})).unwrap();
    assert_eq!(p.overlay, vec![("N".to_owned(), "2".to_owned())]);
    std::os::unix::fs::symlink("/etc/hostname", f.workspace().join("link")).unwrap();
    let a = asked(&f, json!({"command": "cat link"}));
    assert_eq!(a.risk, Risk::High);
}

#[test]
fn blocked_commands_end_before_approval() {
    let f = fixture(&[]);
    let o = early(&f, json!({"command": "rm -rf /"}));
    assert_eq!(o.status, ToolStatus::Denied);
    assert!(
        o.content
            .as_str()
            .unwrap()
            .starts_with("terminal command blocked"),
        "{:?}",
        o.content
    );
}

#[test]
fn invalid_inputs_end_early() {
    let f = fixture(&[]);
    for (args, status) in [
        (json!({"command": "   "}), ToolStatus::Invalid),
        (
            json!({"command": "ls", "env": {"1BAD": "x"}}),
            ToolStatus::Invalid,
        ),
        (
            json!({"command": "ls", "env": {"PATH": "/x"}}),
            ToolStatus::Invalid,
        ),
        (
            json!({"command": "ls", "cwd": "missing"}),
            ToolStatus::Failed,
        ),
        (json!({"command": "ls", "cwd": "../.."}), ToolStatus::Denied),
        (
            json!({"command": "ls", "secret_bindings": [{"source": "HOME"}]}),
            ToolStatus::Invalid,
        ),
        (
            json!({"command": "ls", "secret_bindings": [{"source": "env:A", "target": "PATH"}]}),
            ToolStatus::Invalid,
        ),
        (
            json!({"command": "ls", "secret_bindings": [{"source": "env:A", "expires_in_seconds": 60}]}),
            ToolStatus::Invalid,
        ),
        (
            json!({"command": "ls", "background": true, "secret_bindings": [{"source": "env:A"}]}),
            ToolStatus::Invalid,
        ),
        (json!({"command": 7}), ToolStatus::Invalid),
    ] {
        assert_eq!(early(&f, args.clone()).status, status, "{args}");
    }
}

#[test]
fn secret_bindings_need_their_exact_grant_and_are_never_cached() {
    let f = fixture(&["secret.bind:*"]);
    let args = json!({"command": "env", "secret_bindings": [{"source": "env:API_TOKEN"}]});
    let o = early(&f, args.clone());
    assert_eq!(o.status, ToolStatus::Denied, "a wildcard never binds");
    let f = fixture(&["secret.bind:API_TOKEN"]);
    let a = asked(&f, args);
    assert!(!a.session_cacheable);
    assert_eq!(a.risk, Risk::High);
    assert_eq!(
        a.preview["secret_bindings"],
        json!([{"source": "env:API_TOKEN", "target": "API_TOKEN",
            "capability": "secret.bind:API_TOKEN", "expires_in_seconds": null}])
    );
    let (_, p) = planned(
        &f,
        json!({"command": "env", "timeout_seconds": 10,
            "secret_bindings": [{"source": "env:API_TOKEN", "target": "T", "expires_in_seconds": 5}]}),
    )
    .unwrap();
    assert_eq!(
        p.bindings,
        vec![super::Binding {
            name: "API_TOKEN".into(),
            target: "T".into(),
            expires: Some(5)
        }]
    );
}

#[test]
fn background_work_over_the_cap_is_refused_before_asking() {
    let mut f = fixture(&[]);
    let (gate, p) = planned(&f, json!({"command": "touch x", "background": true})).unwrap();
    assert!(p.background);
    assert!(matches!(gate, Gate::Ask(ref l) if l.len() == 1));
    f.host.over_cap = Some("too many running tasks".into());
    let o = early(&f, json!({"command": "touch x", "background": true}));
    assert_eq!(o.status, ToolStatus::Denied);
    assert_eq!(o.content, "too many running tasks");
    // The foreground is not capped.
    assert!(planned(&f, json!({"command": "touch x"})).is_ok());
}
