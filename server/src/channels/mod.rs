//! Chat channels: Telegram, Slack, Discord and signed generic webhooks,
//! mounted on the platform-neutral rules of the `demiurge-channels` crate.
//!
//! This room owns what happens between a platform and a session:
//! - accounts per tenant ([`Channels::create_account`]), their credentials
//!   sealed at rest ([`crate::sealing`]) and checked by platform ([`account`]);
//! - inbound webhooks ([`Channels::webhook`]): verified by the platform's own
//!   signature (anything else is 401 and touches nothing), recorded in a
//!   durable inbox keyed by the platform's event id (a retry or duplicate
//!   runs nothing), answered at once while the work runs asynchronously;
//! - identity: `allowed_users`, or a pairing code a tenant operator
//!   approves; every platform user is its own member principal of the
//!   account's tenant, and each conversation (platform, account, chat,
//!   thread, and the user in group chats) is bound to one session;
//! - chat commands (`/approve`, `/deny`, `/stop`, `/new`), approval buttons,
//!   and answers to `clarify` questions;
//! - the way back: [`relay`] turns session events into outbox rows
//!   ([`items`]), [`outbox`] delivers them durably.

pub mod account;
pub mod items;
pub mod metrics;
pub mod outbox;
pub mod relay;

use std::path::PathBuf;
use std::sync::Arc;

use axum::http::HeaderMap;
use demiurge_channels::commands::{self, Command};
use demiurge_channels::wire::{self, Inbound};
use demiurge_channels::{verify, ChannelKind};
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};
use tokio_util::sync::CancellationToken;
use utoipa::ToSchema;

use crate::auth::{PrincipalScope, Role};
use crate::core::repository::CoreRepository;
use crate::dispatch::approvals::Approvals;
use crate::dispatch::clarify::Clarifications;
use crate::error::{Error, Result};
use crate::events::EventLog;
use crate::ids::{CoreId, PrincipalId, SessionId, TenantId, TurnId};
use crate::sealing::{Binding, Sealer};
use crate::store::{
    ChannelAccountRow, ConversationKey, ConversationRow, NewOutbox, NewSession, PairingRow, Store,
};
use crate::turn::TurnService;
use account::Credentials;
use items::Item;
use metrics::ChannelMetrics;
use outbox::Outbox;
use relay::Relays;

/// Retries (100 ms apart) of a message that finds the previous turn still settling.
const BUSY_RETRIES: u32 = 20;

/// What the host hands the channel room.
pub struct ChannelDeps {
    pub store: Store,
    pub events: EventLog,
    pub turns: TurnService,
    pub approvals: Approvals,
    pub clarifications: Clarifications,
    pub cores: CoreRepository,
    pub home: PathBuf,
    /// The server's sealer for account credentials.
    pub sealer: Sealer,
    /// The one outbound client (URL policy, `--url-allow`, pinned DNS).
    pub outbound: crate::net::Outbound,
    /// Fired when the instance has drained: relays and the outbox stop.
    pub shutdown: CancellationToken,
}

#[derive(Clone)]
pub struct Channels {
    inner: Arc<Inner>,
}

struct Inner {
    store: Store,
    turns: TurnService,
    approvals: Approvals,
    clarifications: Clarifications,
    cores: CoreRepository,
    home: PathBuf,
    key: Sealer,
    outbox: Outbox,
    relays: Relays,
    metrics: Arc<ChannelMetrics>,
    shutdown: CancellationToken,
}

/// A request for a new account (already parsed from JSON by the API).
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct NewAccount {
    /// `telegram`, `slack`, `discord` or `webhook`.
    #[schema(pattern = "^(telegram|slack|discord|webhook)$")]
    pub platform: String,
    /// Unique in the tenant; 1 to 100 characters.
    #[schema(min_length = 1, max_length = 100)]
    pub name: String,
    /// By platform: telegram `{bot_token, secret_token}`, slack `{bot_token,
    /// signing_secret}`, discord `{application_id, public_key, bot_token}`,
    /// webhook `{secret, callback_url}`. Stored encrypted, never returned.
    #[schema(value_type = Object)]
    pub credentials: Value,
    /// Where the platform's API is (tests, self-hosted gateways); the
    /// platform's public API when absent. Not for `webhook` accounts.
    pub api_base_url: Option<String>,
    /// Platform user ids (strings) that may talk to the agent; others may pair.
    #[schema(max_items = 1000)]
    pub allowed_users: Option<Vec<String>>,
    /// The Agent Core sessions of this account run (default `assistant`).
    #[schema(pattern = "^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$")]
    pub core: Option<String>,
}

