//! Per-platform counters for `GET /metrics`.

use std::fmt::Write;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

use demiurge_channels::ChannelKind;

#[derive(Debug, Default)]
struct Counters {
    inbound: AtomicU64,
    rejected: AtomicU64,
    duplicates: AtomicU64,
    sent: AtomicU64,
    retried: AtomicU64,
    failed: AtomicU64,
}

type Series = (&'static str, &'static str, fn(&Counters) -> &AtomicU64);

#[derive(Debug, Default)]
pub struct ChannelMetrics {
    by_platform: [Counters; 4],
}

fn index(p: ChannelKind) -> usize {
    match p {
        ChannelKind::Slack => 0,
        ChannelKind::Telegram => 1,
        ChannelKind::Discord => 2,
        ChannelKind::Webhook => 3,
    }
}

impl ChannelMetrics {
    fn c(&self, p: ChannelKind) -> &Counters {
        &self.by_platform[index(p)]
    }
    pub fn inbound(&self, p: ChannelKind) {
        self.c(p).inbound.fetch_add(1, Relaxed);
    }
    pub fn rejected(&self, p: ChannelKind) {
        self.c(p).rejected.fetch_add(1, Relaxed);
    }
    pub fn duplicate(&self, p: ChannelKind) {
        self.c(p).duplicates.fetch_add(1, Relaxed);
    }
    pub fn sent(&self, p: ChannelKind) {
        self.c(p).sent.fetch_add(1, Relaxed);
    }
    pub fn retried(&self, p: ChannelKind) {
        self.c(p).retried.fetch_add(1, Relaxed);
    }
    pub fn failed(&self, p: ChannelKind, n: u64) {
        self.c(p).failed.fetch_add(n, Relaxed);
    }

    pub fn render(&self) -> String {
        let mut out = String::new();
        let series: [Series; 6] = [
            (
                "demiurge_channel_inbound_total",
                "Verified inbound deliveries",
                |c| &c.inbound,
            ),
            (
                "demiurge_channel_rejected_total",
                "Inbound requests refused (401)",
                |c| &c.rejected,
            ),
            (
                "demiurge_channel_duplicates_total",
                "Inbound deliveries already received",
                |c| &c.duplicates,
            ),
            (
                "demiurge_channel_sent_total",
                "Outbound requests delivered",
                |c| &c.sent,
            ),
            (
                "demiurge_channel_retried_total",
                "Outbound requests to retry (429, 5xx, network)",
                |c| &c.retried,
            ),
            (
                "demiurge_channel_failed_total",
                "Outbound requests given up",
                |c| &c.failed,
            ),
        ];
        for (name, help, get) in series {
            let _ = writeln!(out, "# HELP {name} {help}\n# TYPE {name} counter");
            for p in ChannelKind::ALL {
                let _ = writeln!(
                    out,
                    "{name}{{platform=\"{p}\"}} {}",
                    get(self.c(p)).load(Relaxed)
                );
            }
        }
        out
    }
}
