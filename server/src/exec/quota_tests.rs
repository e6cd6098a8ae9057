use super::*;

#[test]
fn a_command_stops_at_its_own_cap() {
    let quota = StorageQuota::new(100, 1_000);
    let budget = quota.budget("acme");
    assert_eq!(budget.take(60), (60, None));
    assert_eq!(budget.take(60), (40, Some(QuotaLimit::Command(100))));
    assert_eq!(budget.take(1), (0, Some(QuotaLimit::Command(100))));
    assert_eq!(budget.command_used(), 100);
    assert_eq!(quota.used("acme"), 100);
    // A second command of the tenant has its own cap.
    assert_eq!(quota.budget("acme").take(100), (100, None));
    assert_eq!(quota.used("acme"), 200);
}

#[test]
fn the_tenant_cap_is_shared_and_other_tenants_are_untouched() {
    let quota = StorageQuota::new(100, 150);
    let (a, b) = (quota.budget("acme"), quota.budget("acme"));
    assert_eq!(a.take(100), (100, None));
    assert_eq!(b.take(100), (50, Some(QuotaLimit::Tenant(150))));
    // The command counter only keeps what the tenant granted.
    assert_eq!(b.command_used(), 50);
    assert_eq!(quota.exhausted("acme"), Some(QuotaLimit::Tenant(150)));
    assert_eq!(quota.exhausted("evil"), None);
    assert_eq!(quota.budget("evil").take(100), (100, None));
    assert_eq!(quota.used("acme"), 150);
    assert_eq!(quota.used("evil"), 100);
}

#[test]
fn the_command_limit_is_named_when_both_are_short() {
    let quota = StorageQuota::new(10, 10);
    let budget = quota.budget("t");
    assert_eq!(budget.take(20), (10, Some(QuotaLimit::Command(10))));
}

#[test]
fn release_and_refund_never_go_below_zero() {
    let quota = StorageQuota::new(100, 100);
    let budget = quota.budget("t");
    assert_eq!(budget.take(30), (30, None));
    budget.refund(10);
    assert_eq!((budget.command_used(), quota.used("t")), (20, 20));
    quota.release("t", 500);
    assert_eq!(quota.used("t"), 0);
    quota.add_existing("t", 90);
    assert_eq!(
        quota.budget("t").take(20),
        (10, Some(QuotaLimit::Tenant(100)))
    );
}

#[test]
fn fit_cuts_text_on_a_character_boundary() {
    let quota = StorageQuota::new(5, 100);
    let budget = quota.budget("t");
    // "aé" is 3 bytes; "aéé" 5; "aééé" 7.
    assert_eq!(budget.fit("aé"), ("aé", None));
    let (kept, limit) = budget.fit("éé");
    assert_eq!((kept, limit), ("é", Some(QuotaLimit::Command(5))));
    assert_eq!(budget.command_used(), 5);
    let quota = StorageQuota::new(4, 100);
    let budget = quota.budget("t");
    // 4 bytes granted, but "é" straddles byte 4: only "aé" (3 bytes) is kept
    // and the unused byte is refunded.
    let (kept, limit) = budget.fit("aéé");
    assert_eq!((kept, limit), ("aé", Some(QuotaLimit::Command(4))));
    assert_eq!((budget.command_used(), quota.used("t")), (3, 3));
}

#[test]
fn budgets_of_one_tenant_share_the_tenant_counter_only() {
    let quota = StorageQuota::new(10, 15);
    let artifact = quota.budget("t");
    let log = quota.budget("t");
    assert_eq!(artifact.take(10), (10, None));
    assert_eq!(log.take(10), (5, Some(QuotaLimit::Tenant(15))));
}

#[test]
fn unlimited_never_refuses() {
    let budget = OutputBudget::unlimited();
    assert_eq!(budget.take(u64::MAX / 2), (u64::MAX / 2, None));
    assert_eq!(budget.fit("hello"), ("hello", None));
}

#[test]
fn concurrent_writers_never_exceed_the_tenant_cap() {
    let quota = StorageQuota::new(1_000, 5_000);
    let threads: Vec<_> = (0..8)
        .map(|_| {
            let budget = quota.budget("t");
            std::thread::spawn(move || {
                let mut got = 0;
                for _ in 0..1_000 {
                    got += budget.take(7).0;
                }
                got
            })
        })
        .collect();
    let total: u64 = threads.into_iter().map(|t| t.join().unwrap()).sum();
    assert_eq!(total, 5_000);
    assert_eq!(quota.used("t"), 5_000);
}

#[test]
fn seeding_counts_each_tenants_artifacts() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("artifacts");
    assert_eq!(
        StorageQuota::new(1, 1).seed_from_artifacts(&root).unwrap(),
        0
    );
    std::fs::create_dir_all(root.join("acme/abc")).unwrap();
    std::fs::create_dir_all(root.join("evil/def")).unwrap();
    std::fs::write(root.join("acme/abc/p.stdout.log"), vec![b'x'; 300]).unwrap();
    std::fs::write(root.join("acme/abc/p.stderr.log"), vec![b'x'; 20]).unwrap();
    std::fs::write(root.join("evil/def/q.stdout.log"), vec![b'x'; 7]).unwrap();
    std::fs::write(root.join("stray.txt"), vec![b'x'; 1000]).unwrap();
    std::os::unix::fs::symlink("/etc", root.join("acme/abc/link")).unwrap();
    let quota = StorageQuota::new(1_000, 1_000);
    assert_eq!(quota.seed_from_artifacts(&root).unwrap(), 327);
    assert_eq!(quota.used("acme"), 320);
    assert_eq!(quota.used("evil"), 7);
    assert_eq!(quota.used("other"), 0);
}

#[test]
fn messages_name_the_flag_and_the_limit() {
    let command = QuotaLimit::Command(1_048_576).to_string();
    assert!(command.contains("1048576 bytes") && command.contains("--artifact-max-bytes"));
    let tenant = QuotaLimit::Tenant(2_000).to_string();
    assert!(tenant.contains("2000 bytes") && tenant.contains("--tenant-storage-max-bytes"));
}