/// Delivery health of an account.
#[derive(Debug, Serialize, ToSchema)]
pub struct AccountStatus {
    /// RFC 3339: the last verified inbound request.
    pub last_inbound_at: Option<String>,
    /// RFC 3339: the last message delivered to the platform.
    pub last_delivery_at: Option<String>,
    /// The last delivery or processing error (free of secrets).
    pub last_error: Option<String>,
    pub last_error_at: Option<String>,
    /// Messages waiting in the outbox.
    pub pending_outbox: i64,
}

/// An account as its tenant's operators see it: never its credentials.
#[derive(Debug, Serialize, ToSchema)]
pub struct AccountInfo {
    pub id: String,
    pub platform: String,
    pub name: String,
    /// Register this path (under this server's public URL) with the platform.
    pub webhook_path: String,
    pub api_base_url: Option<String>,
    pub allowed_users: Vec<String>,
    pub core: String,
    pub created_by: String,
    pub created_at: String,
    pub status: AccountStatus,
}

/// A pending pairing (its code is what the user tells the operator; never listed).
#[derive(Debug, Serialize, ToSchema)]
pub struct PairingInfo {
    pub platform_user: String,
    /// `pending`, or `refused` (too many pending at the time).
    pub state: String,
    pub created_at: String,
    pub expires_at: String,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct PairingApproved {
    pub platform_user: String,
    /// The member principal the user is from now on.
    pub principal: String,
}

/// The immediate answer to a platform's webhook request.
#[derive(Debug)]
pub struct WebhookReply {
    pub status: u16,
    pub body: Value,
}

impl WebhookReply {
    fn ok(body: Value) -> Self {
        Self { status: 200, body }
    }
}

/// A verified delivery as the inbox keeps it until handled.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum Delivery {
    Message {
        user: String,
        chat: String,
        thread: Option<String>,
        group: bool,
        text: String,
        handle: Option<String>,
    },
    Button {
        user: String,
        chat: String,
        thread: Option<String>,
        approval_id: String,
        decision: String,
        handle: Option<String>,
    },
}

/// Where a reply goes.
struct Target<'a> {
    account: &'a ChannelAccountRow,
    platform: ChannelKind,
    chat: &'a str,
    thread: Option<&'a str>,
    handle: Option<&'a str>,
}

fn rfc(ms: Option<i64>) -> Option<String> {
    ms.map(crate::time::rfc3339)
}

/// Open an account's sealed credentials.
pub(crate) fn open_credentials(
    key: &Sealer,
    row: &ChannelAccountRow,
    platform: ChannelKind,
) -> Result<Credentials> {
    let bytes = key
        .open(Binding::ChannelAccount(&row.id), &row.credentials)
        .map_err(|e| Error::Internal(anyhow::anyhow!("account {}: {e}", row.id)))?;
    let v: Value = serde_json::from_slice(&bytes).map_err(|_| {
        Error::Internal(anyhow::anyhow!(
            "account {}: unreadable credentials",
            row.id
        ))
    })?;
    Credentials::parse(platform, &v)
        .map_err(|e| Error::Internal(anyhow::anyhow!("account {}: {e}", row.id)))
}

fn header<'a>(h: &'a HeaderMap, name: &str) -> Option<&'a str> {
    h.get(name).and_then(|v| v.to_str().ok())
}

/// Is this request the platform's? (Pure; `now` in Unix seconds.)
fn verify_request(
    creds: &Credentials,
    headers: &HeaderMap,
    body: &[u8],
    now: i64,
) -> std::result::Result<(), verify::VerifyError> {
    match creds {
        Credentials::Telegram(c) => verify::telegram(
            &c.secret_token,
            header(headers, "x-telegram-bot-api-secret-token"),
        ),
        Credentials::Slack(c) => verify::slack(
            &c.signing_secret,
            header(headers, "x-slack-request-timestamp"),
            header(headers, "x-slack-signature"),
            body,
            now,
        ),
        Credentials::Discord(c) => verify::discord(
            &c.public_key,
            header(headers, "x-signature-ed25519"),
            header(headers, "x-signature-timestamp"),
            body,
        ),
        Credentials::Webhook(c) => {
            verify::webhook(&c.secret, header(headers, "x-demiurge-signature"), body)
        }
    }
}

fn random_byte() -> u8 {
    let mut b = [0u8; 1];
    // getrandom only fails without an entropy source; a zero byte keeps the
    // code well-formed and the rejection sampler moving.
    let _ = getrandom::getrandom(&mut b);
    b[0]
}

impl Channels {
    pub fn new(deps: ChannelDeps) -> anyhow::Result<Self> {
        let key = deps.sealer;
        let metrics = Arc::new(ChannelMetrics::default());
        let outbox = Outbox::new(
            deps.store.clone(),
            key.clone(),
            deps.outbound,
            metrics.clone(),
        );
        let relays = Relays::new(
            deps.store.clone(),
            deps.events,
            outbox.clone(),
            deps.shutdown.clone(),
        );
        Ok(Self {
            inner: Arc::new(Inner {
                store: deps.store,
                turns: deps.turns,
                approvals: deps.approvals,
                clarifications: deps.clarifications,
                cores: deps.cores,
                home: deps.home,
                key,
                outbox,
                relays,
                metrics,
                shutdown: deps.shutdown,
            }),
        })
    }

