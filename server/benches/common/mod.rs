//! Helpers shared by the benchmarks: start the release binary on a free
//! port with a temporary home, issue tokens, open sessions and sockets.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use tokio_tungstenite::tungstenite::client::IntoClientRequest;

pub const BIN: &str = env!("CARGO_BIN_EXE_demiurge");

pub struct Server {
    pub child: Child,
    pub addr: String,
    pub home: tempfile::TempDir,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

pub fn start(db: Option<&str>, extra: &[(&str, &str)]) -> (Server, Duration) {
    let home = tempfile::tempdir().unwrap();
    // Confined children of a root server pass through the home as their
    // tenant's uid: the folder above it must be traversable.
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(home.path(), std::fs::Permissions::from_mode(0o711)).unwrap();
    }
    let t0 = Instant::now();
    let mut cmd = Command::new(BIN);
    cmd.args(["serve", "--bind", "127.0.0.1:0", "--home"])
        .arg(home.path())
        .env("RUST_LOG", "warn")
        .env("DEMIURGE_RATE_LIMIT_PRINCIPAL", "0")
        .env("DEMIURGE_RATE_LIMIT_IP", "0")
        .env_remove("DATABASE_URL")
        .stdout(Stdio::piped())
        .stderr(Stdio::null());
    if let Some(url) = db {
        cmd.args(["--database-url", url]);
    }
    for (k, v) in extra {
        cmd.env(k, v);
    }
    let mut child = cmd.spawn().unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let addr = loop {
        let line = lines.next().unwrap().unwrap();
        if let Some(a) = line.strip_prefix("listening on http://") {
            break a.to_owned();
        }
    };
    std::thread::spawn(move || for _ in lines {});
    // Ready means /readyz answers 200.
    loop {
        if let Ok(mut s) = std::net::TcpStream::connect(&addr) {
            use std::io::{Read, Write};
            let _ = s.write_all(b"GET /readyz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
            let mut buf = String::new();
            let _ = s.read_to_string(&mut buf);
            if buf.starts_with("HTTP/1.1 200") {
                break;
            }
        }
        std::thread::sleep(Duration::from_millis(1));
    }
    let took = t0.elapsed();
    (Server { child, addr, home }, took)
}

pub fn token(s: &Server, db: Option<&str>, principal: &str) -> String {
    let mut cmd = Command::new(BIN);
    cmd.args([
        "token",
        "issue",
        "--tenant",
        "default",
        "--principal",
        principal,
        "--ttl",
        "2h",
    ])
    .env("DEMIURGE_HOME", s.home.path())
    .env_remove("DATABASE_URL");
    if let Some(url) = db {
        cmd.env("DATABASE_URL", url);
    }
    let out = cmd.output().unwrap();
    String::from_utf8(out.stdout).unwrap().trim().to_owned()
}

pub async fn create_session(c: &reqwest::Client, s: &Server, tok: &str) -> String {
    let r: Value = c
        .post(format!("http://{}/v1/sessions", s.addr))
        .bearer_auth(tok)
        .json(&json!({"title": "bench"}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    r["id"].as_str().unwrap().to_owned()
}

pub type Ws =
    tokio_tungstenite::WebSocketStream<tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>>;

pub async fn ws(s: &Server, sid: &str, tok: &str, after: i64) -> Ws {
    ws_at(&s.addr, sid, tok, after).await
}

/// A session's WebSocket on the server at `addr`.
pub async fn ws_at(addr: &str, sid: &str, tok: &str, after: i64) -> Ws {
    let mut req = format!("ws://{addr}/v1/sessions/{sid}/stream?after={after}")
        .into_client_request()
        .unwrap();
    req.headers_mut()
        .insert("authorization", format!("Bearer {tok}").parse().unwrap());
    tokio_tungstenite::connect_async(req).await.unwrap().0
}

/// One session's load: start a turn on `on` (one keep-alive connection),
/// wait for its `turn.completed` on `sock` (a WebSocket on any instance),
/// again until `deadline`. Turns started after `warmup` are counted, with
/// their latency from `POST` to `turn.completed` received.
pub async fn drive_turns(
    on: &str,
    sock: &mut Ws,
    sid: &str,
    tok: &str,
    deadline: Instant,
    warmup: Instant,
) -> (u64, Vec<Duration>) {
    use futures_util::StreamExt;
    use tokio_tungstenite::tungstenite::Message;
    let mut http = RawHttp::connect(on).await;
    let request = RawHttp::post(
        on,
        &format!("/v1/sessions/{sid}/turns"),
        tok,
        r#"{"input":"bench"}"#,
    );
    let mut lat = Vec::new();
    let mut done = 0u64;
    while Instant::now() < deadline {
        let t0 = Instant::now();
        assert_eq!(http.send(&request).await, 202);
        loop {
            match sock.next().await {
                Some(Ok(Message::Text(t)))
                    if t.as_str().contains("\"type\":\"turn.completed\"") =>
                {
                    break
                }
                Some(Ok(_)) => {}
                other => panic!("stream ended: {other:?}"),
            }
        }
        if t0 >= warmup {
            lat.push(t0.elapsed());
            done += 1;
        }
    }
    (done, lat)
}

/// CPU seconds (user + system) a process has used.
pub fn cpu_secs(pid: u32) -> f64 {
    let s = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    let after = s.rsplit_once(')').map(|(_, r)| r).unwrap_or("");
    let f: Vec<&str> = after.split_whitespace().collect();
    let ticks: f64 = f.get(11).and_then(|x| x.parse().ok()).unwrap_or(0.0)
        + f.get(12).and_then(|x| x.parse::<f64>().ok()).unwrap_or(0.0);
    ticks / 100.0
}

pub fn pct(sorted: &[Duration], p: f64) -> Duration {
    if sorted.is_empty() {
        return Duration::ZERO;
    }
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i]
}

pub fn rss_kib(pid: u32) -> u64 {
    let s = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    s.lines()
        .find(|l| l.starts_with("VmRSS:"))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|n| n.parse().ok())
        .unwrap_or(0)
}

/// A minimal keep-alive HTTP/1.1 client for load generation: it writes a
/// prepared request and reads one response, so the load generator spends
/// far less CPU per request than a general-purpose client would.
pub struct RawHttp {
    stream: tokio::io::BufReader<tokio::net::TcpStream>,
}

impl RawHttp {
    pub async fn connect(addr: &str) -> Self {
        let s = tokio::net::TcpStream::connect(addr).await.unwrap();
        s.set_nodelay(true).unwrap();
        Self {
            stream: tokio::io::BufReader::new(s),
        }
    }

    /// A POST with a JSON body, as bytes ready to send.
    pub fn post(addr: &str, path: &str, token: &str, body: &str) -> Vec<u8> {
        format!(
            "POST {path} HTTP/1.1\r\nHost: {addr}\r\nAuthorization: Bearer {token}\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
            body.len()
        )
        .into_bytes()
    }

    /// Send a prepared request; returns the status code (the body is read and dropped).
    pub async fn send(&mut self, request: &[u8]) -> u16 {
        use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt};
        self.stream.get_mut().write_all(request).await.unwrap();
        let mut line = String::new();
        self.stream.read_line(&mut line).await.unwrap();
        let status: u16 = line
            .split_whitespace()
            .nth(1)
            .and_then(|s| s.parse().ok())
            .unwrap_or(0);
        let mut len = 0usize;
        loop {
            line.clear();
            self.stream.read_line(&mut line).await.unwrap();
            if line == "\r\n" {
                break;
            }
            if let Some(v) = line.to_ascii_lowercase().strip_prefix("content-length:") {
                len = v.trim().parse().unwrap_or(0);
            }
        }
        let mut body = vec![0u8; len];
        self.stream.read_exact(&mut body).await.unwrap();
        status
    }
}
