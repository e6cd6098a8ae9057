//! Fan-out across server instances sharing one PostgreSQL database: every
//! committed batch sends `NOTIFY demiurge_events` with `session:last_seq`
//! pairs, and each instance's listener reads the new events of sessions it
//! has subscribers for and publishes them locally. Subscribers already order
//! by seq and drop duplicates, so an instance's own events coming back are
//! harmless.

use std::time::Duration;

use sqlx::postgres::PgListener;

use super::{Event, Hub};
use crate::store::peer_notify::{parse, CHANNEL};
use crate::store::Store;

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