    /// At the end of a drain: let the relays write the replies of turns that
    /// just ended and the outbox send what is due, for up to `within`.
    pub async fn settle(&self, within: std::time::Duration) {
        let deadline = std::time::Instant::now() + within;
        while self.inner.relays.busy() && std::time::Instant::now() < deadline {
            tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        }
        self.inner.outbox.flush(deadline).await;
    }

    pub fn metrics(&self) -> &ChannelMetrics {
        &self.inner.metrics
    }

    /// Start delivering, and pick up what a previous run left: deliveries
    /// received but not handled, and events not yet relayed.
    pub async fn start(&self) -> anyhow::Result<()> {
        self.inner.outbox.spawn(self.inner.shutdown.clone());
        for (account_id, event_id, payload) in self.inner.store.channel_inbox_pending(1000).await? {
            let Ok(delivery) = serde_json::from_str::<Delivery>(&payload) else {
                self.inner
                    .store
                    .channel_inbox_done(&account_id, &event_id)
                    .await?;
                continue;
            };
            let Some(account) = self.inner.store.get_channel_account(&account_id).await? else {
                continue;
            };
            let Ok(platform) = account.platform.parse::<ChannelKind>() else {
                continue;
            };
            let this = self.clone();
            tokio::spawn(async move { this.handle(account, platform, event_id, delivery).await });
        }
        for sid in self.inner.store.channel_sessions_behind().await? {
            self.inner.relays.ensure(&sid);
        }
        Ok(())
    }

    // ------------------------------------------------------------ accounts

    fn operator(scope: &PrincipalScope) -> Result<()> {
        if scope.is_operator() {
            Ok(())
        } else {
            Err(Error::Forbidden(
                "channel accounts are for tenant operators and admins".into(),
            ))
        }
    }

    async fn info(&self, row: ChannelAccountRow) -> Result<AccountInfo> {
        let pending = self.inner.store.channel_outbox_pending(&row.id).await?;
        Ok(AccountInfo {
            webhook_path: format!("/v1/channels/{}/{}", row.platform, row.id),
            allowed_users: serde_json::from_str(&row.allowed_users).unwrap_or_default(),
            status: AccountStatus {
                last_inbound_at: rfc(row.last_inbound_at),
                last_delivery_at: rfc(row.last_delivery_at),
                last_error: row.last_error,
                last_error_at: rfc(row.last_error_at),
                pending_outbox: pending,
            },
            id: row.id,
            platform: row.platform,
            name: row.name,
            api_base_url: row.api_base_url,
            core: row.core,
            created_by: row.created_by,
            created_at: crate::time::rfc3339(row.created_at),
        })
    }

    pub async fn create_account(
        &self,
        scope: &PrincipalScope,
        via: &crate::store::Surface,
        req: NewAccount,
    ) -> Result<AccountInfo> {
        Self::operator(scope)?;
        let platform: ChannelKind = req
            .platform
            .parse()
            .map_err(|e: demiurge_channels::UnknownChannel| Error::Invalid(e.to_string()))?;
        account::check_name(&req.name).map_err(Error::Invalid)?;
        let creds = Credentials::parse(platform, &req.credentials).map_err(Error::Invalid)?;
        let api_base_url = match (&req.api_base_url, platform) {
            (Some(_), ChannelKind::Webhook) => return Err(Error::Invalid(
                "webhook accounts reply to credentials.callback_url; api_base_url is not for them"
                    .into(),
            )),
            (Some(u), _) => Some(
                account::check_base_url(u)
                    .map_err(|e| Error::Invalid(format!("api_base_url: {e}")))?,
            ),
            (None, _) => None,
        };
        let users = req.allowed_users.unwrap_or_default();
        account::check_allowed_users(&users).map_err(Error::Invalid)?;
        let core = CoreId::parse(req.core.as_deref().unwrap_or("assistant"))?;
        if core.as_str() != "assistant" && !self.inner.cores.exists(scope.tenant(), &core) {
            return Err(Error::Invalid(format!(
                "unknown core {:?} in this tenant",
                core.as_str()
            )));
        }
        let id = uuid::Uuid::now_v7().to_string();
        let plain = serde_json::to_vec(&creds).map_err(|e| Error::Internal(e.into()))?;
        let sealed = self
            .inner
            .key
            .seal(Binding::ChannelAccount(&id), &plain)
            .map_err(|e| Error::Internal(e.into()))?;
        let row = ChannelAccountRow {
            id,
            tenant_id: scope.tenant().to_string(),
            platform: platform.as_str().to_owned(),
            name: req.name,
            credentials: sealed,
            api_base_url,
            allowed_users: serde_json::to_string(&users).unwrap_or_else(|_| "[]".into()),
            core: core.to_string(),
            created_by: scope.principal().to_string(),
            created_at: crate::time::now_ms(),
            last_inbound_at: None,
            last_delivery_at: None,
            last_error: None,
            last_error_at: None,
            pairing_failures: 0,
            pairing_locked_until: None,
        };
        // Never the credentials: which account, where, and who may use it.
        let audit = scope.audit(
            via,
            "channel_account.added",
            &row.id,
            serde_json::json!({"platform": row.platform, "name": row.name, "core": row.core,
                "allowed_users": serde_json::from_str::<serde_json::Value>(&row.allowed_users)
                    .unwrap_or_default()}),
        );
        match self.inner.store.insert_channel_account(&row, &audit).await {
            Ok(()) => {}
            Err(e) if crate::store::is_unique_violation(&e) => {
                return Err(Error::Conflict(format!(
                    "this tenant already has an account named {:?}",
                    row.name
                )))
            }
            Err(e) => return Err(e.into()),
        }
        tracing::info!(tenant = %scope.tenant(), account = %row.id, platform = %platform,
            by = %scope.principal(), "channel account created");
        self.info(row).await
    }

