//! Fan-out across server instances sharing one PostgreSQL database: every
//! committed batch sends `NOTIFY demiurge_events` with `session:last_seq`
//! pairs, and each instance's listener reads the new events of sessions it
//! has subscribers for and publishes them locally. Subscribers already order
//! by seq and drop duplicates, so an instance's own events coming back are
//! harmless.

use std::time::Duration;

use sqlx::postgres::PgListener;

use super::{Event, Hub};
use crate::store::Store;

pub const CHANNEL: &str = "demiurge_events";

/// `sid:seq,sid:seq` payloads, each under PostgreSQL's 8,000-byte limit.
pub fn payloads(pairs: &[(String, i64)]) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    for (sid, seq) in pairs {
        let item = format!("{sid}:{seq}");
        if !cur.is_empty() && cur.len() + item.len() + 1 > 7_000 {
            out.push(std::mem::take(&mut cur));
        }
        if !cur.is_empty() {
            cur.push(',');
        }
        cur.push_str(&item);
    }
    if !cur.is_empty() {
        out.push(cur);
    }
    out
}

fn parse(payload: &str) -> Vec<(&str, i64)> {
    payload
        .split(',')
        .filter_map(|p| {
            let (sid, seq) = p.rsplit_once(':')?;
            Some((sid, seq.parse().ok()?))
        })
        .collect()
}

/// Listen for other instances' commits until the process ends; reconnects.
pub async fn listen(url: String, store: Store, hub: Hub) {
    loop {
        match PgListener::connect(&url).await {
            Ok(mut listener) => {
                if let Err(e) = listener.listen(CHANNEL).await {
                    tracing::warn!(error = %e, "LISTEN failed; retrying");
                } else {
                    loop {
                        match listener.recv().await {
                            Ok(n) => {
                                for (sid, seq) in parse(n.payload()) {
                                    let Some(last) = hub.last_published(sid) else {
                                        continue;
                                    };
                                    if seq <= last {
                                        continue;
                                    }
                                    match store.events_after(sid, last, 1000).await {
                                        Ok(rows) => {
                                            for r in &rows {
                                                hub.publish(&std::sync::Arc::new(Event::from_row(
                                                    r,
                                                )));
                                            }
                                        }
                                        Err(e) => {
                                            tracing::warn!(error = %e, "peer event read failed")
                                        }
                                    }
                                }
                            }
                            Err(e) => {
                                tracing::warn!(error = %e, "event listener lost its connection; reconnecting");
                                break;
                            }
                        }
                    }
                }
            }
            Err(e) => tracing::warn!(error = %e, "event listener cannot connect; retrying"),
        }
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn payloads_round_trip_and_stay_small() {
        let pairs: Vec<(String, i64)> =
            (0..500).map(|i| (format!("{:036}", i), i as i64)).collect();
        let ps = payloads(&pairs);
        assert!(ps.len() > 1);
        let mut back = Vec::new();
        for p in &ps {
            assert!(p.len() <= 7_100);
            back.extend(parse(p).into_iter().map(|(s, q)| (s.to_owned(), q)));
        }
        assert_eq!(back, pairs);
        assert!(parse("garbage,,x:y").is_empty());
    }
}
