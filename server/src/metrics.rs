//! Prometheus metrics: lock-free counters and a turn-latency histogram,
//! rendered as text for `GET /metrics`.

use std::fmt::Write;
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering::Relaxed};
use std::time::Duration;

/// Upper bounds (seconds) of the turn-latency histogram buckets.
const BUCKETS: [f64; 12] = [
    0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.5, 1.0, 5.0, 30.0, 120.0,
];

#[derive(Debug, Default)]
pub struct Metrics {
    /// Responses by status class: index 0 = 1xx … 4 = 5xx.
    responses: [AtomicU64; 5],
    turns_started: AtomicU64,
    turns_completed: AtomicU64,
    turns_failed: AtomicU64,
    turns_cancelled: AtomicU64,
    turn_buckets: [AtomicU64; BUCKETS.len()],
    turn_sum_micros: AtomicU64,
    turn_count: AtomicU64,
    open_sse: AtomicI64,
    open_ws: AtomicI64,
    rate_limited: AtomicU64,
    open_connections: AtomicI64,
    connections_refused: AtomicU64,
    /// Tasks waiting for a worker over all instances (sampled).
    tasks_queued: AtomicI64,
    claim_buckets: [AtomicU64; BUCKETS.len()],
    claim_sum_micros: AtomicU64,
    claim_count: AtomicU64,
    /// Tasks this instance found with an expired lease and marked lost.
    tasks_taken_over: AtomicU64,
}

#[derive(Debug, Clone, Copy)]
pub enum StreamKind {
    Sse,
    Ws,
}

/// Decrements the open-stream gauge when the stream ends, however it ends.
pub struct StreamGuard {
    metrics: std::sync::Arc<Metrics>,
    kind: StreamKind,
}

impl Drop for StreamGuard {
    fn drop(&mut self) {
        self.metrics.gauge(self.kind).fetch_sub(1, Relaxed);
    }
}

impl Metrics {
    pub fn response(&self, status: u16) {
        let i = usize::from(status / 100).clamp(1, 5) - 1;
        self.responses[i].fetch_add(1, Relaxed);
    }

    pub fn rate_limited(&self) {
        self.rate_limited.fetch_add(1, Relaxed);
    }

    /// A connection was closed at accept because the connection cap was reached.
    pub fn connection_refused(&self) {
        self.connections_refused.fetch_add(1, Relaxed);
    }

    /// Connections currently held (`+1` on accept, `-1` on close).
    pub fn connections_open(&self, delta: i64) {
        self.open_connections.fetch_add(delta, Relaxed);
    }

    pub fn turn_started(&self) {
        self.turns_started.fetch_add(1, Relaxed);
    }

    pub fn turn_finished(&self, status: crate::store::TurnStatus, took: Duration) {
        use crate::store::TurnStatus::*;
        match status {
            Completed => &self.turns_completed,
            Failed => &self.turns_failed,
            Cancelled => &self.turns_cancelled,
            Running => return,
        }
        .fetch_add(1, Relaxed);
        let secs = took.as_secs_f64();
        for (i, b) in BUCKETS.iter().enumerate() {
            if secs <= *b {
                self.turn_buckets[i].fetch_add(1, Relaxed);
            }
        }
        self.turn_sum_micros
            .fetch_add(took.as_micros() as u64, Relaxed);
        self.turn_count.fetch_add(1, Relaxed);
    }

    /// The queue depth, as last counted.
    pub fn tasks_queued(&self, depth: i64) {
        self.tasks_queued.store(depth, Relaxed);
    }

    /// A worker claimed a task that waited `waited` in the queue.
    pub fn task_claimed(&self, waited: Duration) {
        let secs = waited.as_secs_f64();
        for (i, b) in BUCKETS.iter().enumerate() {
            if secs <= *b {
                self.claim_buckets[i].fetch_add(1, Relaxed);
            }
        }
        self.claim_sum_micros
            .fetch_add(waited.as_micros() as u64, Relaxed);
        self.claim_count.fetch_add(1, Relaxed);
    }