    pub async fn list_accounts(&self, scope: &PrincipalScope) -> Result<Vec<AccountInfo>> {
        Self::operator(scope)?;
        let rows = self
            .inner
            .store
            .list_channel_accounts(scope.tenant().as_str())
            .await?;
        let mut out = Vec::with_capacity(rows.len());
        for r in rows {
            out.push(self.info(r).await?);
        }
        Ok(out)
    }

    async fn own_account(&self, scope: &PrincipalScope, id: &str) -> Result<ChannelAccountRow> {
        Self::operator(scope)?;
        uuid::Uuid::try_parse(id).map_err(|_| {
            Error::Invalid(format!(
                "invalid account id: {:?} is not a UUID",
                id.chars().take(40).collect::<String>()
            ))
        })?;
        self.inner
            .store
            .get_channel_account(id)
            .await?
            .filter(|r| r.tenant_id == scope.tenant().as_str())
            .ok_or(Error::NotFound)
    }

    pub async fn get_account(&self, scope: &PrincipalScope, id: &str) -> Result<AccountInfo> {
        let row = self.own_account(scope, id).await?;
        self.info(row).await
    }

    pub async fn delete_account(
        &self,
        scope: &PrincipalScope,
        via: &crate::store::Surface,
        id: &str,
    ) -> Result<()> {
        let row = self.own_account(scope, id).await?;
        let audit = scope.audit(
            via,
            "channel_account.removed",
            &row.id,
            serde_json::json!({"platform": row.platform, "name": row.name}),
        );
        if !self
            .inner
            .store
            .delete_channel_account(scope.tenant().as_str(), &row.id, &audit)
            .await?
        {
            return Err(Error::NotFound);
        }
        tracing::info!(tenant = %scope.tenant(), account = %row.id, by = %scope.principal(),
            "channel account deleted");
        Ok(())
    }

    pub async fn list_pairings(
        &self,
        scope: &PrincipalScope,
        id: &str,
    ) -> Result<Vec<PairingInfo>> {
        let row = self.own_account(scope, id).await?;
        let now = crate::time::now_ms();
        Ok(self
            .inner
            .store
            .channel_pairings(&row.id)
            .await?
            .into_iter()
            .filter(|p| p.expires_at > now)
            .map(|p| PairingInfo {
                platform_user: p.platform_user,
                state: p.state,
                created_at: crate::time::rfc3339(p.created_at),
                expires_at: crate::time::rfc3339(p.expires_at),
            })
            .collect())
    }

