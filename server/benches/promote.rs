//! Promote latency (issue 14): an evolve run of the seeded `assistant`
//! core, edited (one skill file rewritten, as an evolver would write it;
//! the same path every time, so the tree keeps its size), then
//! reviewed and promoted through the version store, `git` subprocesses and
//! gates included; each cycle discards its run after. No child agent runs:
//! the figures are the host's share. Run with `scripts/bench promote` or
//! `cargo bench --bench promote`.
//!
//! - `review`: snapshot the worktree, record the run ref, run the gates
//!   (path safety, artifacts and dependency files, every changed core
//!   loads, cross-core references, the MCP review);
//! - `promote`: snapshot again, compare with the review, re-run the gates,
//!   fast-forward the checkout and advance `live`/`previous`;
//! - `start`: the run's worktree of live;
//! - `cycle`: start, edit, review and promote together.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::{Duration, Instant};

use demiurge::core::repository::CoreRepository;
use demiurge::ids::TenantId;

fn pct(sorted: &[Duration], q: f64) -> Duration {
    sorted[((sorted.len() as f64 - 1.0) * q).round() as usize]
}

fn report(name: &str, mut lat: Vec<Duration>) {
    lat.sort();
    println!(
        "{name:<10} n={:<5} p50={:>10.1?} p99={:>10.1?}",
        lat.len(),
        pct(&lat, 0.5),
        pct(&lat, 0.99)
    );
}

fn main() {
    let n: usize = std::env::var("PROMOTE_RUNS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(200);
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let repo = CoreRepository::new(dir.path());
    let tenant = TenantId::parse("bench").unwrap();
    repo.ensure_seeded(&tenant).unwrap();
    let (mut start, mut review, mut promote, mut cycle) = (
        Vec::with_capacity(n),
        Vec::with_capacity(n),
        Vec::with_capacity(n),
        Vec::with_capacity(n),
    );
    for i in 0..n {
        let run = format!("evolve-bench-{i:05}");
        let t0 = Instant::now();
        let (_, wt) = rt
            .block_on(repo.run_create(&tenant, "assistant", &run, "add a skill"))
            .unwrap();
        start.push(t0.elapsed());
        let skill = wt.join("assistant/agent/skills/bench/SKILL.md");
        std::fs::create_dir_all(skill.parent().unwrap()).unwrap();
        std::fs::write(
            &skill,
            format!(
                "---\nname: bench\ndescription: Revision {i}.\n---\n# Bench\n\nRevision {i}.\n"
            ),
        )
        .unwrap();
        let t = Instant::now();
        let r = rt
            .block_on(repo.run_review(&tenant, "assistant", &run))
            .unwrap();
        review.push(t.elapsed());
        assert!(r.report.passed, "{:?}", r.report.failures());
        let t = Instant::now();
        rt.block_on(repo.run_promote(&tenant, "assistant", &run, None))
            .unwrap();
        promote.push(t.elapsed());
        cycle.push(t0.elapsed());
        assert!(rt
            .block_on(repo.run_discard(&tenant, "assistant", &run))
            .unwrap());
    }
    println!("{n} runs of the seeded assistant core, one skill rewritten each, promoted in turn");
    report("start", start);
    report("review", review);
    report("promote", promote);
    report("cycle", cycle);
}
