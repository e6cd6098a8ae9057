use super::*;

fn ids() -> (TenantId, PrincipalId) {
    (
        TenantId::parse("acme").unwrap(),
        PrincipalId::parse("alice@example.com").unwrap(),
    )
}

#[test]
fn every_path_has_its_documented_place() {
    let home = HomeLayout::new("/srv/demiurge");
    let (t, p) = ids();
    let cases: Vec<(PathBuf, &str)> = vec![
        (home.database_file(), "/srv/demiurge/demiurge.db"),
        (home.node_id_file(), "/srv/demiurge/node_id"),
        (home.keys_dir(), "/srv/demiurge/keys"),
        (home.tenant_dir(&t), "/srv/demiurge/tenants/acme"),
        (home.agents_dir(&t), "/srv/demiurge/tenants/acme/agents"),
        (
            home.workspace_dir(&t, &p, "default"),
            "/srv/demiurge/tenants/acme/workspaces/alice@example.com/default",
        ),
        (home.runtime_dir(), "/srv/demiurge/runtime"),
        (home.processes_dir(), "/srv/demiurge/runtime/processes"),
        (home.artifacts_root(), "/srv/demiurge/runtime/artifacts"),
        (
            home.tenant_artifacts_dir(&t),
            "/srv/demiurge/runtime/artifacts/acme",
        ),
        (
            home.terminal_home(&t, &p),
            "/srv/demiurge/runtime/terminal-home/acme/alice@example.com",
        ),
        (
            home.terminal_tmp(&t, &p),
            "/srv/demiurge/runtime/tmp/acme/alice@example.com",
        ),
        (
            home.session_state_dir("0190-abc"),
            "/srv/demiurge/runtime/session-state/0190-abc",
        ),
    ];
    for (got, want) in cases {
        assert_eq!(got, PathBuf::from(want));
        assert!(got.starts_with(home.root()), "{got:?}");
    }
}

#[test]
fn tenants_and_principals_get_separate_folders() {
    let home = HomeLayout::new("/h");
    let (t, p) = ids();
    let other_tenant = TenantId::parse("globex").unwrap();
    let other_principal = PrincipalId::parse("bob").unwrap();
    assert_ne!(home.agents_dir(&t), home.agents_dir(&other_tenant));
    assert_ne!(
        home.workspace_dir(&t, &p, "default"),
        home.workspace_dir(&t, &other_principal, "default")
    );
    assert_ne!(
        home.terminal_home(&t, &p),
        home.terminal_home(&other_tenant, &p)
    );
    assert_ne!(
        home.terminal_tmp(&t, &p),
        home.terminal_tmp(&t, &other_principal)
    );
    assert!(!home
        .tenant_artifacts_dir(&t)
        .starts_with(home.tenant_dir(&t)));
}

#[test]
fn a_home_is_made_absolute_against_the_current_folder() {
    let cwd = Path::new("/work/project");
    let cases: &[(&str, &str)] = &[
        (".demiurge", "/work/project/.demiurge"),
        ("./.demiurge", "/work/project/.demiurge"),
        ("state/home", "/work/project/state/home"),
        ("state/./home/", "/work/project/state/home"),
        ("../shared/home", "/work/shared/home"),
        ("a/../b", "/work/project/b"),
        ("../../../..", "/"),
        ("/srv/demiurge", "/srv/demiurge"),
        ("/srv/../srv/./demiurge", "/srv/demiurge"),
        ("/", "/"),
        (".", "/work/project"),
    ];
    for (given, want) in cases {
        assert_eq!(
            absolute_from(cwd, Path::new(given)).unwrap(),
            PathBuf::from(want),
            "{given}"
        );
    }
    assert!(absolute_from(cwd, Path::new("")).is_err());
    // A relative current folder (never given by the OS) still ends absolute.
    assert_eq!(
        absolute_from(Path::new("rel"), Path::new("h")).unwrap(),
        PathBuf::from("/rel/h")
    );
}

#[test]
fn the_existing_part_of_a_home_is_resolved_through_links() {
    let dir = tempfile::tempdir().unwrap();
    let real = dir.path().canonicalize().unwrap().join("real");
    std::fs::create_dir(&real).unwrap();
    let link = dir.path().join("link");
    std::os::unix::fs::symlink(&real, &link).unwrap();
    assert_eq!(absolute_home(&link).unwrap(), real);
    // A home that does not exist yet keeps its missing tail.
    assert_eq!(
        absolute_home(&link.join("not/yet")).unwrap(),
        real.join("not/yet")
    );
    assert!(absolute_home(Path::new(".demiurge")).unwrap().is_absolute());
}