    /// A tenant operator approves the code a platform user was given.
    /// Repeated wrong codes lock approvals of the account for a while.
    pub async fn approve_pairing(
        &self,
        scope: &PrincipalScope,
        via: &crate::store::Surface,
        id: &str,
        code: &str,
    ) -> Result<PairingApproved> {
        let row = self.own_account(scope, id).await?;
        let store = &self.inner.store;
        let now = crate::time::now_ms();
        if let Some(until) = row.pairing_locked_until.filter(|u| *u > now) {
            return Err(Error::RateLimited {
                retry_after_secs: ((until - now) / 1000).max(1) as u64,
            });
        }
        let fail = || async {
            store
                .channel_pairing_failure(
                    &row.id,
                    account::PAIRING_MAX_FAILURES,
                    now + account::PAIRING_LOCK_MS,
                )
                .await
        };
        let Some(code) = account::normalize_code(code) else {
            fail().await?;
            return Err(Error::Invalid(
                "a pairing code is 8 letters and digits, as the bot gave it".into(),
            ));
        };
        let audit = scope.audit(
            via,
            "channel_pairing.approved",
            &row.id,
            serde_json::json!({"platform": row.platform}),
        );
        let Some(p) = store
            .channel_approve_pairing(&row.id, &code, scope.principal().as_str(), now, &audit)
            .await?
        else {
            fail().await?;
            return Err(Error::NotFound);
        };
        store.channel_pairing_success(&row.id).await?;
        let platform: ChannelKind = row.platform.parse().map_err(|_| Error::NotFound)?;
        let principal = account::principal_for(platform, &row.id, &p.platform_user);
        tracing::info!(account = %row.id, by = %scope.principal(), %principal, "channel user paired");
        let target = Target {
            account: &row,
            platform,
            chat: &p.chat,
            thread: None,
            handle: None,
        };
        self.reply(
            &target,
            "You are paired. Send a message to talk to the agent.",
        )
        .await?;
        Ok(PairingApproved {
            platform_user: p.platform_user,
            principal,
        })
    }

    // ------------------------------------------------------------- inbound

    /// A platform's webhook request. Verified first: anything not signed by
    /// the account's platform is refused (401) before it touches anything.
    pub async fn webhook(
        &self,
        platform: &str,
        account_id: &str,
        headers: &HeaderMap,
        body: &[u8],
    ) -> Result<WebhookReply> {
        let unverified =
            || Error::Unauthorized("the request is not signed for this channel account".into());
        let platform: ChannelKind = platform.parse().map_err(|_| Error::NotFound)?;
        let inner = &self.inner;
        let row = match uuid::Uuid::try_parse(account_id) {
            Ok(_) => inner.store.get_channel_account(account_id).await?,
            Err(_) => None,
        };
        let Some(row) = row.filter(|r| r.platform == platform.as_str()) else {
            inner.metrics.rejected(platform);
            return Err(unverified());
        };
        let creds = open_credentials(&inner.key, &row, platform)?;
        let now_s = crate::time::now_ms() / 1000;
        if let Err(e) = verify_request(&creds, headers, body, now_s) {
            inner.metrics.rejected(platform);
            tracing::info!(account = %row.id, %platform, reason = %e, "channel request refused");
            return Err(unverified());
        }
        let interaction = platform == ChannelKind::Slack
            && (body.starts_with(b"payload=")
                || header(headers, "content-type")
                    .is_some_and(|c| c.starts_with("application/x-www-form-urlencoded")));
        let inbound = match platform {
            ChannelKind::Telegram => wire::telegram(body),
            ChannelKind::Slack if interaction => wire::slack_interaction(body),
            ChannelKind::Slack => wire::slack_event(body),
            ChannelKind::Discord => wire::discord(body),
            ChannelKind::Webhook => wire::webhook(body),
        }
        .map_err(|e| Error::Invalid(e.to_string()))?;
        inner.metrics.inbound(platform);
        inner.store.channel_touch_inbound(&row.id).await?;
        let (event_id, delivery) = match inbound {
            Inbound::Challenge(c) => return Ok(WebhookReply::ok(json!({"challenge": c}))),
            Inbound::Ping => return Ok(WebhookReply::ok(json!({"type": 1}))),
            Inbound::Ignored(_) => {
                return Ok(WebhookReply::ok(match platform {
                    ChannelKind::Discord => json!({"type": 4, "data": {
                        "content": "This interaction is not something I act on.", "flags": 64}}),
                    _ => json!({}),
                }))
            }
            Inbound::Message(m) => (
                m.event_id,
                Delivery::Message {
                    user: m.user,
                    chat: m.conversation.chat,
                    thread: m.conversation.thread,
                    group: m.conversation.group,
                    text: m.text,
                    handle: m.reply_handle,
                },
            ),
            Inbound::Button {
                event_id,
                user,
                conversation,
                approval_id,
                decision,
                reply_handle,
            } => (
                event_id,
                Delivery::Button {
                    user,
                    chat: conversation.chat,
                    thread: conversation.thread,
                    approval_id,
                    decision: decision.as_str().to_owned(),
                    handle: reply_handle,
                },
            ),
        };
        let payload = serde_json::to_string(&delivery).map_err(|e| Error::Internal(e.into()))?;
        let fresh = inner
            .store
            .channel_inbox_insert(&row.id, &event_id, &payload)
            .await?;
        if !fresh {
            inner.metrics.duplicate(platform);
        }
        // Discord's buttons are answered in the response itself (the card is
        // edited by it), well within its 3-second deadline.
        if platform == ChannelKind::Discord {
            if let Delivery::Button { .. } = &delivery {
                let notice = if fresh {
                    let n = self.on_button(&row, platform, &delivery).await;
                    inner.store.channel_inbox_done(&row.id, &event_id).await?;
                    n?
                } else {
                    ButtonOutcome {
                        decided: None,
                        notice: "Already received.".into(),
                    }
                };
                return Ok(WebhookReply::ok(match notice.decided {
                    Some(text) => json!({"type": 7, "data": {"content": text, "components": []}}),
                    None => json!({"type": 4, "data": {"content": notice.notice, "flags": 64}}),
                }));
            }
        }
        if fresh {
            let this = self.clone();
            let eid = event_id.clone();
            tokio::spawn(async move { this.handle(row, platform, eid, delivery).await });
        }
        Ok(match platform {
            ChannelKind::Discord => WebhookReply::ok(json!({"type": 5})),
            ChannelKind::Webhook => WebhookReply {
                status: 202,
                body: json!({"accepted": true, "duplicate": !fresh}),
            },
            _ => WebhookReply::ok(json!({})),
        })
    }

