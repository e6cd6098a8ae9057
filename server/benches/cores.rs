//! Core loading (issue 14): a core with 50 authored tool manifests and 20
//! skills, loaded cold (parse and validate every file, build the catalog)
//! and cached (what every turn after the first pays). Run with
//! `scripts/bench cores` or `cargo bench --bench cores`.
//!
//! - `load_core`: the loader alone (`agent.yaml`, pipelines, slots, 50
//!   `tool.yaml`, 20 skills), no cache;
//! - cold `CoreRepository::load`: a fresh repository each time (loader plus
//!   catalog resolution), as the first turn after a change pays;
//! - cached `CoreRepository::load`: the same repository again.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::time::{Duration, Instant};

use demiurge::core::repository::CoreRepository;
use demiurge::ids::{CoreId, TenantId};

const TOOLS: usize = 50;
const SKILLS: usize = 20;

fn write(root: &Path, rel: &str, text: &str) {
    let p = root.join(rel);
    std::fs::create_dir_all(p.parent().unwrap()).unwrap();
    std::fs::write(p, text).unwrap();
}

/// `home/tenants/bench/agents/big`: the seed's layout plus authored tools and skills.
fn build_core(home: &Path) -> std::path::PathBuf {
    let core = home.join("tenants/bench/agents/big");
    write(
        &core,
        "agent.yaml",
        "schema_version: 1\nagent:\n  id: big\n  summary: bench core\nslots:\n  tools: agent/tools\n  skills: agent/skills\ntools:\n  toolsets: [coding, demiurge_control, schedule]\ncapabilities:\n  defaults:\n    fs.read: {scope: workspace}\n",
    );
    write(&core, "agent/SOUL.md", "# big\n\nA core with many tools.\n");
    write(
        &core,
        "agent/pipelines.yaml",
        "schema_version: 1\nbootstrap:\n  serial: []\ninput:\n  serial: [base_input]\n  parallel: []\noutput:\n  serial: [base_output]\n  parallel: []\n",
    );
    write(
        &core,
        "agent/input/base_input/slot.yaml",
        "entrypoint: module:process\nfailure_policy: hard\n",
    );
    write(
        &core,
        "agent/output/base_output/slot.yaml",
        "entrypoint: module:process\nfailure_policy: hard\n",
    );
    for i in 0..TOOLS {
        write(
            &core,
            &format!("agent/tools/tool_{i:02}/tool.yaml"),
            &format!(
                "description: Authored tool number {i}.\nrisk: low\napproval_policy: auto\ninput_schema:\n  type: object\n  properties:\n    path: {{type: string, description: a path}}\n    count: {{type: integer, minimum: 0}}\n  required: [path]\n  additionalProperties: false\n"
            ),
        );
        write(
            &core,
            &format!("agent/tools/tool_{i:02}/module.py"),
            "def execute(args, ctx):\n    return {'ok': True}\n",
        );
    }
    for i in 0..SKILLS {
        write(
            &core,
            &format!("agent/skills/skill_{i:02}/SKILL.md"),
            &format!(
                "---\nname: skill_{i:02}\ndescription: Skill {i}.\n---\n# Skill {i}\n\nSteps.\n"
            ),
        );
    }
    core
}

fn pct(sorted: &[Duration], q: f64) -> Duration {
    sorted[((sorted.len() as f64 - 1.0) * q).round() as usize]
}

fn report(name: &str, mut lat: Vec<Duration>) {
    lat.sort();
    println!(
        "{name:<34} n={:<6} p50={:>10.1?} p99={:>10.1?}",
        lat.len(),
        pct(&lat, 0.5),
        pct(&lat, 0.99)
    );
}

fn main() {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let home = dir.path().join("home");
    let core = build_core(&home);
    let tenant = TenantId::parse("bench").unwrap();
    let id = CoreId::parse("big").unwrap();

    let loaded = demiurge::core::load_core(&core, "big", &demiurge::catalog::toolset).unwrap();
    assert_eq!(loaded.authored.len(), TOOLS);
    assert_eq!(loaded.skills.len(), SKILLS);
    println!(
        "core: {TOOLS} authored tool manifests, {SKILLS} skills, {} built-in tools",
        loaded.builtin_tools.len()
    );

    let n = 300;
    let mut lat = Vec::with_capacity(n);
    for _ in 0..n {
        let t = Instant::now();
        let c = demiurge::core::load_core(&core, "big", &demiurge::catalog::toolset).unwrap();
        lat.push(t.elapsed());
        std::hint::black_box(c);
    }
    report("load_core (loader alone)", lat);

    let mut lat = Vec::with_capacity(n);
    for _ in 0..n {
        let repo = CoreRepository::new(&home);
        let t = Instant::now();
        let v = rt.block_on(repo.load(&tenant, &id)).unwrap();
        lat.push(t.elapsed());
        std::hint::black_box(v);
    }
    report("CoreRepository::load cold", lat);

    let repo = CoreRepository::new(&home);
    rt.block_on(repo.load(&tenant, &id)).unwrap();
    let n = 100_000;
    let mut lat = Vec::with_capacity(n);
    for _ in 0..n {
        let t = Instant::now();
        let v = rt.block_on(repo.load(&tenant, &id)).unwrap();
        lat.push(t.elapsed());
        std::hint::black_box(v);
    }
    report("CoreRepository::load cached", lat);
}
