//! The event log: every event is persisted with its per-session `seq` before
//! it is fanned out to subscribers (SSE, WebSocket, channels). Appends are
//! group-committed by one writer task; subscribers read the backlog from the
//! database and then follow the live feed, with no gap and no duplicate.
//!
//! What may be appended is typed: an [`EventPayload`] from
//! [`crate::wire::events`] (every kind and its payload live there).

mod hub;
pub mod peers;
mod subscription;
pub mod tenant;

use std::sync::Arc;

use tokio::sync::{mpsc, oneshot};

pub use hub::Hub;
pub use subscription::{Lagged, OnLag, Subscription, SubscriptionError};

use crate::ids::{SessionId, TurnId};
use crate::store::{EventRow, NewEvent, Store, TurnFinish};
use crate::wire::events::EventPayload;

/// A persisted event, serialised once for every subscriber.
#[derive(Debug)]
pub struct Event {
    pub seq: i64,
    pub session_id: String,
    pub turn_id: Option<String>,
    pub kind: String,
    /// The wire form: `{"seq","session_id","turn_id","type","at","data"}`,
    /// built once; clones share the bytes, so fan-out never copies it.
    pub json: axum::extract::ws::Utf8Bytes,
}

impl Event {
    pub fn from_row(r: &EventRow) -> Self {
        let json = format!(
            r#"{{"seq":{},"session_id":{},"turn_id":{},"type":{},"at":{},"data":{}}}"#,
            r.seq,
            serde_json::Value::from(r.session_id.as_str()),
            r.turn_id
                .as_deref()
                .map(serde_json::Value::from)
                .unwrap_or(serde_json::Value::Null),
            serde_json::Value::from(r.kind.as_str()),
            serde_json::Value::from(r.at.as_str()),
            r.data
        );
        Self {
            seq: r.seq,
            session_id: r.session_id.clone(),
            turn_id: r.turn_id.clone(),
            kind: r.kind.clone(),
            json: json.into(),
        }
    }
}

type Reply = oneshot::Sender<Result<Option<Arc<Event>>, String>>;

/// Handle to the log; cheap to clone.
#[derive(Clone, Debug)]
pub struct EventLog {
    store: Store,
    hub: Hub,
    tx: mpsc::Sender<(NewEvent, Reply)>,
}

/// Most events committed in one transaction.
const MAX_BATCH: usize = 256;

impl EventLog {
    /// Start the writer task.
    pub fn start(store: Store, hub: Hub) -> Self {
        let (tx, rx) = mpsc::channel(4096);
        tokio::spawn(writer(store.clone(), hub.clone(), rx));
        Self { store, hub, tx }
    }

    /// Also deliver events committed by other instances on the same
    /// PostgreSQL database (LISTEN/NOTIFY).
    pub fn follow_peers(&self, database_url: String) {
        tokio::spawn(peers::listen(
            database_url,
            self.store.clone(),
            self.hub.clone(),
        ));
    }

    /// Persist an event, then publish it. Returns the stored event.
    pub async fn append(
        &self,
        session_id: SessionId,
        turn_id: Option<TurnId>,
        payload: EventPayload,
    ) -> Result<Arc<Event>, crate::error::Error> {
        let ev = self
            .submit(session_id, turn_id, payload, None, Vec::new())
            .await?;
        ev.ok_or_else(|| {
            crate::error::Error::Internal(anyhow::anyhow!("event without a transition was dropped"))
        })
    }

    /// Persist a turn's terminal event together with its state transition and
    /// messages, in one transaction. `None` if the turn had already ended.
    pub async fn append_final(
        &self,
        session_id: SessionId,
        payload: EventPayload,
        finish: TurnFinish,
        messages: Vec<serde_json::Value>,
    ) -> Result<Option<Arc<Event>>, crate::error::Error> {
        let turn_id = finish.turn_id;
        self.submit(session_id, Some(turn_id), payload, Some(finish), messages)
            .await
    }

    async fn submit(
        &self,
        session_id: SessionId,
        turn_id: Option<TurnId>,
        payload: EventPayload,
        finish: Option<TurnFinish>,
        messages: Vec<serde_json::Value>,
    ) -> Result<Option<Arc<Event>>, crate::error::Error> {
        let data = payload.data().map_err(|e| {
            crate::error::Error::Internal(anyhow::anyhow!("serialise {}: {e}", payload.kind()))
        })?;
        let ev = NewEvent {
            session_id: session_id.to_string(),
            turn_id: turn_id.map(|t| t.to_string()),
            kind: payload.kind().to_owned(),
            at_ms: crate::time::now_ms(),
            data,
            finish,
            messages,
        };
        let (reply, rx) = oneshot::channel();
        self.tx
            .send((ev, reply))
            .await
            .map_err(|_| crate::error::Error::Unavailable("event log is closed".into()))?;
        match rx.await {
            Ok(Ok(ev)) => Ok(ev),
            Ok(Err(msg)) => Err(crate::error::Error::Internal(anyhow::anyhow!(
                "append event: {msg}"
            ))),
            Err(_) => Err(crate::error::Error::Unavailable(
                "event log is closed".into(),
            )),
        }
    }

    /// Follow a session's events with `seq > after`.
    pub fn subscribe(&self, session_id: SessionId, after: i64, on_lag: OnLag) -> Subscription {
        Subscription::new(
            self.store.clone(),
            self.hub.clone(),
            &session_id.to_string(),
            after,
            on_lag,
        )
    }

    /// Follow a session's events published from now on (see
    /// [`Subscription::live`]): no database read until a gap.
    pub fn subscribe_live(&self, session_id: SessionId, on_lag: OnLag) -> Subscription {
        Subscription::live(
            self.store.clone(),
            self.hub.clone(),
            &session_id.to_string(),
            on_lag,
        )
    }

    pub fn hub(&self) -> &Hub {
        &self.hub
    }
}

async fn writer(store: Store, hub: Hub, mut rx: mpsc::Receiver<(NewEvent, Reply)>) {
    let mut batch: Vec<(NewEvent, Reply)> = Vec::with_capacity(MAX_BATCH);
    while let Some(first) = rx.recv().await {
        batch.push(first);
        while batch.len() < MAX_BATCH {
            match rx.try_recv() {
                Ok(item) => batch.push(item),
                Err(_) => break,
            }
        }
        let (events, replies): (Vec<NewEvent>, Vec<Reply>) = batch.drain(..).unzip();
        match store.append_events(&events).await {
            Ok(rows) => {
                for (row, reply) in rows.iter().zip(replies) {
                    let ev = row.as_ref().map(|r| Arc::new(Event::from_row(r)));
                    if let Some(ev) = &ev {
                        hub.publish(ev);
                    }
                    let _ = reply.send(Ok(ev));
                }
            }
            Err(e) => {
                tracing::error!(error = %e, count = events.len(), "failed to persist events");
                for reply in replies {
                    let _ = reply.send(Err(e.to_string()));
                }
            }
        }
    }
}
