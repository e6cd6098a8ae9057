use super::*;

fn rows(tenant: &str, n: i64) -> Vec<(String, String, String)> {
    // (detail, prev_hash, hash) of n chained rows
    let mut out = Vec::new();
    let mut prev = GENESIS.to_owned();
    for seq in 1..=n {
        let detail = format!("{{\"n\":{seq}}}");
        let hash = link(tenant, seq, &detail, &prev).hash();
        out.push((detail, prev.clone(), hash.clone()));
        prev = hash;
    }
    out
}

fn link<'a>(tenant: &'a str, seq: i64, detail: &'a str, prev: &'a str) -> Link<'a> {
    Link {
        tenant,
        seq,
        at: 1_000 + seq,
        actor: "boss",
        role: "admin",
        surface: "rest",
        action: "token.issued",
        target: "alice",
        detail,
        prev_hash: prev,
    }
}

#[test]
fn a_chain_verifies_and_its_head_is_the_last_row() {
    let rs = rows("acme", 5);
    let mut v = Verifier::new("acme");
    for (i, (detail, prev, hash)) in rs.iter().enumerate() {
        v.next(&link("acme", i as i64 + 1, detail, prev), hash)
            .unwrap();
    }
    assert_eq!(v.finish(Some((5, &rs[4].2))).unwrap(), 5);
    // An empty chain with no head is whole.
    assert_eq!(Verifier::new("acme").finish(None).unwrap(), 0);
}

#[test]
fn every_kind_of_tampering_names_the_first_broken_row() {
    let rs = rows("acme", 5);
    let walk = |edit: &dyn Fn(i64, &mut String, &mut String) -> bool| -> Result<i64, Broken> {
        let mut v = Verifier::new("acme");
        for (i, (detail, prev, hash)) in rs.iter().enumerate() {
            let seq = i as i64 + 1;
            let (mut detail, mut hash) = (detail.clone(), hash.clone());
            if !edit(seq, &mut detail, &mut hash) {
                continue; // the row is gone
            }
            v.next(&link("acme", seq, &detail, prev), &hash)?;
        }
        v.finish(Some((5, &rs[4].2)))
    };
    // A field changed.
    let e = walk(&|seq, d, _| {
        if seq == 3 {
            *d = "{\"n\":33}".into();
        }
        true
    })
    .unwrap_err();
    assert_eq!(e.seq, 3, "{e}");
    // A field changed and its hash recomputed: the next row no longer follows.
    let e = walk(&|seq, d, h| {
        if seq == 2 {
            *d = "{\"n\":22}".into();
            *h = link("acme", 2, d, &rs[0].2).hash();
        }
        true
    })
    .unwrap_err();
    assert_eq!(e.seq, 3, "{e}");
    // A row deleted in the middle, and the last one.
    assert_eq!(walk(&|seq, _, _| seq != 4).unwrap_err().seq, 4);
    let e = walk(&|seq, _, _| seq != 5).unwrap_err();
    assert_eq!(e.seq, 5, "{e}");
    assert!(e.why.contains("head"), "{e}");
}

#[test]
fn a_checkpoint_starts_the_chain_after_pruning() {
    let rs = rows("acme", 6);
    let mut v = Verifier::from_checkpoint("acme", 3, &rs[2].2);
    for (i, (detail, prev, hash)) in rs.iter().enumerate().skip(3) {
        v.next(&link("acme", i as i64 + 1, detail, prev), hash)
            .unwrap();
    }
    assert_eq!(v.finish(Some((6, &rs[5].2))).unwrap(), 6);
    // A forged checkpoint does not lead into the rows kept.
    let mut v = Verifier::from_checkpoint("acme", 3, GENESIS);
    let (detail, prev, hash) = &rs[3];
    assert_eq!(
        v.next(&link("acme", 4, detail, prev), hash)
            .unwrap_err()
            .seq,
        4
    );
}

#[test]
fn fields_cannot_bleed_into_each_other() {
    let a = Link {
        actor: "ab",
        role: "c",
        ..link("acme", 1, "{}", GENESIS)
    };
    let b = Link {
        actor: "a",
        role: "bc",
        ..link("acme", 1, "{}", GENESIS)
    };
    assert_ne!(a.hash(), b.hash());
    assert_eq!(a.hash().len(), 64);
}
