//! Per-tenant usage counters for `/metrics`: tokens, model calls, tool
//! calls and process CPU, counted by the meter's writer (off the turn's
//! path) as rows are stored. The one label is the tenant; past
//! [`MAX_TENANTS`] distinct tenants on one instance, the rest share the
//! label `(other)`, so a scrape stays bounded (about 6 series per tenant:
//! some 6,000 lines at the cap).

use std::collections::BTreeMap;
use std::fmt::Write;
use std::sync::Mutex;

use crate::store::{NewModelCall, NewToolUsage};

/// Tenants with a label of their own, per instance.
pub const MAX_TENANTS: usize = 1_000;
/// The label shared by tenants past the cap.
pub const OTHER: &str = "(other)";

#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Counts {
    pub model_calls: u64,
    pub input_tokens: u64,
    pub output_tokens: u64,
    pub cached_tokens: u64,
    pub tool_calls: u64,
    pub cpu_ms: u64,
}

#[derive(Debug, Default)]
pub struct TenantCounters {
    by_tenant: Mutex<BTreeMap<String, Counts>>,
}

impl TenantCounters {
    fn with(&self, tenant: &str, f: impl FnOnce(&mut Counts)) {
        let mut map = self.by_tenant.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(c) = map.get_mut(tenant) {
            return f(c);
        }
        let key = if map.len() < MAX_TENANTS {
            tenant
        } else {
            OTHER
        };
        f(map.entry(key.to_owned()).or_default());
    }

    pub fn model_calls(&self, calls: &[NewModelCall]) {
        for c in calls {
            self.with(&c.tenant_id, |n| {
                n.model_calls += 1;
                if let Some((i, o, k)) = c.tokens {
                    n.input_tokens += i;
                    n.output_tokens += o;
                    n.cached_tokens += k;
                }
            });
        }
    }

    pub fn tools(&self, rows: &[NewToolUsage]) {
        for r in rows {
            self.with(&r.tenant_id, |n| {
                n.tool_calls += r.calls;
                n.cpu_ms += r.cpu_ms;
            });
        }
    }

    pub fn get(&self, tenant: &str) -> Option<Counts> {
        let map = self.by_tenant.lock().unwrap_or_else(|p| p.into_inner());
        map.get(tenant).copied()
    }

    /// The counters in Prometheus' text format.
    pub fn render(&self) -> String {
        let map = self
            .by_tenant
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone();
        let mut s = String::with_capacity(256 + map.len() * 400);
        type Series = fn(&Counts) -> Vec<(&'static str, String)>;
        let families: [(&str, &str, Series); 4] = [
            ("demiurge_usage_model_calls_total", "Model calls, by tenant.", |c| {
                vec![("", c.model_calls.to_string())]
            }),
            (
                "demiurge_usage_tokens_total",
                "Model tokens the providers reported, by tenant and kind (cached is part of input).",
                |c| {
                    vec![
                        ("input", c.input_tokens.to_string()),
                        ("output", c.output_tokens.to_string()),
                        ("cached", c.cached_tokens.to_string()),
                    ]
                },
            ),
            ("demiurge_usage_tool_calls_total", "Tool calls, by tenant.", |c| {
                vec![("", c.tool_calls.to_string())]
            }),
            (
                "demiurge_usage_cpu_seconds_total",
                "CPU time of the commands tenants' tools and tasks ran, by tenant.",
                |c| vec![("", (c.cpu_ms as f64 / 1000.0).to_string())],
            ),
        ];
        for (name, help, series) in families {
            let _ = writeln!(s, "# HELP {name} {help}");
            let _ = writeln!(s, "# TYPE {name} counter");
            for (tenant, c) in &map {
                let tenant = escape(tenant);
                for (kind, v) in series(c) {
                    if kind.is_empty() {
                        let _ = writeln!(s, "{name}{{tenant=\"{tenant}\"}} {v}");
                    } else {
                        let _ = writeln!(s, "{name}{{tenant=\"{tenant}\",kind=\"{kind}\"}} {v}");
                    }
                }
            }
        }
        s
    }
}

/// A label value as the text format wants it.
pub(super) fn escape(v: &str) -> String {
    v.replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn call(tenant: &str) -> NewModelCall {
        NewModelCall {
            tenant_id: tenant.into(),
            principal_id: "p".into(),
            session_id: "s".into(),
            core_id: "c".into(),
            channel: String::new(),
            provider: "fake".into(),
            model: "fake".into(),
            tokens: Some((10, 5, 2)),
            latency_ms: 1,
            at: 0,
        }
    }

    #[test]
    fn counts_render_and_stay_bounded() {
        let c = TenantCounters::default();
        c.model_calls(&[call("acme"), call("acme")]);
        let mut unknown = call("acme");
        unknown.tokens = None;
        c.model_calls(&[unknown]);
        let text = c.render();
        assert!(
            text.contains("demiurge_usage_model_calls_total{tenant=\"acme\"} 3"),
            "{text}"
        );
        assert!(text.contains("demiurge_usage_tokens_total{tenant=\"acme\",kind=\"input\"} 20"));
        assert!(text.contains("demiurge_usage_tokens_total{tenant=\"acme\",kind=\"cached\"} 4"));
        for i in 0..MAX_TENANTS + 50 {
            c.model_calls(&[call(&format!("t{i}"))]);
        }
        assert_eq!(c.get(OTHER).unwrap().model_calls, 51);
        let series = c
            .render()
            .lines()
            .filter(|l| l.starts_with("demiurge_usage_model_calls_total{"))
            .count();
        assert_eq!(series, MAX_TENANTS + 1);
    }
}
