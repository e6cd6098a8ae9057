//! History search latency over a large history (issue: authored tools and
//! history search). Run with `scripts/bench search` or
//! `cargo bench --bench search -- [--postgres ADMIN_URL]`.
//!
//! Loads `SEARCH_MESSAGES` (default 1,000,000) messages through the real
//! migrations and triggers: 10 tenants × 20 principals × 50 sessions, each
//! message 6 to 30 words drawn from a 20,000-word vocabulary with a Zipf-like
//! (1/rank) frequency, so common words match thousands of an owner's
//! messages and rare ones a handful. Then times, sequentially,
//! `history::search` (the function behind `session_search` and
//! `GET /v1/search`) for random owners: full text with a common word, a rare
//! word and two words; one session's newest messages; browsing sessions; and
//! an operator's tenant-wide full text. The store is the server's own
//! (`Store::open`, same pool settings); the bench writes the rows with its own
//! connection.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::{Duration, Instant};

use demiurge::config::{Backend, DatabaseConfig};
use demiurge::history::{Reach, Request};
use demiurge::ids::{PrincipalId, TenantId};
use demiurge::store::Store;

const TENANTS: usize = 10;
const PRINCIPALS: usize = 20;
const SESSIONS: usize = 50;
const VOCAB: usize = 20_000;
const ROUNDS: usize = 300;

/// xorshift64*: deterministic and dependency-free.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
    fn unit(&mut self) -> f64 {
        (self.next() >> 11) as f64 / (1u64 << 53) as f64
    }
    /// A word rank with P(rank) ∝ 1/rank.
    fn zipf(&mut self) -> usize {
        ((VOCAB as f64).powf(self.unit()) as usize).clamp(1, VOCAB) - 1
    }
}

/// Pronounceable, distinct words: the rank spelled in syllables.
fn word(rank: usize) -> String {
    const S: [&str; 20] = [
        "ka", "lo", "mi", "ne", "ru", "sa", "ti", "vo", "ze", "pa", "do", "fe", "gu", "ha", "ji",
        "bo", "ce", "wy", "xu", "qe",
    ];
    let mut n = rank;
    let mut out = String::new();
    loop {
        out.push_str(S[n % 20]);
        n /= 20;
        if n == 0 {
            break;
        }
    }
    out
}

fn tenant(t: usize) -> String {
    format!("bench-{t}")
}

fn principal(p: usize) -> String {
    format!("user{p}")
}

fn session(t: usize, p: usize, s: usize) -> String {
    format!("00000000-0000-4000-8000-{:04}{:04}{:04}", t, p, s)
}

