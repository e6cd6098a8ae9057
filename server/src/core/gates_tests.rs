use super::*;

fn f(p: &str) -> Entry {
    Entry::new(p, Kind::File)
}

fn d(p: &str) -> Entry {
    Entry::new(p, Kind::Dir)
}

#[test]
fn plain_trees_pass_every_listing_gate() {
    let tree = vec![
        f("agent.yaml"),
        d("assistant"),
        f("assistant/agent.yaml"),
        d("assistant/agent"),
        f("assistant/agent/SOUL.md"),
        f("assistant/agent/tools/echo/module.py"),
        f("assistant/agent/skills/x/scripts/run.sh"),
    ];
    assert!(path_gate(&tree).passed);
    assert!(artifact_gate(&tree).passed);
    assert!(dependency_gate(&tree).passed);
}

#[test]
fn unsafe_paths_fail_the_path_gate_naming_them() {
    let long = format!("a/{}", "b".repeat(600));
    let deep = vec!["d"; 40].join("/");
    for (e, why) in [
        (Entry::new("assistant/agent/out", Kind::Link), "a link"),
        (Entry::new("assistant/fifo", Kind::Other), "not a regular"),
        (f("assistant/.env"), "hidden"),
        (d(".github"), "hidden"),
        (f("a/.hidden/x"), "hidden"),
        (f("a/../b"), "`..`"),
        (f("a//b"), "empty"),
        (f("/etc/passwd"), "relative"),
        (f(""), "relative"),
        (f("a\\b"), "backslash"),
        (f("a/b\u{7}"), "control"),
        (f(&long), "too long"),
        (f(&deep), "too deep"),
    ] {
        let phase = path_gate(&[f("ok.md"), e.clone()]);
        assert!(!phase.passed, "{e:?}");
        assert_eq!(phase.name, "path_safety");
        assert!(phase.detail.contains(why), "{e:?}: {}", phase.detail);
    }
}

#[test]
fn artifacts_are_found_anywhere_runtime_folders_at_the_top() {
    for p in [
        "assistant/agent/tools/echo/__pycache__/module.cpython-312.pyc",
        "assistant/agent/tools/echo/__pycache__",
        "assistant/x.pyc",
        "assistant/x.pyo",
        "assistant/.pytest_cache/v",
        "assistant/.ruff_cache",
        "a/node_modules/x.js",
        ".evolve/runs/r1/agents/x",
        "runtime/state.json",
        "logs/a.log",
        "runs",
        "history/x",
        "registry/y",
    ] {
        assert!(is_artifact(p), "{p}");
    }
    for p in [
        "assistant/agent/runtime/x.md",
        "assistant/logs.md",
        "assistant/x.py",
        "assistant/pyc",
        "assistant/agent/history.md",
    ] {
        assert!(!is_artifact(p), "{p}");
    }
    let phase = artifact_gate(&[f("a/x.pyc"), f("a/y.md")]);
    assert!(!phase.passed && phase.detail.contains("a/x.pyc") && !phase.detail.contains("y.md"));
}

#[test]
fn dependency_manifests_fail_wherever_they_are() {
    for p in [
        "pyproject.toml",
        "assistant/requirements.txt",
        "assistant/agent/tools/x/uv.lock",
        "assistant/requirements.in",
        "a/package.json",
        "a/setup.py",
    ] {
        let phase = dependency_gate(&[f(p)]);
        assert!(!phase.passed, "{p}");
        assert!(phase.detail.contains(p));
    }
    // A folder of that name, or a similar file name, is not a manifest.
    assert!(dependency_gate(&[d("a/pyproject.toml"), f("a/requirements.txt.md")]).passed);
}

#[test]
fn many_offenders_are_cut_short() {
    let many: Vec<Entry> = (0..30).map(|i| f(&format!("a/{i}.pyc"))).collect();
    let phase = artifact_gate(&many);
    assert!(phase.detail.ends_with("(and 10 more)"), "{}", phase.detail);
}

#[test]
fn the_load_gate_checks_changed_cores_or_all() {
    let cores = vec!["assistant".to_owned(), "evolver".to_owned()];
    let changed = |v: &[&str]| v.iter().map(|s| (*s).to_owned()).collect::<Vec<_>>();
    assert_eq!(cores_to_load(None, &cores), cores);
    assert_eq!(
        cores_to_load(
            Some(&changed(&["evolver/agent/SOUL.md", "evolver/agent.yaml"])),
            &cores
        ),
        ["evolver"]
    );
    assert_eq!(
        cores_to_load(Some(&changed(&["newcore/agent.yaml"])), &cores),
        ["newcore"]
    );
    assert_eq!(
        cores_to_load(Some(&changed(&["agent.yaml"])), &cores),
        cores,
        "the global manifest feeds every core"
    );
    assert!(cores_to_load(Some(&changed(&["README.md", ".evolve/x/y"])), &cores).is_empty());
    assert!(cores_to_load(Some(&[]), &cores).is_empty());
}