    /// Handle one recorded delivery, then mark it done.
    async fn handle(
        &self,
        account: ChannelAccountRow,
        platform: ChannelKind,
        event_id: String,
        d: Delivery,
    ) {
        let result = match &d {
            Delivery::Message { .. } => self.on_message(&account, platform, &d).await,
            Delivery::Button { .. } => self.on_button(&account, platform, &d).await.map(|_| ()),
        };
        if let Err(e) = result {
            tracing::warn!(account = %account.id, %platform, error = %e, "channel delivery not handled");
            let _ = self
                .inner
                .store
                .channel_record_error(&account.id, &format!("inbound: {e}"))
                .await;
        }
        if let Err(e) = self
            .inner
            .store
            .channel_inbox_done(&account.id, &event_id)
            .await
        {
            tracing::warn!(error = %e, "could not mark a channel delivery done");
        }
    }

    async fn authorized(&self, account: &ChannelAccountRow, user: &str) -> Result<bool> {
        let allowed: Vec<String> = serde_json::from_str(&account.allowed_users).unwrap_or_default();
        if allowed.iter().any(|u| u == user) {
            return Ok(true);
        }
        Ok(self
            .inner
            .store
            .channel_is_member(&account.id, user)
            .await?)
    }

    /// The user's member principal (created on first use) as a scope.
    async fn scope_of(
        &self,
        account: &ChannelAccountRow,
        platform: ChannelKind,
        user: &str,
    ) -> Result<PrincipalScope> {
        let tenant = TenantId::parse(&account.tenant_id)?;
        let principal = PrincipalId::parse(&account::principal_for(platform, &account.id, user))?;
        self.inner
            .store
            .ensure_principal(&tenant, &principal, Role::Member)
            .await?;
        Ok(PrincipalScope::new(tenant, principal, Role::Member))
    }

    /// A user the account does not know: one short reply with a pairing
    /// code (or a refusal when too many are pending), then silence until it
    /// expires.
    async fn unknown_user(&self, t: &Target<'_>, user: &str) -> Result<()> {
        let store = &self.inner.store;
        let now = crate::time::now_ms();
        if let Some(p) = store.channel_pairing(&t.account.id, user).await? {
            if p.expires_at > now {
                return Ok(());
            }
        }
        let pending = store.channel_pending_pairings(&t.account.id, now).await?;
        let (state, code, text) = if pending >= account::MAX_PENDING_PAIRINGS {
            (
                "refused",
                None,
                "This bot does not know you. Ask an operator of its workspace for access."
                    .to_owned(),
            )
        } else {
            let code = account::pairing_code(random_byte);
            let text = format!(
                "This bot does not know you yet. Ask an operator of its workspace to approve pairing code {code} (valid for one hour)."
            );
            ("pending", Some(code), text)
        };
        store
            .channel_put_pairing(&PairingRow {
                account_id: t.account.id.clone(),
                platform_user: user.to_owned(),
                state: state.to_owned(),
                code,
                chat: t.chat.to_owned(),
                created_at: now,
                expires_at: now + account::PAIRING_TTL_MS,
            })
            .await?;
        self.reply(t, &text).await
    }