async fn load(url: &str, backend: Backend, total: usize) -> Store {
    let store = Store::open(&DatabaseConfig {
        url: url.to_owned(),
        backend,
    })
    .await
    .unwrap();
    let pool = sqlx::any::AnyPoolOptions::new()
        .max_connections(1)
        .connect(url)
        .await
        .unwrap();
    let started = Instant::now();
    let mut tx = pool.begin().await.unwrap();
    for t in 0..TENANTS {
        sqlx::query("INSERT INTO tenants (id, created_at) VALUES ($1, 0)")
            .bind(tenant(t))
            .execute(&mut *tx)
            .await
            .unwrap();
        for p in 0..PRINCIPALS {
            for s in 0..SESSIONS {
                sqlx::query(
                    "INSERT INTO sessions (id, tenant_id, principal_id, title, core, workspace, \
                     provider, created_at, updated_at, last_seq) \
                     VALUES ($1, $2, $3, $4, 'assistant', 'default', 'fake', 0, $5, 0)",
                )
                .bind(session(t, p, s))
                .bind(tenant(t))
                .bind(principal(p))
                .bind(format!("session {s}"))
                .bind((s * 1000 + p) as i64)
                .execute(&mut *tx)
                .await
                .unwrap();
            }
        }
    }
    tx.commit().await.unwrap();
    let owners = TENANTS * PRINCIPALS * SESSIONS;
    let per_session = total.div_ceil(owners);
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
    const BATCH: usize = 400;
    let mut rows: Vec<(String, String, String, String)> = Vec::with_capacity(BATCH);
    let mut done = 0usize;
    let mut tx = pool.begin().await.unwrap();
    'outer: for i in 0..per_session {
        for t in 0..TENANTS {
            for p in 0..PRINCIPALS {
                for s in 0..SESSIONS {
                    if done == total {
                        break 'outer;
                    }
                    let n = 6 + rng.below(25);
                    let text: Vec<String> = (0..n).map(|_| word(rng.zipf())).collect();
                    let text = text.join(" ");
                    let role = if i % 2 == 0 { "user" } else { "assistant" };
                    let body = serde_json::json!({"role": role, "content": text}).to_string();
                    rows.push((session(t, p, s), role.to_owned(), text, body));
                    done += 1;
                    if rows.len() == BATCH {
                        insert(&mut tx, &rows).await;
                        rows.clear();
                    }
                    if done.is_multiple_of(50_000) {
                        tx.commit().await.unwrap();
                        tx = pool.begin().await.unwrap();
                        eprintln!("  loaded {done} messages ({:.0?})", started.elapsed());
                    }
                }
            }
        }
    }
    if !rows.is_empty() {
        insert(&mut tx, &rows).await;
    }
    tx.commit().await.unwrap();
    if backend == Backend::Postgres {
        sqlx::query("VACUUM ANALYZE messages")
            .execute(&pool)
            .await
            .unwrap();
    }
    println!(
        "  {backend:?}: loaded {done} messages in {:.1?}",
        started.elapsed()
    );
    store
}

async fn insert(
    tx: &mut sqlx::Transaction<'_, sqlx::Any>,
    rows: &[(String, String, String, String)],
) {
    let mut sql = String::from(
        "INSERT INTO messages (session_id, turn_id, body, created_at, role, text) VALUES ",
    );
    for i in 0..rows.len() {
        let b = i * 4;
        if i > 0 {
            sql.push_str(", ");
        }
        sql.push_str(&format!(
            "(${}, 'turn', ${}, 0, ${}, ${})",
            b + 1,
            b + 2,
            b + 3,
            b + 4
        ));
    }
    let mut q = sqlx::query(sqlx::AssertSqlSafe(sql));
    for (sid, role, text, body) in rows {
        q = q.bind(sid).bind(body).bind(role).bind(text);
    }
    q.execute(&mut **tx).await.unwrap();
}

fn pct(sorted: &[Duration], p: f64) -> Duration {
    if sorted.is_empty() {
        return Duration::ZERO;
    }
    sorted[((sorted.len() as f64 - 1.0) * p).round() as usize]
}

