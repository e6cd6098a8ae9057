//! Per-principal and per-IP request rate limits (token buckets via `governor`).

use std::net::IpAddr;
use std::num::NonZeroU32;
use std::sync::Arc;

use governor::clock::{Clock, DefaultClock};
use governor::{DefaultKeyedRateLimiter, Quota, RateLimiter};

use crate::config::RateLimitConfig;

#[derive(Clone)]
pub struct RateLimits {
    principal: Option<Arc<DefaultKeyedRateLimiter<String>>>,
    ip: Option<Arc<DefaultKeyedRateLimiter<IpAddr>>>,
}

impl std::fmt::Debug for RateLimits {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RateLimits").finish_non_exhaustive()
    }
}

fn quota(per_second: u32, burst: u32) -> Option<Quota> {
    let rate = NonZeroU32::new(per_second)?;
    let burst = NonZeroU32::new(burst.max(per_second)).unwrap_or(rate);
    Some(Quota::per_second(rate).allow_burst(burst))
}

impl RateLimits {
    pub fn new(cfg: &RateLimitConfig) -> Self {
        Self {
            principal: quota(cfg.per_principal, cfg.burst).map(|q| Arc::new(RateLimiter::keyed(q))),
            ip: quota(cfg.per_ip, cfg.burst).map(|q| Arc::new(RateLimiter::keyed(q))),
        }
    }

    /// `Err(seconds)` when the caller must wait before retrying.
    pub fn check_principal(&self, key: &str) -> Result<(), u64> {
        match &self.principal {
            None => Ok(()),
            Some(l) => l.check_key(&key.to_owned()).map_err(|n| retry_secs(&n)),
        }
    }

    pub fn check_ip(&self, ip: IpAddr) -> Result<(), u64> {
        match &self.ip {
            None => Ok(()),
            Some(l) => l.check_key(&ip).map_err(|n| retry_secs(&n)),
        }
    }

    /// Forget idle buckets so the key maps do not grow without bound.
    pub fn prune(&self) {
        if let Some(l) = &self.principal {
            l.retain_recent();
        }
        if let Some(l) = &self.ip {
            l.retain_recent();
        }
    }
}

fn retry_secs(n: &governor::NotUntil<governor::clock::QuantaInstant>) -> u64 {
    retry_after_secs(n.wait_time_from(DefaultClock::default().now()))
}

/// Seconds for `Retry-After`: the wait rounded up, never below one second (a
/// `0` invites an immediate retry that is refused again).
pub fn retry_after_secs(wait: std::time::Duration) -> u64 {
    (wait.as_secs() + u64::from(wait.subsec_nanos() > 0)).max(1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn retry_after_rounds_up_and_is_at_least_one_second() {
        use std::time::Duration;
        for (wait, secs) in [
            (Duration::ZERO, 1),
            (Duration::from_nanos(1), 1),
            (Duration::from_millis(999), 1),
            (Duration::from_secs(1), 1),
            (Duration::from_millis(1001), 2),
            (Duration::from_secs(2), 2),
            (Duration::from_millis(2500), 3),
            (Duration::from_secs(60), 60),
        ] {
            assert_eq!(retry_after_secs(wait), secs, "{wait:?}");
        }
    }

    #[test]
    fn every_refusal_says_at_least_one_second() {
        // A high rate makes sub-second waits (which used to round to 0).
        let r = RateLimits::new(&RateLimitConfig {
            per_principal: 1000,
            per_ip: 1000,
            burst: 1,
        });
        let mut refused = 0;
        for _ in 0..5000 {
            if let Err(secs) = r.check_principal("t/a") {
                refused += 1;
                assert!(secs >= 1);
            }
            if let Err(secs) = r.check_ip("127.0.0.1".parse().unwrap()) {
                assert!(secs >= 1);
            }
        }
        assert!(refused > 0);
    }

    #[test]
    fn burst_then_limited_with_retry_after() {
        let r = RateLimits::new(&RateLimitConfig {
            per_principal: 1,
            per_ip: 0,
            burst: 3,
        });
        for _ in 0..3 {
            assert!(r.check_principal("t/a").is_ok());
        }
        let wait = r.check_principal("t/a").unwrap_err();
        assert!(wait >= 1);
        // Another principal has its own bucket.
        assert!(r.check_principal("t/b").is_ok());
        // IP limit disabled.
        for _ in 0..100 {
            assert!(r.check_ip("127.0.0.1".parse().unwrap()).is_ok());
        }
    }
}
