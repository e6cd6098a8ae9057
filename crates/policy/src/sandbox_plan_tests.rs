use super::*;

fn facts(euid: u32, abi: i32) -> Facts {
    Facts {
        euid,
        landlock_abi: abi,
    }
}

fn request(network: bool) -> Request<'static> {
    Request {
        tenant: "acme",
        workspace: Path::new("/srv/home/tenants/acme/workspaces/alice/default"),
        home: Path::new("/srv/home/runtime/terminal-home/acme/alice"),
        tmp: Path::new("/srv/home/runtime/tmp/acme/alice"),
        network,
        read_only: &[],
        state: None,
    }
}

#[test]
fn availability_table() {
    let on = Settings::default();
    let off = Settings {
        enabled: false,
        ..Settings::default()
    };
    // (settings, euid, abi) -> expected variant
    let cases: Vec<(&Settings, u32, i32, &str)> = vec![
        (&off, 0, 7, "off"),
        (&off, 1000, 0, "off"),
        (&on, 0, 0, "unavailable"),
        (&on, 0, -38, "unavailable"),
        (&on, 1000, -95, "unavailable"),
        (&on, 1000, 1, "unavailable"),
        (&on, 1000, 5, "unavailable"),
        (&on, 1000, 6, "confined"),
        (&on, 1000, 7, "confined"),
        (&on, 0, 1, "confined"),
        (&on, 0, 5, "confined"),
        (&on, 0, 6, "confined"),
        (&on, 0, 9, "confined"),
    ];
    for (settings, euid, abi, want) in cases {
        let got = availability(settings, facts(euid, abi));
        let name = match &got {
            Availability::Confined { .. } => "confined",
            Availability::Off => "off",
            Availability::Unavailable(_) => "unavailable",
        };
        assert_eq!(name, want, "euid {euid} abi {abi}: {got:?}");
    }
}

#[test]
fn root_drops_privileges_and_scopes_follow_the_abi() {
    let on = Settings::default();
    assert_eq!(
        availability(&on, facts(0, 7)),
        Availability::Confined {
            drop_privileges: true,
            scoped: true,
            tcp_rules: true
        }
    );
    assert_eq!(
        availability(&on, facts(0, 3)),
        Availability::Confined {
            drop_privileges: true,
            scoped: false,
            tcp_rules: false
        }
    );
    assert_eq!(
        availability(&on, facts(1000, 6)),
        Availability::Confined {
            drop_privileges: false,
            scoped: true,
            tcp_rules: true
        }
    );
}

#[test]
fn unavailable_reasons_say_what_is_missing() {
    let on = Settings::default();
    let no_landlock = availability(&on, facts(0, 0));
    assert!(no_landlock
        .unavailable_reason()
        .is_some_and(|r| r.contains("Landlock")));
    let old = availability(&on, facts(1000, 4));
    assert!(old
        .unavailable_reason()
        .is_some_and(|r| r.contains("ABI 4") && r.contains("not root")));
    let zero_span = Settings {
        uid_span: 0,
        ..Settings::default()
    };
    assert!(availability(&zero_span, facts(0, 7))
        .unavailable_reason()
        .is_some());
    assert_eq!(availability(&on, facts(0, 7)).unavailable_reason(), None);
}

#[test]
fn tenant_uids_are_stable_in_range_and_spread() {
    let s = Settings::default();
    let a = tenant_uid(&s, "acme");
    assert_eq!(a, tenant_uid(&s, "acme"));
    let mut seen = std::collections::HashSet::new();
    for i in 0..500 {
        let uid = tenant_uid(&s, &format!("tenant-{i}"));
        assert!((s.uid_base..s.uid_base + s.uid_span).contains(&uid));
        seen.insert(uid);
    }
    assert!(
        seen.len() > 490,
        "uids should rarely collide: {}",
        seen.len()
    );
    let narrow = Settings {
        uid_base: 70_000,
        uid_span: 1,
        ..Settings::default()
    };
    assert_eq!(tenant_uid(&narrow, "x"), 70_000);
    assert_eq!(tenant_uid(&narrow, "y"), 70_000);
    let top = Settings {
        uid_base: u32::MAX - 2,
        uid_span: 100,
        ..Settings::default()
    };
    assert!(tenant_uid(&top, "z") >= u32::MAX - 2);
}

#[test]
fn plan_grants_only_the_private_folders_read_write() {
    let s = Settings::default();
    let avail = availability(&s, facts(0, 7));
    let p = plan(&s, &avail, &request(true), Some("/usr/bin:/bin"));
    assert_eq!(
        p.read_write,
        vec![
            PathBuf::from("/srv/home/tenants/acme/workspaces/alice/default"),
            PathBuf::from("/srv/home/runtime/terminal-home/acme/alice"),
            PathBuf::from("/srv/home/runtime/tmp/acme/alice"),
        ]
    );
    for system in SYSTEM_READ_ROOTS {
        assert!(p.read_only.contains(&PathBuf::from(system)));
    }
    assert!(!p.read_only.iter().any(|r| r.starts_with("/srv")));
    assert!(!p.read_only.contains(&PathBuf::from("/proc")));
    assert!(!p.read_only.contains(&PathBuf::from("/")));
    assert!(!p.read_only.contains(&PathBuf::from("/tmp")));
    assert!(p.devices.contains(&PathBuf::from("/dev/null")));
    assert!(!p.devices.iter().any(|d| d == Path::new("/dev/shm")));
    assert_eq!(p.limits, Limits::default());
}

