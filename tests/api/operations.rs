//! Health, readiness, metrics, OpenAPI, limits and configuration errors.

use std::time::Duration;

use serde_json::{json, Value};

use crate::helpers::*;

#[tokio::test]
async fn health_readiness_and_metrics_answer() {
    let app = spawn_app(Backend::Sqlite).await;
    let r = app.client.get(app.url("/healthz")).send().await.unwrap();
    assert_eq!(r.status(), 200);
    let r: Value = app
        .client
        .get(app.url("/readyz"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(r["database"], "ok");
    let tok = app.token("default", "alice");
    let sid = app.create_session(&tok).await;
    let tid = app
        .start_turn(&tok, &sid, json!({"input": "count me"}))
        .await;
    app.wait_turn(&tok, &sid, &tid).await;
    let text = app.metrics_text().await;
    assert!(text.contains("demiurge_turns_started_total 1"), "{text}");
    assert!(text.contains("demiurge_turns_finished_total{status=\"completed\"} 1"));
    assert!(text.contains("demiurge_turn_duration_seconds_count 1"));
    assert!(text.contains("demiurge_open_streams{transport=\"sse\"}"));
    assert!(text.contains("demiurge_http_responses_total{class=\"2xx\"}"));
}

#[tokio::test]
async fn the_checked_in_openapi_document_is_current() {
    let out = std::process::Command::new(BIN)
        .arg("openapi")
        .output()
        .unwrap();
    assert!(out.status.success());
    let generated = String::from_utf8(out.stdout).unwrap();
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../openapi/openapi.json");
    if std::env::var("UPDATE_OPENAPI").as_deref() == Ok("1") {
        std::fs::write(&path, &generated).unwrap();
    }
    let checked_in = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        checked_in == generated,
        "openapi/openapi.json is stale; regenerate with: UPDATE_OPENAPI=1 cargo test --test api openapi"
    );
    let doc: Value = serde_json::from_str(&generated).unwrap();
    for p in [
        "/v1/sessions",
        "/v1/sessions/{id}/turns",
        "/v1/sessions/{id}/events",
        "/v1/sessions/{id}/stream",
        "/healthz",
    ] {
        assert!(
            doc["paths"].get(p).is_some(),
            "{p} missing from the document"
        );
    }
    // The server serves the same document, and an offline docs page.
    let app = spawn_app(Backend::Sqlite).await;
    let served: Value = app
        .client
        .get(app.url("/openapi.json"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(served, doc);
    let page = app.client.get(app.url("/docs/")).send().await.unwrap();
    assert_eq!(page.status(), 200);
    assert!(page
        .text()
        .await
        .unwrap()
        .to_lowercase()
        .contains("swagger"));
}

#[tokio::test]
async fn oversized_bodies_are_413_and_unknown_routes_404_in_the_envelope() {
    let app = spawn_with(
        Backend::Sqlite,
        Opts::default().env("DEMIURGE_BODY_LIMIT", "2048"),
    )
    .await;
    let tok = app.token("default", "alice");
    let sid = app.create_session(&tok).await;
    let (st, b) = app
        .post(
            &tok,
            &format!("/v1/sessions/{sid}/turns"),
            json!({"input": "x".repeat(5000)}),
        )
        .await;
    assert_eq!(st, 413, "{b}");
    assert_eq!(b["error"]["code"], "payload_too_large");
    let (st, b) = app.get(&tok, "/v1/nothing-here").await;
    assert_eq!(st, 404);
    assert_eq!(b["error"]["code"], "not_found");
}

#[tokio::test]
async fn a_principal_over_its_rate_limit_gets_429_with_retry_after() {
    let app = spawn_with(
        Backend::Sqlite,
        Opts::default()
            .env("DEMIURGE_RATE_LIMIT_PRINCIPAL", "1")
            .env("DEMIURGE_RATE_LIMIT_BURST", "3"),
    )
    .await;
    let tok = app.token("default", "alice");
    let other = app.token("default", "bob");
    let mut limited = None;
    for _ in 0..10 {
        let r = app
            .client
            .get(app.url("/v1/sessions"))
            .bearer_auth(&tok)
            .send()
            .await
            .unwrap();
        if r.status() == 429 {
            limited = Some(r);
            break;
        }
    }
    let r = limited.expect("the limit applies");
    let retry: u64 = r.headers()["retry-after"]
        .to_str()
        .unwrap()
        .parse()
        .unwrap();
    assert!(retry >= 1);
    let b: Value = r.json().await.unwrap();
    assert_eq!(b["error"]["code"], "rate_limited");
    // Another principal is not affected.
    assert_eq!(app.get(&other, "/v1/sessions").await.0, 200);
}

#[tokio::test]
async fn bad_configuration_exits_non_zero_naming_the_value() {
    let home = tempfile::tempdir().unwrap();
    for (args, needle) in [
        (vec!["serve", "--bind", "nowhere"], "nowhere"),
        (vec!["serve", "--provider", "magic"], "magic"),
        (
            vec!["serve", "--database-url", "mysql://u:hunter2@h/db"],
            "mysql://",
        ),
        (vec!["serve", "--request-timeout", "forever"], "forever"),
    ] {
        let out = std::process::Command::new(BIN)
            .args(&args)
            .arg("--home")
            .arg(home.path())
            .output()
            .unwrap();
        assert!(!out.status.success(), "{args:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains(needle), "{needle} not in {err}");
        assert!(!err.contains("hunter2"), "a password reached the error");
        assert!(err.trim().lines().count() <= 2, "one clear line: {err}");
    }
}

#[tokio::test]
async fn json_logs_are_json() {
    let app = spawn_with(
        Backend::Sqlite,
        Opts {
            args: vec!["--log-format".into(), "json".into()],
            ..Opts::default()
        }
        .env("RUST_LOG", "info,demiurge::turn=debug"),
    )
    .await;
    let tok = app.token("default", "alice");
    let sid = app.create_session(&tok).await;
    let tid = app.start_turn(&tok, &sid, json!({"input": "hello"})).await;
    app.wait_turn(&tok, &sid, &tid).await;
    // The turn's own line is written just after its state settles.
    let mut ended = None;
    for _ in 0..100 {
        let log = app.log();
        let lines: Vec<Value> = log
            .lines()
            .filter(|l| !l.trim().is_empty())
            .map(|l| serde_json::from_str(l).unwrap_or_else(|_| panic!("not JSON: {l}")))
            .collect();
        assert!(!lines.is_empty());
        for v in &lines {
            assert!(v.get("level").is_some(), "{v}");
            assert!(!v.to_string().contains('\u{1b}'), "an escape byte: {v}");
        }
        ended = lines.into_iter().find(|v| v["message"] == "turn ended");
        if ended.is_some() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let ended = ended.expect("no \"turn ended\" line");
    // Lines inside a turn say whose and which.
    assert_eq!(ended["span"]["tenant"], "default", "{ended}");
    assert_eq!(ended["span"]["session"], sid.as_str(), "{ended}");
    assert_eq!(ended["span"]["turn"], tid.as_str(), "{ended}");
    assert_eq!(ended["status"], "completed", "{ended}");
}

#[tokio::test]
async fn a_text_log_written_to_a_file_has_no_escape_bytes() {
    let app = spawn_app(Backend::Sqlite).await;
    let tok = app.token("default", "alice");
    let sid = app.create_session(&tok).await;
    let tid = app.start_turn(&tok, &sid, json!({"input": "hello"})).await;
    app.wait_turn(&tok, &sid, &tid).await;
    let log = app.log();
    assert!(log.contains(" INFO "), "{log}");
    assert!(!log.contains('\u{1b}'), "escape bytes in a file:\n{log}");
}

#[tokio::test]
async fn check_command_and_check_url_print_json_verdicts() {
    let run = |args: &[&str]| {
        let out = std::process::Command::new(BIN).args(args).output().unwrap();
        assert!(
            out.status.success(),
            "{args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        serde_json::from_slice::<Value>(&out.stdout).unwrap()
    };
    let v = run(&["check", "command", "--", "ls -la"]);
    assert_eq!(
        (v["decision"].as_str(), v["risk"].as_str()),
        (Some("allow"), Some("low"))
    );
    assert!(v["rule"].as_str().unwrap().starts_with("read_only:"));
    let v = run(&["check", "command", "--", "rm", "-rf", "/"]);
    assert_eq!(v["decision"], "block");
    assert_eq!(v["risk"], "critical");
    let v = run(&["check", "command", "--", "echo $(id)"]);
    assert_eq!(
        (v["decision"].as_str(), v["risk"].as_str()),
        (Some("prompt"), Some("high"))
    );
    let v = run(&["check", "command", "--cwd", "/home/u/.ssh", "--", "ls"]);
    assert_ne!(v["decision"], "allow");
    for url in [
        "http://127.0.0.1/",
        "http://2130706433/",
        "http://[::1]/",
        "http://169.254.169.254/latest",
        "http://localhost:8080/",
    ] {
        let v = run(&["check", "url", url]);
        assert_eq!(v["allowed"], false, "{url}: {v}");
        assert!(v["addresses"].is_array());
    }
    let v = run(&[
        "check",
        "url",
        "https://user:pw@93.184.216.34/path?token=secret",
    ]);
    assert_eq!(v["allowed"], true, "{v}");
    assert_eq!(v["origin"], "https://93.184.216.34");
    assert!(!v.to_string().contains("secret") && !v.to_string().contains("pw"));
}

#[tokio::test]
async fn the_console_and_its_embedded_assets_are_served_without_auth() {
    let app = spawn_app(Backend::Sqlite).await;
    let page = app.client.get(app.url("/console")).send().await.unwrap();
    assert_eq!(page.status(), 200);
    let csp = page.headers()["content-security-policy"]
        .to_str()
        .unwrap()
        .to_owned();
    assert!(csp.contains("default-src 'none'"), "{csp}");
    assert!(csp.contains("connect-src 'self'"), "{csp}");
    assert_eq!(page.headers()["x-content-type-options"], "nosniff");
    let html = page.text().await.unwrap();
    // Every script and style the page names is served by the binary itself.
    for (file, kind) in [
        ("app.js", "text/javascript"),
        ("api.js", "text/javascript"),
        ("render.js", "text/javascript"),
        ("console.css", "text/css"),
    ] {
        let r = app
            .client
            .get(app.url(&format!("/console/{file}")))
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 200, "{file}");
        let ct = r.headers()["content-type"].to_str().unwrap().to_owned();
        assert!(ct.starts_with(kind), "{file}: {ct}");
        assert!(!r.text().await.unwrap().is_empty(), "{file}");
    }
    assert!(html.contains("/console/app.js") && html.contains("/console/console.css"));
    assert!(
        !html.contains("http://") && !html.contains("https://"),
        "no other origin"
    );
    for missing in [
        "/console/nope.js",
        "/console/..%2Fconsole.html",
        "/console/a/b",
    ] {
        let r = app.client.get(app.url(missing)).send().await.unwrap();
        assert_eq!(r.status(), 404, "{missing}");
        let b: Value = r.json().await.unwrap();
        assert_eq!(b["error"]["code"], "not_found");
    }
}

async fn applied_migrations(conn: &mut sqlx::AnyConnection) -> Vec<(i64, Vec<u8>)> {
    use sqlx::Row;
    sqlx::query("SELECT version, checksum FROM _sqlx_migrations ORDER BY version")
        .fetch_all(&mut *conn)
        .await
        .unwrap()
        .iter()
        .map(|r| (r.get::<i64, _>(0), r.get::<Vec<u8>, _>(1)))
        .collect()
}

async fn table_exists(conn: &mut sqlx::AnyConnection, backend: Backend, table: &str) -> bool {
    use sqlx::Row;
    let sql = match backend {
        Backend::Sqlite => "SELECT COUNT(*) FROM sqlite_master WHERE type = 'table' AND name = $1",
        Backend::Postgres => {
            "SELECT COUNT(*) FROM information_schema.tables \
             WHERE table_schema = current_schema() AND table_name = $1"
        }
    };
    let n: i64 = sqlx::query(sql)
        .bind(table)
        .fetch_one(&mut *conn)
        .await
        .unwrap()
        .get(0);
    n > 0
}

/// The versions of the migration files shipped for a backend, in order.
fn migration_versions(backend: Backend) -> Vec<i64> {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(match backend {
        Backend::Sqlite => "../migrations/sqlite",
        Backend::Postgres => "../migrations/postgres",
    });
    let mut v: Vec<i64> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".sql"))
        .map(|n| n[..4].parse().unwrap())
        .collect();
    v.sort_unstable();
    v
}

#[tokio::test]
async fn migrations_are_checksummed_and_the_old_bookkeeping_is_adopted() {
    use sqlx::Connection;
    for backend in backends() {
        let app = spawn_app(backend).await;
        let tok = app.token("default", "alice");
        let sid = app.create_session(&tok).await;
        let mut conn = app.db().await;
        let fresh = applied_migrations(&mut conn).await;
        let versions: Vec<i64> = fresh.iter().map(|(v, _)| *v).collect();
        assert_eq!(versions, migration_versions(backend), "{backend:?}");
        assert!(
            fresh.iter().all(|(_, c)| c.len() == 48),
            "SHA-384 checksums"
        );
        assert!(!table_exists(&mut conn, backend, "demiurge_migrations").await);

        // A database as the previous runner left it: its own table, no checksums.
        let rows: Vec<String> = versions
            .iter()
            .map(|v| format!("({v}, 'm{v}', 1)"))
            .collect();
        sqlx::raw_sql(sqlx::AssertSqlSafe(format!(
            "DROP TABLE _sqlx_migrations;
             CREATE TABLE demiurge_migrations (
                version BIGINT PRIMARY KEY, name TEXT NOT NULL, applied_at BIGINT NOT NULL);
             INSERT INTO demiurge_migrations (version, name, applied_at) VALUES {};",
            rows.join(", ")
        )))
        .execute(&mut conn)
        .await
        .unwrap();
        conn.close().await.unwrap();
        let app = app.restart_after_crash().await;
        let (status, _) = app.get(&tok, &format!("/v1/sessions/{sid}")).await;
        assert_eq!(status, 200, "{backend:?}: data survives the adoption");
        let mut conn = app.db().await;
        assert_eq!(applied_migrations(&mut conn).await, fresh, "{backend:?}");
        assert!(!table_exists(&mut conn, backend, "demiurge_migrations").await);

        // An applied migration whose file changed stops the start.
        sqlx::query("UPDATE _sqlx_migrations SET checksum = $1 WHERE version = 3")
            .bind(vec![0_u8; 48])
            .execute(&mut conn)
            .await
            .unwrap();
        let out = app.cli(&["migrate"]);
        assert!(!out.status.success(), "{backend:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains("migration 3"), "{backend:?}: {err}");
        // A version this binary does not know stops it too.
        sqlx::query("UPDATE _sqlx_migrations SET checksum = $1 WHERE version = 3")
            .bind(fresh[2].1.clone())
            .execute(&mut conn)
            .await
            .unwrap();
        assert!(app.cli(&["migrate"]).status.success(), "{backend:?}");
        sqlx::query(
            "INSERT INTO _sqlx_migrations (version, description, success, checksum, execution_time) \
             VALUES (999, 'future', $1, $2, 0)",
        )
        .bind(true)
        .bind(vec![0_u8; 48])
        .execute(&mut conn)
        .await
        .unwrap();
        let out = app.cli(&["migrate"]);
        assert!(!out.status.success(), "{backend:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains("999"), "{backend:?}: {err}");
        conn.close().await.unwrap();
    }
}