    async fn on_message(
        &self,
        account: &ChannelAccountRow,
        platform: ChannelKind,
        d: &Delivery,
    ) -> Result<()> {
        let Delivery::Message {
            user,
            chat,
            thread,
            group,
            text,
            handle,
        } = d
        else {
            return Ok(());
        };
        let t = Target {
            account,
            platform,
            chat,
            thread: thread.as_deref(),
            handle: handle.as_deref(),
        };
        if !self.authorized(account, user).await? {
            return self.unknown_user(&t, user).await;
        }
        let scope = self.scope_of(account, platform, user).await?;
        let key = ConversationKey {
            account_id: account.id.clone(),
            chat: chat.clone(),
            thread: thread.clone().unwrap_or_default(),
            member: if *group { user.clone() } else { String::new() },
        };
        let store = &self.inner.store;
        match commands::parse(text) {
            Some(Command::Decide {
                approval_id,
                decision,
            }) => {
                let notice = match self.decide(&scope, platform, &approval_id, decision).await {
                    Ok(n) | Err(n) => n,
                };
                return self.reply(&t, &notice).await;
            }
            Some(Command::Usage(usage)) => return self.reply(&t, usage).await,
            Some(Command::New) => {
                self.new_session(account, platform, &scope, &key).await?;
                return self.reply(&t, "Started a new session.").await;
            }
            Some(Command::Stop) => {
                let running = match store.channel_conversation(&key).await? {
                    Some(c) => store
                        .running_turn_of(&c.session_id)
                        .await?
                        .map(|tid| (c.session_id, tid)),
                    None => None,
                };
                let Some((sid, tid)) = running else {
                    return self.reply(&t, "Nothing is running.").await;
                };
                self.inner
                    .turns
                    .cancel(&scope, SessionId::parse(&sid)?, TurnId::parse(&tid)?)
                    .await?;
                // The relay posts "Stopped." from the turn's own event; a
                // Discord interaction still needs its own answer.
                if handle.is_some() {
                    return self.reply(&t, "Stopping.").await;
                }
                return Ok(());
            }
            None => {}
        }
        let conv = match store.channel_conversation(&key).await? {
            Some(c) => c,
            None => self.new_session(account, platform, &scope, &key).await?,
        };
        if let Some(h) = handle {
            store.channel_set_reply_handle(&key, h).await?;
        }
        // A pending question of this conversation: this message answers it.
        if let Some(cid) = store.pending_clarification_of(&conv.session_id).await? {
            let via = crate::store::Surface::Chat(platform.as_str().to_owned());
            return match self
                .inner
                .clarifications
                .answer(&scope, &via, &cid, text)
                .await
            {
                Ok(()) => Ok(()),
                Err(e) => {
                    self.reply(&t, &format!("Could not answer the question: {e}"))
                        .await
                }
            };
        }
        let sid = SessionId::parse(&conv.session_id)?;
        // A reply can reach the user a moment before its turn has settled:
        // give the previous turn a short while before calling it busy.
        let turns = &self.inner.turns;
        let mut started = turns
            .start_bound(&scope, sid, text.clone(), platform.as_str())
            .await;
        for _ in 0..BUSY_RETRIES {
            if !matches!(started, Err(Error::Conflict(_))) {
                break;
            }
            tokio::time::sleep(std::time::Duration::from_millis(100)).await;
            started = turns
                .start_bound(&scope, sid, text.clone(), platform.as_str())
                .await;
        }
        match started {
            Ok(_) => {
                self.inner.relays.ensure(&conv.session_id);
                Ok(())
            }
            Err(Error::Conflict(_)) => {
                self.reply(
                    &t,
                    "Still working on your previous message. Send /stop to cancel it.",
                )
                .await
            }
            Err(Error::Invalid(m)) => self.reply(&t, &m).await,
            Err(e) => Err(e),
        }
    }

    /// A new session for a conversation (first message, or `/new`).
    async fn new_session(
        &self,
        account: &ChannelAccountRow,
        platform: ChannelKind,
        scope: &PrincipalScope,
        key: &ConversationKey,
    ) -> Result<ConversationRow> {
        let inner = &self.inner;
        let core = CoreId::parse(&account.core)?;
        if !inner.cores.exists(scope.tenant(), &core) {
            if core.as_str() != "assistant" {
                return Err(Error::Invalid(format!(
                    "this bot's core {:?} no longer exists",
                    core.as_str()
                )));
            }
            let (cores, tenant) = (inner.cores.clone(), scope.tenant().clone());
            tokio::task::spawn_blocking(move || cores.ensure_seeded(&tenant))
                .await
                .map_err(|e| Error::Internal(anyhow::anyhow!("seed core: {e}")))?
                .map_err(Error::Internal)?;
        }
        let dir = crate::home::HomeLayout::new(&inner.home).workspace_dir(
            scope.tenant(),
            scope.principal(),
            "default",
        );
        crate::bootstrap::private_dir(&dir).map_err(Error::Internal)?;
        let sid = SessionId::new();
        inner
            .store
            .create_session(&NewSession {
                id: sid,
                tenant: scope.tenant().clone(),
                principal: scope.principal().clone(),
                title: format!(
                    "{platform}: {}",
                    account.name.chars().take(150).collect::<String>()
                ),
                core: core.to_string(),
                workspace: "default".into(),
                provider: inner.turns.default_provider().to_owned(),
            })
            .await?;
        inner
            .store
            .channel_bind_conversation(key, &sid.to_string(), scope.principal().as_str())
            .await?;
        inner
            .store
            .channel_conversation(key)
            .await?
            .ok_or_else(|| Error::Internal(anyhow::anyhow!("conversation vanished after binding")))
    }