#[test]
fn plan_ids_and_listing_only_with_a_per_tenant_uid() {
    let s = Settings::default();
    let root = plan(&s, &availability(&s, facts(0, 7)), &request(true), None);
    let uid = tenant_uid(&s, "acme");
    assert_eq!(root.ids, Some((uid, uid)));
    assert!(root.list_from_root);
    let user = plan(&s, &availability(&s, facts(1000, 7)), &request(true), None);
    assert_eq!(user.ids, None);
    assert!(!user.list_from_root);
}

#[test]
fn network_none_uses_what_the_machine_has() {
    let s = Settings::default();
    // (euid, abi, network) -> (deny_tcp, new_netns)
    let cases = [
        (0, 7, true, (false, false)),
        (0, 7, false, (true, true)),
        (0, 3, false, (false, true)),
        (1000, 6, false, (true, false)),
        (1000, 6, true, (false, false)),
    ];
    for (euid, abi, network, want) in cases {
        let p = plan(
            &s,
            &availability(&s, facts(euid, abi)),
            &request(network),
            None,
        );
        assert_eq!(
            (p.deny_tcp, p.new_netns),
            want,
            "euid {euid} abi {abi} net {network}"
        );
    }
}

#[test]
fn extra_read_roots_must_be_absolute_and_unique() {
    let s = Settings {
        extra_read_roots: vec![
            PathBuf::from("/data/shared"),
            PathBuf::from("relative/dir"),
            PathBuf::from("/usr"),
        ],
        ..Settings::default()
    };
    let p = plan(&s, &availability(&s, facts(0, 7)), &request(true), None);
    assert!(p.read_only.contains(&PathBuf::from("/data/shared")));
    assert!(!p.read_only.contains(&PathBuf::from("relative/dir")));
    assert_eq!(
        p.read_only
            .iter()
            .filter(|r| *r == Path::new("/usr"))
            .count(),
        1
    );
}

#[test]
fn child_path_keeps_only_reachable_entries() {
    let roots: Vec<PathBuf> = SYSTEM_READ_ROOTS.iter().map(PathBuf::from).collect();
    let cases = [
        (None, FALLBACK_PATH),
        (Some(""), FALLBACK_PATH),
        (Some("/root/.cargo/bin:/root/.pyenv/shims"), FALLBACK_PATH),
        (
            Some("/root/.pyenv/shims:/usr/local/bin:/usr/bin:/bin"),
            "/usr/local/bin:/usr/bin:/bin",
        ),
        (Some("/usr/bin:/usr/bin:/bin"), "/usr/bin:/bin"),
        (Some("bin:./x:/usr/bin"), "/usr/bin"),
        (Some("/usr/../srv/secret:/usr/bin"), "/usr/bin"),
        (Some("/usr/binary-looking:/usrx/bin"), "/usr/binary-looking"),
        (Some("/home/me/bin"), FALLBACK_PATH),
    ];
    for (host, want) in cases {
        assert_eq!(child_path(host, &roots), want, "PATH {host:?}");
    }
}

#[test]
fn a_read_root_above_the_home_or_database_is_caught() {
    let home = PathBuf::from("/opt/demiurge/home");
    let db = PathBuf::from("/var/lib/db/demiurge.db");
    let private = [home.clone(), db.clone()];
    let roots = read_roots(&Settings::default());
    assert_eq!(
        exposed_by(&roots, &private),
        Some((PathBuf::from("/opt"), home.clone()))
    );
    let safe = [
        PathBuf::from("/srv/demiurge"),
        PathBuf::from("/srv/db.sqlite"),
    ];
    assert_eq!(exposed_by(&roots, &safe), None);
    let wide = Settings {
        extra_read_roots: vec![PathBuf::from("/srv")],
        ..Settings::default()
    };
    assert_eq!(
        exposed_by(&read_roots(&wide), &safe),
        Some((PathBuf::from("/srv"), PathBuf::from("/srv/demiurge")))
    );
    let narrow = Settings {
        extra_read_roots: vec![PathBuf::from("/srv/shared")],
        ..Settings::default()
    };
    assert_eq!(exposed_by(&read_roots(&narrow), &safe), None);
    assert_eq!(
        exposed_by(&roots, &[PathBuf::from("/etc/demiurge")]),
        Some((PathBuf::from("/etc"), PathBuf::from("/etc/demiurge")))
    );
    assert_eq!(exposed_by(&roots, &[db]), None);
}
