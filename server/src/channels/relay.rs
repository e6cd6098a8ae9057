//! The relay: follows a channel session's events and turns each into outbox
//! rows ([`super::items::for_event`]), moving the conversation's cursor in
//! the same transaction, so every event reaches the chat exactly once even
//! across restarts. One relay runs per session while it has work; it stops
//! after a turn ends with nothing else running, and starts again with the
//! next turn (or at start-up for sessions left behind).

use std::collections::HashSet;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use demiurge_channels::ChannelKind;
use tokio_util::sync::CancellationToken;

use super::items::{for_event, payload_of, RelayState};
use super::outbox::Outbox;
use crate::events::{EventLog, OnLag};
use crate::store::{ConversationRow, NewOutbox, Store};
use crate::wire::events::EventPayload;

/// How long Discord lets an app answer through an interaction token (15 min), with margin.
const HANDLE_TTL_MS: i64 = 14 * 60 * 1000;
/// A relay with no event for this long re-checks whether anything still runs.
const IDLE: Duration = Duration::from_secs(30);

#[derive(Clone)]
pub struct Relays {
    inner: Arc<Inner>,
}

struct Inner {
    store: Store,
    events: EventLog,
    outbox: Outbox,
    active: Mutex<HashSet<String>>,
    shutdown: CancellationToken,
}

/// Discord's interaction token, while it still works.
pub fn live_handle(conv: &ConversationRow, now: i64) -> Option<String> {
    match (&conv.reply_handle, conv.handle_at) {
        (Some(h), Some(at)) if now - at < HANDLE_TTL_MS => Some(h.clone()),
        _ => None,
    }
}

impl Relays {
    pub fn new(
        store: Store,
        events: EventLog,
        outbox: Outbox,
        shutdown: CancellationToken,
    ) -> Self {
        Self {
            inner: Arc::new(Inner {
                store,
                events,
                outbox,
                active: Mutex::new(HashSet::new()),
                shutdown,
            }),
        }
    }

    fn claim(&self, session_id: &str) -> bool {
        self.inner
            .active
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(session_id.to_owned())
    }

    fn release(&self, session_id: &str) {
        self.inner
            .active
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove(session_id);
    }

    /// Whether a relay is still following a session here.
    pub fn busy(&self) -> bool {
        !self
            .inner
            .active
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .is_empty()
    }

    /// Make sure a relay follows this session.
    pub fn ensure(&self, session_id: &str) {
        if self.claim(session_id) {
            let this = self.clone();
            let sid = session_id.to_owned();
            tokio::spawn(async move { this.follow(sid).await });
        }
    }

    async fn follow(self, sid: String) {
        loop {
            match self.follow_once(&sid).await {
                Ok(true) => continue,
                Ok(false) => {}
                Err(e) => {
                    tracing::warn!(error = %e, session = %sid, "channel relay stopped; retrying");
                    tokio::time::sleep(Duration::from_secs(1)).await;
                    if !self.inner.shutdown.is_cancelled() {
                        continue;
                    }
                }
            }
            // Stop, unless a turn started meanwhile (its `ensure` saw us active).
            self.release(&sid);
            let running = self.inner.store.running_turn_of(&sid).await.ok().flatten();
            if running.is_some() && !self.inner.shutdown.is_cancelled() && self.claim(&sid) {
                continue;
            }
            return;
        }
    }

    /// Follow until the session is idle (`Ok(false)`), or until the cursor
    /// moved elsewhere and must be re-read (`Ok(true)`).
    async fn follow_once(&self, sid: &str) -> Result<bool, crate::error::Error> {
        let inner = &self.inner;
        let Some(mut conv) = inner.store.channel_conversation_of_session(sid).await? else {
            return Ok(false);
        };
        let Some(account) = inner
            .store
            .get_channel_account(&conv.key.account_id)
            .await?
        else {
            return Ok(false);
        };
        let Ok(platform) = account.platform.parse::<ChannelKind>() else {
            return Ok(false);
        };
        let mut cursor = conv.relayed_seq;
        // A stored session id that does not parse names no session to follow.
        let Ok(session) = crate::ids::SessionId::parse(sid) else {
            return Ok(false);
        };
        let mut sub = inner.events.subscribe(session, cursor, OnLag::Refill);
        let mut state = RelayState::default();
        loop {
            let next = tokio::select! {
                n = tokio::time::timeout(IDLE, sub.next()) => n,
                _ = inner.shutdown.cancelled() => return Ok(false),
            };
            let ev = match next {
                Err(_) => {
                    if inner.store.running_turn_of(sid).await?.is_none() {
                        return Ok(false);
                    }
                    continue;
                }
                Ok(Ok(Some(ev))) => ev,
                Ok(Ok(None)) => return Ok(false),
                Ok(Err(e)) => {
                    return Err(crate::error::Error::Internal(anyhow::anyhow!(
                        "subscription: {e:?}"
                    )))
                }
            };
            let payload = payload_of(ev.json.as_str());
            if matches!(payload, Some(EventPayload::TurnStarted(_))) {
                // A new /ask may have brought a new interaction token.
                if let Some(c) = inner.store.channel_conversation_of_session(sid).await? {
                    conv = c;
                }
            }
            let handle = match platform {
                ChannelKind::Discord => live_handle(&conv, crate::time::now_ms()),
                _ => None,
            };
            let items = match &payload {
                Some(payload) => for_event(platform, payload, handle.as_deref(), &mut state),
                None => {
                    tracing::warn!(session = %sid, seq = ev.seq, kind = %ev.kind,
                        "an event that no longer parses is not relayed to the chat");
                    Vec::new()
                }
            };
            let thread = (!conv.key.thread.is_empty()).then(|| conv.key.thread.clone());
            let rows: Vec<NewOutbox> = items
                .iter()
                .filter_map(|it| serde_json::to_string(it).ok())
                .map(|payload| NewOutbox {
                    account_id: conv.key.account_id.clone(),
                    chat: conv.key.chat.clone(),
                    thread: thread.clone(),
                    payload,
                })
                .collect();
            if !inner
                .store
                .channel_relay(sid, cursor, ev.seq, &rows)
                .await?
            {
                return Ok(true);
            }
            cursor = ev.seq;
            if !rows.is_empty() {
                inner.outbox.wake();
            }
            if matches!(
                payload,
                Some(
                    EventPayload::TurnCompleted(_)
                        | EventPayload::TurnFailed(_)
                        | EventPayload::TurnCancelled(_)
                )
            ) && inner.store.running_turn_of(sid).await?.is_none()
            {
                return Ok(false);
            }
        }
    }
}