    /// Decide an approval as `scope`: the notice for the chat, `Err` when
    /// nothing was decided.
    async fn decide(
        &self,
        scope: &PrincipalScope,
        platform: ChannelKind,
        approval_id: &str,
        decision: commands::Decision,
    ) -> std::result::Result<String, String> {
        let stale = || format!("There is no pending approval {approval_id} for you here.");
        let Ok(uuid) = uuid::Uuid::try_parse(approval_id) else {
            return Err(stale());
        };
        let Ok(d) = decision.as_str().parse::<crate::wire::Decision>() else {
            return Err(stale());
        };
        let id = uuid.as_hyphenated().to_string();
        let via = crate::store::Surface::Chat(platform.as_str().to_owned());
        match self.inner.approvals.decide(scope, &via, &id, d).await {
            Ok(_) => Ok(format!("{}.", decision.label())),
            Err(Error::NotFound) => Err(stale()),
            Err(Error::Conflict(m)) => Err(format!("Approval {id}: {m}.")),
            Err(Error::Forbidden(_)) => Err(
                "This approval needs a tenant operator; ask one to decide it in the console."
                    .into(),
            ),
            Err(Error::Invalid(m)) => Err(m),
            Err(e) => {
                tracing::warn!(error = %e, "could not record a chat decision");
                Err("Could not record the decision; try again.".into())
            }
        }
    }

    async fn on_button(
        &self,
        account: &ChannelAccountRow,
        platform: ChannelKind,
        d: &Delivery,
    ) -> Result<ButtonOutcome> {
        let Delivery::Button {
            user,
            chat,
            thread,
            approval_id,
            decision,
            handle,
        } = d
        else {
            return Ok(ButtonOutcome {
                decided: None,
                notice: String::new(),
            });
        };
        let decision = commands::Decision::ALL
            .into_iter()
            .find(|x| x.as_str() == decision)
            .unwrap_or(commands::Decision::Deny);
        let outcome = if !self.authorized(account, user).await? {
            Err("You are not allowed to use this bot.".to_owned())
        } else {
            let scope = self.scope_of(account, platform, user).await?;
            self.decide(&scope, platform, approval_id, decision).await
        };
        let t = Target {
            account,
            platform,
            chat,
            thread: thread.as_deref(),
            handle: None,
        };
        match platform {
            ChannelKind::Telegram => {
                // The handle is `<callback id>:<chat>:<message id>`.
                let callback_id = handle
                    .as_deref()
                    .and_then(|h| h.split(':').next())
                    .unwrap_or_default();
                let notice = match &outcome {
                    Ok(n) | Err(n) => n.clone(),
                };
                self.enqueue(
                    &t,
                    &[Item::CallbackAnswer {
                        callback_id: callback_id.to_owned(),
                        text: notice,
                    }],
                )
                .await?;
                if let Err(n) = &outcome {
                    self.reply(&t, n).await?;
                }
            }
            ChannelKind::Slack | ChannelKind::Webhook => {
                if let Err(n) = &outcome {
                    self.reply(&t, n).await?;
                }
            }
            ChannelKind::Discord => {}
        }
        Ok(match outcome {
            Ok(notice) => {
                let card = self.inner.store.channel_card(approval_id).await?;
                let first = card
                    .as_ref()
                    .and_then(|c| c.text.lines().next().map(str::to_owned))
                    .unwrap_or_else(|| format!("Approval {approval_id}"));
                ButtonOutcome {
                    decided: Some(format!("{first}\n{notice}")),
                    notice,
                }
            }
            Err(notice) => ButtonOutcome {
                decided: None,
                notice,
            },
        })
    }

    async fn enqueue(&self, t: &Target<'_>, items: &[Item]) -> Result<()> {
        let rows: Vec<NewOutbox> = items
            .iter()
            .filter_map(|it| serde_json::to_string(it).ok())
            .map(|payload| NewOutbox {
                account_id: t.account.id.clone(),
                chat: t.chat.to_owned(),
                thread: t.thread.map(str::to_owned),
                payload,
            })
            .collect();
        self.inner.store.channel_enqueue(&rows).await?;
        self.inner.outbox.wake();
        Ok(())
    }

    /// A short host reply (not from the agent) through the outbox.
    async fn reply(&self, t: &Target<'_>, text: &str) -> Result<()> {
        let original = t.platform == ChannelKind::Discord && t.handle.is_some();
        let items = items::texts(t.platform, text, t.handle, original);
        self.enqueue(t, &items).await
    }
}

/// What pressing a button came to.
struct ButtonOutcome {
    /// The card's new text when a decision was recorded.
    decided: Option<String>,
    notice: String,
}
