//! Slot pipeline overhead per turn on a warm runner (issue 14). Run with
//! `scripts/bench slots` or `cargo bench --bench slots`.
//!
//! One client, sequential turns of the fake model through
//! `POST /v1/sessions/{id}/turns`, each timed from the POST to
//! `turn.completed` on the session's WebSocket, on three cores of the same
//! server: the shipped `base_input` / `base_output` only (the host runs
//! them natively), the same two modules edited by one comment (so both run
//! in the warm Python runner), and the shipped base slots plus N Python
//! slots (N/2 input, N/2 output; `SLOT_PYTHON`, default 4).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::time::{Duration, Instant};

use futures_util::StreamExt;
use serde_json::{json, Value};
use tokio_tungstenite::tungstenite::Message;

mod common;

use common::*;

const BASE_INPUT: &str =
    "def process(ctx):\n    ctx.input.add_context(ctx.input.raw_text, role=\"user\")\n";
const BASE_OUTPUT: &str = "def process(ctx):\n    ctx.output.send_text(ctx.output.response_text)\n";

async fn until_completed(sock: &mut Ws) -> String {
    loop {
        match sock.next().await {
            Some(Ok(Message::Text(t))) => {
                let t = t.as_str();
                if t.contains("\"type\":\"slot.failed\"") {
                    panic!("slot failed: {t}")
                }
                if t.contains("\"type\":\"turn.completed\"") {
                    let v: Value = serde_json::from_str(t).unwrap();
                    return v["data"]["output"].as_str().unwrap_or("").to_owned();
                }
                if t.contains("\"type\":\"turn.failed\"") {
                    panic!("turn failed: {t}")
                }
            }
            Some(Ok(_)) => {}
            other => panic!("stream ended: {other:?}"),
        }
    }
}

fn slot(core: &Path, phase: &str, id: &str, module: &str) {
    let dir = core.join("agent").join(phase).join(id);
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join("slot.yaml"),
        "entrypoint: module:process\nfailure_policy: hard\n",
    )
    .unwrap();
    std::fs::write(dir.join("module.py"), module).unwrap();
}

/// A core with base slots (`edited`: run in Python) and `extra` Python slots.
fn core(home: &Path, id: &str, edited: bool, extra: usize) {
    let core = home.join("tenants/default/agents").join(id);
    std::fs::create_dir_all(&core).unwrap();
    std::fs::write(
        core.join("agent.yaml"),
        format!("schema_version: 1\nagent:\n  id: {id}\ntools:\n  toolsets: [coding]\n"),
    )
    .unwrap();
    let note = if edited { "# edited\n" } else { "" };
    slot(&core, "input", "base_input", &format!("{note}{BASE_INPUT}"));
    slot(
        &core,
        "output",
        "base_output",
        &format!("{note}{BASE_OUTPUT}"),
    );
    let (mut ins, mut outs) = (Vec::new(), Vec::new());
    for i in 0..extra {
        if i % 2 == 0 {
            let id = format!("hint_{i}");
            slot(
                &core,
                "input",
                &id,
                "def process(ctx):\n    ctx.input.add_context('hint', role='system')\n",
            );
            ins.push(id);
        } else {
            let id = format!("notice_{i}");
            slot(
                &core,
                "output",
                &id,
                "def process(ctx):\n    ctx.output.notice('seen ' + str(len(ctx.output.response_text)))\n",
            );
            outs.push(id);
        }
    }
    let list = |ids: &[String]| -> String { ids.iter().map(|i| format!("\n    - {i}")).collect() };
    ins.push("base_input".into());
    let mut output = vec!["base_output".to_owned()];
    output.extend(outs);
    std::fs::write(
        core.join("agent/pipelines.yaml"),
        format!(
            "schema_version: 1\nbootstrap:\n  serial: []\ninput:\n  serial:{}\n  parallel: []\n\
             output:\n  serial:{}\n  parallel: []\n",
            list(&ins),
            list(&output)
        ),
    )
    .unwrap();
}

fn main() {
    let n: usize = std::env::var("SLOT_TURNS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1000);
    let extra: usize = std::env::var("SLOT_PYTHON")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(4);
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let (srv, _) = start(None, &[]);
        let tok = token(&srv, None, "bench");
        let cases = [
            ("slots_base", false, 0, "base slots only (host-native)".to_owned()),
            ("slots_edited", true, 0, "base slots in the Python runner (2 slots)".to_owned()),
            (
                "slots_python",
                false,
                extra,
                format!("base slots + {extra} Python slots"),
            ),
        ];
        let client = demiurge::net::client_builder().build().unwrap();
        let mut p50s = Vec::new();
        for (id, edited, extra, name) in &cases {
            core(srv.home.path(), id, *edited, *extra);
            let r: Value = client
                .post(format!("http://{}/v1/sessions", srv.addr))
                .bearer_auth(&tok)
                .json(&json!({"core": id}))
                .send()
                .await
                .unwrap()
                .json()
                .await
                .unwrap();
            let sid = r["id"].as_str().unwrap().to_owned();
            let mut sock = ws(&srv, &sid, &tok, 0).await;
            let turns = format!("http://{}/v1/sessions/{sid}/turns", srv.addr);
            let one = || {
                let req = client
                    .post(&turns)
                    .bearer_auth(&tok)
                    .json(&json!({"input": "hi"}));
                async move {
                    let r = req.send().await.unwrap();
                    assert_eq!(r.status(), 202);
                }
            };
            for _ in 0..50 {
                one().await;
                assert!(until_completed(&mut sock).await.contains("[fake] hi"));
            }
            let mut lat: Vec<Duration> = Vec::with_capacity(n);
            let t = Instant::now();
            for _ in 0..n {
                let t0 = Instant::now();
                one().await;
                until_completed(&mut sock).await;
                lat.push(t0.elapsed());
            }
            let took = t.elapsed();
            lat.sort();
            println!(
                "slots: {name}: p50={:.3}ms p99={:.3}ms {:.0}/s (sequential, {n} turns)",
                pct(&lat, 0.5).as_secs_f64() * 1e3,
                pct(&lat, 0.99).as_secs_f64() * 1e3,
                n as f64 / took.as_secs_f64()
            );
            p50s.push(pct(&lat, 0.5));
        }
        let base = p50s[0].as_secs_f64();
        println!(
            "slots: p50 overhead over base-only: 2 Python base slots +{:.3}ms, {extra} Python slots +{:.3}ms ({:.3}ms per Python slot)",
            (p50s[1].as_secs_f64() - base) * 1e3,
            (p50s[2].as_secs_f64() - base) * 1e3,
            (p50s[2].as_secs_f64() - base) * 1e3 / extra.max(1) as f64
        );
    });
}