    pub fn tasks_taken_over(&self, n: u64) {
        self.tasks_taken_over.fetch_add(n, Relaxed);
    }

    fn gauge(&self, kind: StreamKind) -> &AtomicI64 {
        match kind {
            StreamKind::Sse => &self.open_sse,
            StreamKind::Ws => &self.open_ws,
        }
    }

    pub fn stream_opened(self: &std::sync::Arc<Self>, kind: StreamKind) -> StreamGuard {
        self.gauge(kind).fetch_add(1, Relaxed);
        StreamGuard {
            metrics: self.clone(),
            kind,
        }
    }

    /// The Prometheus text exposition.
    pub fn render(&self) -> String {
        let mut s = String::with_capacity(2048);
        let _ = writeln!(
            s,
            "# HELP demiurge_http_responses_total HTTP responses by status class."
        );
        let _ = writeln!(s, "# TYPE demiurge_http_responses_total counter");
        for (i, c) in self.responses.iter().enumerate() {
            let _ = writeln!(
                s,
                "demiurge_http_responses_total{{class=\"{}xx\"}} {}",
                i + 1,
                c.load(Relaxed)
            );
        }
        let _ = writeln!(
            s,
            "# HELP demiurge_rate_limited_total Requests refused by a rate limit."
        );
        let _ = writeln!(s, "# TYPE demiurge_rate_limited_total counter");
        let _ = writeln!(
            s,
            "demiurge_rate_limited_total {}",
            self.rate_limited.load(Relaxed)
        );
        let _ = writeln!(
            s,
            "# HELP demiurge_http_connections_open HTTP connections held (upgraded ones included)."
        );
        let _ = writeln!(s, "# TYPE demiurge_http_connections_open gauge");
        let _ = writeln!(
            s,
            "demiurge_http_connections_open {}",
            self.open_connections.load(Relaxed)
        );
        let _ = writeln!(
            s,
            "# HELP demiurge_http_connections_refused_total Connections closed at accept by the connection cap."
        );
        let _ = writeln!(s, "# TYPE demiurge_http_connections_refused_total counter");
        let _ = writeln!(
            s,
            "demiurge_http_connections_refused_total {}",
            self.connections_refused.load(Relaxed)
        );
        let _ = writeln!(s, "# HELP demiurge_turns_started_total Turns started.");
        let _ = writeln!(s, "# TYPE demiurge_turns_started_total counter");
        let _ = writeln!(
            s,
            "demiurge_turns_started_total {}",
            self.turns_started.load(Relaxed)
        );
        let _ = writeln!(
            s,
            "# HELP demiurge_turns_finished_total Turns finished, by status."
        );
        let _ = writeln!(s, "# TYPE demiurge_turns_finished_total counter");
        for (name, c) in [
            ("completed", &self.turns_completed),
            ("failed", &self.turns_failed),
            ("cancelled", &self.turns_cancelled),
        ] {
            let _ = writeln!(
                s,
                "demiurge_turns_finished_total{{status=\"{name}\"}} {}",
                c.load(Relaxed)
            );
        }
        let _ = writeln!(
            s,
            "# HELP demiurge_turn_duration_seconds Turn latency from start to terminal state."
        );
        let _ = writeln!(s, "# TYPE demiurge_turn_duration_seconds histogram");
        for (i, b) in BUCKETS.iter().enumerate() {
            let _ = writeln!(
                s,
                "demiurge_turn_duration_seconds_bucket{{le=\"{b}\"}} {}",
                self.turn_buckets[i].load(Relaxed)
            );
        }
        let count = self.turn_count.load(Relaxed);
        let _ = writeln!(
            s,
            "demiurge_turn_duration_seconds_bucket{{le=\"+Inf\"}} {count}"
        );
        let _ = writeln!(
            s,
            "demiurge_turn_duration_seconds_sum {}",
            self.turn_sum_micros.load(Relaxed) as f64 / 1e6
        );
        let _ = writeln!(s, "demiurge_turn_duration_seconds_count {count}");
        let _ = writeln!(
            s,
            "# HELP demiurge_tasks_queued Background tasks waiting for a worker (all instances)."
        );
        let _ = writeln!(s, "# TYPE demiurge_tasks_queued gauge");
        let _ = writeln!(
            s,
            "demiurge_tasks_queued {}",
            self.tasks_queued.load(Relaxed)
        );
        let _ = writeln!(
            s,
            "# HELP demiurge_task_claim_latency_seconds Time from a task's creation to its claim by a worker."
        );
        let _ = writeln!(s, "# TYPE demiurge_task_claim_latency_seconds histogram");
        for (i, b) in BUCKETS.iter().enumerate() {
            let _ = writeln!(
                s,
                "demiurge_task_claim_latency_seconds_bucket{{le=\"{b}\"}} {}",
                self.claim_buckets[i].load(Relaxed)
            );
        }
        let claims = self.claim_count.load(Relaxed);
        let _ = writeln!(
            s,
            "demiurge_task_claim_latency_seconds_bucket{{le=\"+Inf\"}} {claims}"
        );
        let _ = writeln!(
            s,
            "demiurge_task_claim_latency_seconds_sum {}",
            self.claim_sum_micros.load(Relaxed) as f64 / 1e6
        );
        let _ = writeln!(s, "demiurge_task_claim_latency_seconds_count {claims}");
        let _ = writeln!(
            s,
            "# HELP demiurge_tasks_taken_over_total Tasks found with an expired lease and marked lost."
        );
        let _ = writeln!(s, "# TYPE demiurge_tasks_taken_over_total counter");
        let _ = writeln!(
            s,
            "demiurge_tasks_taken_over_total {}",
            self.tasks_taken_over.load(Relaxed)
        );
        let _ = writeln!(
            s,
            "# HELP demiurge_open_streams Open event streams, by transport."
        );
        let _ = writeln!(s, "# TYPE demiurge_open_streams gauge");
        let _ = writeln!(
            s,
            "demiurge_open_streams{{transport=\"sse\"}} {}",
            self.open_sse.load(Relaxed)
        );
        let _ = writeln!(
            s,
            "demiurge_open_streams{{transport=\"ws\"}} {}",
            self.open_ws.load(Relaxed)
        );
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::TurnStatus;

    #[test]
    fn renders_counters_histogram_and_gauges() {
        let m = std::sync::Arc::new(Metrics::default());
        m.response(200);
        m.response(404);
        m.response(503);
        m.turn_started();
        m.turn_finished(TurnStatus::Completed, Duration::from_millis(3));
        {
            let _g = m.stream_opened(StreamKind::Ws);
            assert!(m
                .render()
                .contains("demiurge_open_streams{transport=\"ws\"} 1"));
        }
        let text = m.render();
        assert!(text.contains("demiurge_http_responses_total{class=\"2xx\"} 1"));
        assert!(text.contains("demiurge_http_responses_total{class=\"4xx\"} 1"));
        assert!(text.contains("demiurge_turns_finished_total{status=\"completed\"} 1"));
        assert!(text.contains("demiurge_turn_duration_seconds_bucket{le=\"0.005\"} 1"));
        assert!(text.contains("demiurge_turn_duration_seconds_bucket{le=\"0.0025\"} 0"));
        assert!(text.contains("demiurge_turn_duration_seconds_count 1"));
        assert!(text.contains("demiurge_open_streams{transport=\"ws\"} 0"));
    }

    #[test]
    fn renders_the_task_queue() {
        let m = Metrics::default();
        m.tasks_queued(7);
        m.task_claimed(Duration::from_millis(4));
        m.tasks_taken_over(2);
        let text = m.render();
        assert!(text.contains("demiurge_tasks_queued 7"), "{text}");
        assert!(text.contains("demiurge_task_claim_latency_seconds_bucket{le=\"0.005\"} 1"));
        assert!(text.contains("demiurge_task_claim_latency_seconds_bucket{le=\"0.0025\"} 0"));
        assert!(text.contains("demiurge_task_claim_latency_seconds_count 1"));
        assert!(text.contains("demiurge_tasks_taken_over_total 2"));
    }
}
