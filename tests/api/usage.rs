//! Usage metering end to end, on SQLite and PostgreSQL: the fake model's
//! token counts and the tools' calls and CPU time land in `/v1/usage` for
//! their tenant and principal only; members are refused; CSV says what JSON
//! says; the server operator's CLI sees every tenant and rolls up, and an
//! hour's roll-up equals the sum of its raw rows.

use std::time::Duration;

use serde_json::{json, Value};
use sqlx::Row;

use crate::helpers::*;

/// Tokens the fake provider counts for `text`: a token per four bytes
/// (rounded up) of the request's messages, here the one user message.
fn fake_input_tokens(text: &str) -> u64 {
    let bytes = json!({"role": "user", "content": text}).to_string().len() as u64;
    bytes.div_ceil(4)
}

async fn usage(app: &TestApp, tok: &str, query: &str) -> (u16, Value) {
    app.get(tok, &format!("/v1/usage{query}")).await
}

/// Poll (the meter writes off the turn's path) until `done` holds.
async fn usage_until(
    app: &TestApp,
    tok: &str,
    query: &str,
    done: impl Fn(&Value) -> bool,
) -> Value {
    let mut last = Value::Null;
    for _ in 0..200 {
        let (st, body) = usage(app, tok, query).await;
        assert_eq!(st, 200, "{body}");
        if done(&body) {
            return body;
        }
        last = body;
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("usage never showed what was expected; last report: {last}");
}

fn total(report: &Value, field: &str) -> u64 {
    report["rows"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r[field].as_u64().unwrap())
        .sum()
}

fn sum_f(report: &Value, field: &str) -> f64 {
    report["rows"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r[field].as_f64().unwrap())
        .sum()
}

/// The raw rows' sums per hour and the roll-up's, read from the database.
async fn raw_and_rolled(app: &TestApp) -> (Vec<(i64, i64, i64, i64)>, Vec<(i64, i64, i64, i64)>) {
    let mut db = app.usage_db().await;
    let raw = sqlx::query(
        "SELECT h, CAST(SUM(c) AS BIGINT), CAST(SUM(i) AS BIGINT), CAST(SUM(t) AS BIGINT) FROM (\
           SELECT (at / 3600000) * 3600000 AS h, 1 AS c, COALESCE(input_tokens, 0) AS i, 0 AS t \
           FROM usage_model_calls WHERE tenant_id = 'acme' \
           UNION ALL SELECT (at / 3600000) * 3600000, 0, 0, calls FROM usage_tool_calls \
           WHERE tenant_id = 'acme') u GROUP BY h ORDER BY h",
    )
    .fetch_all(&mut db)
    .await
    .unwrap();
    let rolled = sqlx::query(
        "SELECT hour, CAST(SUM(model_calls) AS BIGINT), CAST(SUM(input_tokens) AS BIGINT), \
         CAST(SUM(tool_calls) AS BIGINT) FROM usage_hourly WHERE tenant_id = 'acme' \
         GROUP BY hour ORDER BY hour",
    )
    .fetch_all(&mut db)
    .await
    .unwrap();
    let four = |r: &sqlx::any::AnyRow| -> (i64, i64, i64, i64) {
        (
            r.get::<i64, _>(0),
            r.get::<i64, _>(1),
            r.get::<i64, _>(2),
            r.get::<i64, _>(3),
        )
    };
    (
        raw.iter().map(four).collect(),
        rolled.iter().map(four).collect(),
    )
}

#[tokio::test]
async fn a_tenants_usage_is_metered_reported_and_rolled_up() {
    for backend in backends() {
        let app = spawn_app(backend).await;
        let admin = app.token_with("acme", "boss", "admin", "1h");
        let alice = app.token("acme", "alice");
        let operator = app.token_with("acme", "ops", "operator", "1h");
        let bob = app.token("other", "bob");
        let other_admin = app.token_with("other", "chief", "admin", "1h");

        // Two plain turns of alice's and the same two of carol's; one of
        // bob's in another tenant.
        let carol = app.token("acme", "carol");
        let inputs = ["hello there", "and once more"];
        let mut sid = String::new();
        for tok in [&carol, &alice] {
            sid = app.create_session(tok).await;
            for input in inputs {
                let tid = app.start_turn(tok, &sid, json!({"input": input})).await;
                let t = app.wait_turn(tok, &sid, &tid).await;
                assert_eq!(t["status"], "completed", "{t}");
            }
        }
        let bob_sid = app.create_session(&bob).await;
        let tid = app.start_turn(&bob, &bob_sid, json!({"input": "hi"})).await;
        app.wait_turn(&bob, &bob_sid, &tid).await;

        let report = usage_until(&app, &admin, "?group=principal", |r| {
            total(r, "model_calls") >= 4
        })
        .await;
        assert_eq!(report["bucket"], "day");
        assert_eq!(report["group"], json!(["principal"]));
        assert_eq!(report["currency"], "USD");
        let rows = report["rows"].as_array().unwrap();
        assert!(rows.iter().all(|r| r["tenant"] == "acme"), "{report}");
        let of = |p: &str| rows.iter().find(|r| r["principal"] == p).cloned().unwrap();
        let (a, c) = (of("alice"), of("carol"));
        assert_eq!(rows.len(), 2, "{report}");
        assert_eq!(a["model_calls"], 2);
        assert_eq!(a["unmetered_calls"], 0);
        // The fake's counts are deterministic: the same turns, the same tokens;
        // each request holds at least the user's message.
        let least: u64 = inputs.iter().map(|i| fake_input_tokens(i)).sum();
        assert!(a["input_tokens"].as_u64().unwrap() >= least, "{report}");
        assert!(a["output_tokens"].as_u64().unwrap() > 0);
        for k in [
            "model_calls",
            "input_tokens",
            "output_tokens",
            "cached_tokens",
        ] {
            assert_eq!(a[k], c[k], "{k}: {report}");
        }
        // No price list: tokens without cost.
        assert!(rows.iter().all(|r| r["cost"].is_null()));
        assert_eq!(
            total(&report, "unpriced_tokens"),
            total(&report, "input_tokens") + total(&report, "output_tokens")
        );

        // A tool call that burns CPU in a confined command.
        let burn = "i=0; while [ $i -lt 200000 ]; do i=$((i+1)); done; echo burnt";
        let evs = run_script(
            &app,
            &alice,
            &sid,
            json!([{"tool_calls": [{"name": "terminal", "arguments": {"command": burn}}]},
                   {"content": "done"}]),
            "allow_once",
        )
        .await;
        let result = evs.iter().find(|e| e["type"] == "tool.result").unwrap();
        assert_eq!(result["data"]["status"], "succeeded", "{result}");
        let by_tool = usage_until(&app, &admin, "?group=tool,status&bucket=hour", |r| {
            r["rows"]
                .as_array()
                .unwrap()
                .iter()
                .any(|row| row["tool"] == "terminal")
        })
        .await;
        let terminal: Vec<&Value> = by_tool["rows"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|r| r["tool"] == "terminal")
            .collect();
        assert_eq!(terminal.len(), 1, "{by_tool}");
        assert_eq!(terminal[0]["status"], "succeeded");
        assert_eq!(terminal[0]["tool_calls"], 1);
        assert!(
            terminal[0]["cpu_seconds"].as_f64().unwrap() > 0.0,
            "the command's CPU time is recorded: {by_tool}"
        );

        // The command's output is stored: the tenant's stored bytes say so.
        assert!(by_tool["stored_bytes"].as_u64().unwrap() > 0, "{by_tool}");
        // /metrics counts per tenant.
        let metrics = app.metrics_text().await;
        let value = |series: &str| -> f64 {
            metrics
                .lines()
                .find_map(|l| l.strip_prefix(series))
                .unwrap_or_else(|| panic!("{series} missing:\n{metrics}"))
                .trim()
                .parse()
                .unwrap()
        };
        assert!(value("demiurge_usage_model_calls_total{tenant=\"acme\"}") >= 4.0);
        assert!(value("demiurge_usage_tokens_total{tenant=\"acme\",kind=\"input\"}") > 0.0);
        assert_eq!(
            value("demiurge_usage_tool_calls_total{tenant=\"acme\"}"),
            1.0
        );
        assert!(value("demiurge_usage_cpu_seconds_total{tenant=\"acme\"}") > 0.0);
        assert_eq!(value("demiurge_usage_dropped_total"), 0.0);

        // Members and tenant operators are refused; another tenant sees its own.
        for tok in [&alice, &operator] {
            let (st, body) = usage(&app, tok, "").await;
            assert_eq!(st, 403, "{body}");
            assert_eq!(body["error"]["code"], "forbidden", "{body}");
        }
        let theirs = usage_until(&app, &other_admin, "?group=principal", |r| {
            total(r, "model_calls") >= 1
        })
        .await;
        assert!(theirs["rows"]
            .as_array()
            .unwrap()
            .iter()
            .all(|r| r["tenant"] == "other" && r["principal"] == "bob"));
        assert_eq!(total(&theirs, "model_calls"), 1);

        // Bad input is a 400 with a message.
        for q in [
            "?bucket=week",
            "?group=tenant",
            "?from=yesterday",
            "?format=xml",
        ] {
            let (st, body) = usage(&app, &admin, q).await;
            assert_eq!(st, 400, "{q}: {body}");
            assert!(body["error"]["message"].as_str().unwrap().len() > 5);
        }

        // CSV (by Accept or by format) says what JSON says.
        let q = "?group=principal,tool&bucket=hour";
        let (_, json_report) = usage(&app, &admin, q).await;
        for (query, accept) in [
            (q.to_owned(), "text/csv"),
            (format!("{q}&format=csv"), "*/*"),
        ] {
            let r = app
                .client
                .get(app.url(&format!("/v1/usage{query}")))
                .bearer_auth(&admin)
                .header("accept", accept)
                .send()
                .await
                .unwrap();
            assert_eq!(r.status(), 200);
            assert!(r.headers()["content-type"]
                .to_str()
                .unwrap()
                .starts_with("text/csv"));
            let text = r.text().await.unwrap();
            let mut csv = csv::Reader::from_reader(text.as_bytes());
            let header: Vec<String> = csv.headers().unwrap().iter().map(str::to_owned).collect();
            let lines: Vec<csv::StringRecord> = csv.records().map(Result::unwrap).collect();
            let rows = json_report["rows"].as_array().unwrap();
            assert_eq!(lines.len(), rows.len(), "{text}");
            for (line, row) in lines.iter().zip(rows) {
                for (name, cell) in header.iter().zip(line.iter()) {
                    match &row[name] {
                        Value::String(s) => assert_eq!(cell, s, "column {name}"),
                        Value::Null => assert_eq!(cell, "", "column {name}"),
                        Value::Number(n) => assert_eq!(
                            cell.parse::<f64>().unwrap(),
                            n.as_f64().unwrap(),
                            "column {name}"
                        ),
                        other => panic!("column {name}: {other}"),
                    }
                }
                assert_eq!(header.len(), row.as_object().unwrap().len());
            }
        }

        // The server operator's CLI sees every tenant.
        let cli = app.cli(&["usage", "report", "--group", "principal"]);
        assert!(
            cli.status.success(),
            "{}",
            String::from_utf8_lossy(&cli.stderr)
        );
        let all: Value = serde_json::from_slice(&cli.stdout).unwrap();
        let tenants: std::collections::BTreeSet<&str> = all["rows"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r["tenant"].as_str().unwrap())
            .collect();
        assert_eq!(tenants, ["acme", "other"].into_iter().collect());

        // Rolled up now: every report reads the same, and an hour's
        // roll-up is the sum of its raw rows.
        let before = usage(
            &app,
            &admin,
            "?group=principal,core,channel,model,tool,status&bucket=hour",
        )
        .await;
        let out = app.cli(&["usage", "rollup"]);
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let after = usage(
            &app,
            &admin,
            "?group=principal,core,channel,model,tool,status&bucket=hour",
        )
        .await;
        assert_eq!(before, after);
        let (raw, rolled) = raw_and_rolled(&app).await;
        assert!(!raw.is_empty());
        assert_eq!(raw, rolled);
        assert!(sum_f(&after.1, "cpu_seconds") > 0.0);
    }
}

/// A price list turns tokens into cost; a model it does not name stays
/// uncosted; a bad price list stops the server at start with a message.
#[tokio::test]
async fn model_prices_give_cost() {
    let dir = tempfile::tempdir().unwrap();
    let prices = dir.path().join("prices.toml");
    std::fs::write(
        &prices,
        "currency = \"EUR\"\n[models.\"fake/fake\"]\ninput = 1000.0\noutput = 2000.0\n",
    )
    .unwrap();
    let app = spawn_with(
        Backend::Sqlite,
        Opts::default().env("DEMIURGE_MODEL_PRICES", prices.to_str().unwrap()),
    )
    .await;
    let admin = app.token_with("default", "boss", "admin", "1h");
    let sid = app.create_session(&admin).await;
    let tid = app
        .start_turn(&admin, &sid, json!({"input": "price me"}))
        .await;
    app.wait_turn(&admin, &sid, &tid).await;
    let r = usage_until(&app, &admin, "?group=model", |r| {
        total(r, "model_calls") >= 1
    })
    .await;
    assert_eq!(r["currency"], "EUR");
    let row = &r["rows"][0];
    assert_eq!(row["model"], "fake");
    let input = row["input_tokens"].as_f64().unwrap();
    let output = row["output_tokens"].as_f64().unwrap();
    let cost = row["cost"].as_f64().unwrap();
    assert!(
        (cost - (input * 1000.0 + output * 2000.0) / 1e6).abs() < 1e-9,
        "{r}"
    );
    assert_eq!(row["unpriced_tokens"], 0);

    std::fs::write(&prices, "[models.x]\ninput = \"free\"\n").unwrap();
    let out = std::process::Command::new(BIN)
        .args(["serve", "--bind", "127.0.0.1:0"])
        .env("DEMIURGE_HOME", dir.path().join("home"))
        .env("DEMIURGE_MODEL_PRICES", &prices)
        .env_remove("DATABASE_URL")
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("--model-prices") && err.contains("prices.toml"),
        "{err}"
    );
}