#[test]
fn load_phases_need_a_loading_core_with_unique_tool_names() {
    let t = |n: &str, p: &str| (n.to_owned(), p.to_owned());
    assert!(load_phase("a", None).passed);
    let p = load_phase("a", Some(Err("agent.yaml: bad".into())));
    assert_eq!(
        (p.name.as_str(), p.passed, p.detail.as_str()),
        ("core_load:a", false, "agent.yaml: bad")
    );
    let p = load_phase(
        "a",
        Some(Ok(vec![t("read_file", "builtin"), t("echo", "authored")])),
    );
    assert!(p.passed, "{p:?}");
    let p = load_phase(
        "a",
        Some(Ok(vec![
            t("echo", "authored agent/tools/echo"),
            t("read_file", "builtin"),
            t("echo", "authored agent/tools/echo2"),
        ])),
    );
    assert!(!p.passed);
    assert!(
        p.detail
            .contains("echo (authored agent/tools/echo, authored agent/tools/echo2)"),
        "{}",
        p.detail
    );
}

#[test]
fn a_report_passes_only_when_every_phase_does() {
    let ok = Phase::pass("a", "");
    let bad = Phase::fail("b", "why".into());
    assert!(GateReport::new(vec![ok.clone()]).passed);
    let r = GateReport::new(vec![ok, bad]);
    assert!(!r.passed);
    assert_eq!(r.failures(), ["b: why"]);
    assert!(!GateReport::new(vec![]).passed, "no phase is no pass");
}

#[test]
fn run_ids_and_their_folders_stay_inside() {
    for ok in ["r1", "20260101T000000-abc", "A_b-c", &"x".repeat(64)] {
        assert_eq!(check_run_id(ok).unwrap(), ok);
    }
    for bad in [
        "",
        " ",
        "../x",
        "a/b",
        ".x",
        "-rf",
        "a b",
        "a\u{0}",
        "é",
        &"x".repeat(65),
        "..",
    ] {
        assert!(check_run_id(bad).is_err(), "{bad:?}");
    }
    let agents = Path::new("/h/agents");
    assert_eq!(
        run_dir(agents, "r1").unwrap(),
        Path::new("/h/agents/.evolve/runs/r1")
    );
    assert!(run_dir(agents, "../../etc").is_err());
}

fn write(root: &Path, rel: &str, text: &str) {
    let p = root.join(rel);
    std::fs::create_dir_all(p.parent().unwrap()).unwrap();
    std::fs::write(p, text).unwrap();
}

const CORE: &str = "schema_version: 1\nagent:\n  id: c\ntools:\n  toolsets: [coding]\n";

#[test]
fn a_real_tree_is_gated_end_to_end() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    write(root, "c/agent.yaml", CORE);
    write(root, "c/agent/SOUL.md", "hi");
    write(root, ".git", "gitdir: elsewhere");
    let r = run(root, None);
    assert!(r.passed, "{:?}", r.failures());
    assert!(r.phases.iter().any(|p| p.name == "core_load:c"));

    // A broken manifest, an artifact, a manifest of dependencies and a link.
    write(
        root,
        "c/agent.yaml",
        "schema_version: 1\nagent:\n  id: other\n",
    );
    write(root, "c/agent/tools/x/__pycache__/m.pyc", "");
    write(root, "c/requirements.txt", "requests");
    std::os::unix::fs::symlink("/etc", root.join("c/agent/etc")).unwrap();
    let r = run(root, Some(&["c/agent.yaml".to_owned()]));
    assert!(!r.passed);
    let failed: Vec<&str> = r
        .phases
        .iter()
        .filter(|p| !p.passed)
        .map(|p| p.name.as_str())
        .collect();
    assert_eq!(
        failed,
        ["path_safety", "artifact", "dependency", "core_load:c"]
    );
    // The listing never walked through the link.
    let entries = list_tree(root).unwrap();
    assert!(entries.iter().all(|e| !e.path.starts_with("c/agent/etc/")));
    assert!(entries.iter().all(|e| e.path != ".git"));
}

#[test]
fn a_removed_core_passes_its_load_gate() {
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), "c/agent.yaml", CORE);
    let r = run(dir.path(), Some(&["gone/agent.yaml".to_owned()]));
    assert!(r.passed, "{:?}", r.failures());
    assert_eq!(r.phases.last().unwrap().detail, "core removed");
}