async fn measure(store: &Store, label: &str) {
    let mut rng = Rng(42);
    let kinds = [
        "full text, common word (rank 3)",
        "full text, mid word (rank 200)",
        "full text, rare word (rank 5,000)",
        "full text, two words",
        "one session, newest 10",
        "browse sessions",
        "operator, tenant-wide, mid word",
    ];
    let mut lat: Vec<Vec<Duration>> = vec![Vec::new(); kinds.len()];
    let mut hits: Vec<usize> = vec![0; kinds.len()];
    let mut all = Vec::new();
    for _ in 0..ROUNDS {
        let t = rng.below(TENANTS);
        let p = rng.below(PRINCIPALS);
        let owned = Reach::Owned {
            tenant: TenantId::parse(&tenant(t)).unwrap(),
            principal: PrincipalId::parse(&principal(p)).unwrap(),
        };
        let whole = Reach::Tenant {
            tenant: TenantId::parse(&tenant(t)).unwrap(),
        };
        let sid = session(t, p, rng.below(SESSIONS));
        let two = format!("{} {}", word(1 + rng.below(10)), word(20 + rng.below(200)));
        let cases: [(Reach, Request); 7] = [
            (
                owned.clone(),
                Request::new(Some(&word(3)), None, 10, 0).unwrap(),
            ),
            (
                owned.clone(),
                Request::new(Some(&word(200)), None, 10, 0).unwrap(),
            ),
            (
                owned.clone(),
                Request::new(Some(&word(5000)), None, 10, 0).unwrap(),
            ),
            (
                owned.clone(),
                Request::new(Some(&two), None, 10, 0).unwrap(),
            ),
            (
                owned.clone(),
                Request::new(None, Some(&sid), 10, 0).unwrap(),
            ),
            (owned.clone(), Request::new(None, None, 10, 0).unwrap()),
            (whole, Request::new(Some(&word(200)), None, 10, 0).unwrap()),
        ];
        for (i, (reach, req)) in cases.iter().enumerate() {
            let t0 = Instant::now();
            let page = demiurge::history::search(store, reach, req, None)
                .await
                .unwrap();
            let took = t0.elapsed();
            lat[i].push(took);
            all.push(took);
            hits[i] += match page {
                demiurge::history::Page::Hits { hits, .. } => hits.len(),
                demiurge::history::Page::Sessions { sessions, .. } => sessions.len(),
            };
        }
    }
    println!("  {label}: {ROUNDS} rounds, sequential, limit 10");
    println!("  | query | p50 | p99 | avg results |");
    println!("  | --- | --- | --- | --- |");
    for (i, k) in kinds.iter().enumerate() {
        lat[i].sort();
        println!(
            "  | {k} | {:.2} ms | {:.2} ms | {:.1} |",
            pct(&lat[i], 0.5).as_secs_f64() * 1e3,
            pct(&lat[i], 0.99).as_secs_f64() * 1e3,
            hits[i] as f64 / ROUNDS as f64
        );
    }
    all.sort();
    println!(
        "  | all of the above | {:.2} ms | {:.2} ms | |",
        pct(&all, 0.5).as_secs_f64() * 1e3,
        pct(&all, 0.99).as_secs_f64() * 1e3
    );
}

fn main() {
    let args: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| a != "--bench")
        .collect();
    let pg = args
        .iter()
        .position(|a| a == "--postgres")
        .and_then(|i| args.get(i + 1))
        .cloned();
    let total: usize = std::env::var("SEARCH_MESSAGES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1_000_000);
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    sqlx::any::install_default_drivers();
    let dir = tempfile::tempdir().unwrap();
    let url = format!(
        "sqlite://{}?mode=rwc",
        dir.path().join("bench.db").display()
    );
    rt.block_on(async {
        let store = load(&url, Backend::Sqlite, total).await;
        measure(&store, "SQLite (FTS5)").await;
    });
    if let Some(admin) = &pg {
        let name = format!("dm_bench_{}", uuid::Uuid::new_v4().simple());
        let url = format!(
            "{}/{name}",
            admin.rsplit_once('/').map(|(b, _)| b).unwrap_or(admin)
        );
        rt.block_on(async {
            use sqlx::Connection;
            let mut c = sqlx::PgConnection::connect(admin).await.unwrap();
            sqlx::query(sqlx::AssertSqlSafe(format!("CREATE DATABASE \"{name}\"")))
                .execute(&mut c)
                .await
                .unwrap();
        });
        rt.block_on(async {
            let store = load(&url, Backend::Postgres, total).await;
            measure(&store, "PostgreSQL (tsvector + GIN)").await;
        });
        rt.block_on(async {
            use sqlx::Connection;
            let mut c = sqlx::PgConnection::connect(admin).await.unwrap();
            let _ = sqlx::query(sqlx::AssertSqlSafe(format!(
                "DROP DATABASE IF EXISTS \"{name}\" WITH (FORCE)"
            )))
            .execute(&mut c)
            .await;
        });
    }
}
