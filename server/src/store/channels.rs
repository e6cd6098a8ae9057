//! Chat channels: accounts, the inbox, conversations, pairing, members, the
//! outbox and approval cards (see `crate::channels`). Credentials arrive
//! here sealed and leave sealed; this file never sees them in clear.

use sqlx::any::AnyRow;
use sqlx::{AssertSqlSafe, Row};

use super::Store;
use crate::time::now_ms;

#[derive(Debug, Clone)]
pub struct ChannelAccountRow {
    pub id: String,
    pub tenant_id: String,
    pub platform: String,
    pub name: String,
    /// Sealed (`crate::channels::crypto`).
    pub credentials: String,
    pub api_base_url: Option<String>,
    /// JSON array of platform user ids.
    pub allowed_users: String,
    pub core: String,
    pub created_by: String,
    pub created_at: i64,
    pub last_inbound_at: Option<i64>,
    pub last_delivery_at: Option<i64>,
    pub last_error: Option<String>,
    pub last_error_at: Option<i64>,
    pub pairing_failures: i64,
    pub pairing_locked_until: Option<i64>,
}

const ACCOUNT_COLUMNS: &str = "id, tenant_id, platform, name, credentials, api_base_url, \
    allowed_users, core, created_by, created_at, last_inbound_at, last_delivery_at, last_error, \
    last_error_at, pairing_failures, pairing_locked_until";

fn account(r: &AnyRow) -> Result<ChannelAccountRow, sqlx::Error> {
    Ok(ChannelAccountRow {
        id: r.try_get("id")?,
        tenant_id: r.try_get("tenant_id")?,
        platform: r.try_get("platform")?,
        name: r.try_get("name")?,
        credentials: r.try_get("credentials")?,
        api_base_url: r.try_get("api_base_url")?,
        allowed_users: r.try_get("allowed_users")?,
        core: r.try_get("core")?,
        created_by: r.try_get("created_by")?,
        created_at: r.try_get("created_at")?,
        last_inbound_at: r.try_get("last_inbound_at")?,
        last_delivery_at: r.try_get("last_delivery_at")?,
        last_error: r.try_get("last_error")?,
        last_error_at: r.try_get("last_error_at")?,
        pairing_failures: r.try_get("pairing_failures")?,
        pairing_locked_until: r.try_get("pairing_locked_until")?,
    })
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConversationKey {
    pub account_id: String,
    pub chat: String,
    /// `""` when the platform has no thread here.
    pub thread: String,
    /// The platform user in group chats, `""` in direct chats.
    pub member: String,
}

#[derive(Debug, Clone)]
pub struct ConversationRow {
    pub key: ConversationKey,
    pub session_id: String,
    pub principal_id: String,
    pub relayed_seq: i64,
    pub reply_handle: Option<String>,
    pub handle_at: Option<i64>,
}

const CONVERSATION_COLUMNS: &str = "account_id, chat, thread, member, session_id, principal_id, \
    relayed_seq, reply_handle, handle_at";

fn conversation(r: &AnyRow) -> Result<ConversationRow, sqlx::Error> {
    Ok(ConversationRow {
        key: ConversationKey {
            account_id: r.try_get("account_id")?,
            chat: r.try_get("chat")?,
            thread: r.try_get("thread")?,
            member: r.try_get("member")?,
        },
        session_id: r.try_get("session_id")?,
        principal_id: r.try_get("principal_id")?,
        relayed_seq: r.try_get("relayed_seq")?,
        reply_handle: r.try_get("reply_handle")?,
        handle_at: r.try_get("handle_at")?,
    })
}

/// One message (or edit) waiting to reach a platform.
#[derive(Debug, Clone)]
pub struct OutboxRow {
    pub id: i64,
    pub account_id: String,
    pub chat: String,
    pub thread: Option<String>,
    /// `crate::channels::outbox::Item` as JSON.
    pub payload: String,
    pub attempts: i64,
}

#[derive(Debug, Clone)]
pub struct NewOutbox {
    pub account_id: String,
    pub chat: String,
    pub thread: Option<String>,
    pub payload: String,
}

#[derive(Debug, Clone)]
pub struct PairingRow {
    pub account_id: String,
    pub platform_user: String,
    pub state: String,
    pub code: Option<String>,
    pub chat: String,
    pub created_at: i64,
    pub expires_at: i64,
}

fn pairing(r: &AnyRow) -> Result<PairingRow, sqlx::Error> {
    Ok(PairingRow {
        account_id: r.try_get("account_id")?,
        platform_user: r.try_get("platform_user")?,
        state: r.try_get("state")?,
        code: r.try_get("code")?,
        chat: r.try_get("chat")?,
        created_at: r.try_get("created_at")?,
        expires_at: r.try_get("expires_at")?,
    })
}

#[derive(Debug, Clone)]
pub struct CardRow {
    pub approval_id: String,
    pub account_id: String,
    pub chat: String,
    pub message_ref: String,
    pub text: String,
}

async fn insert_outbox<'e, E>(exec: E, o: &NewOutbox, now: i64) -> Result<(), sqlx::Error>
where
    E: sqlx::Executor<'e, Database = sqlx::Any>,
{
    sqlx::query(
        "INSERT INTO channel_outbox (account_id, chat, thread, payload, state, attempts, next_at, \
         lease_until, created_at) VALUES ($1, $2, $3, $4, 'pending', 0, $5, 0, $6)",
    )
    .bind(&o.account_id)
    .bind(&o.chat)
    .bind(&o.thread)
    .bind(&o.payload)
    .bind(now)
    .bind(now)
    .execute(exec)
    .await?;
    Ok(())
}

impl Store {
    // ------------------------------------------------------------ accounts

    /// Add an account, with its audit record.
    pub async fn insert_channel_account(
        &self,
        a: &ChannelAccountRow,
        audit: &super::NewAudit,
    ) -> Result<(), sqlx::Error> {
        let _gate = self.write_gate().await;
        let mut tx = self.pool().begin().await?;
        sqlx::query(
            "INSERT INTO channel_accounts (id, tenant_id, platform, name, credentials, api_base_url, \
             allowed_users, core, created_by, created_at, pairing_failures) \
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, 0)",
        )
        .bind(&a.id)
        .bind(&a.tenant_id)
        .bind(&a.platform)
        .bind(&a.name)
        .bind(&a.credentials)
        .bind(&a.api_base_url)
        .bind(&a.allowed_users)
        .bind(&a.core)
        .bind(&a.created_by)
        .bind(a.created_at)
        .execute(&mut *tx)
        .await?;
        super::audit::append_in(self.backend(), &mut tx, audit).await?;
        tx.commit().await
    }

    pub async fn list_channel_accounts(
        &self,
        tenant: &str,
    ) -> Result<Vec<ChannelAccountRow>, sqlx::Error> {
        let rows = sqlx::query(AssertSqlSafe(format!(
            "SELECT {ACCOUNT_COLUMNS} FROM channel_accounts WHERE tenant_id = $1 ORDER BY id"
        )))
        .bind(tenant)
        .fetch_all(self.pool())
        .await?;
        rows.iter().map(account).collect()
    }

    /// An account by id alone: webhooks name it, and their signature proves them.
    pub async fn get_channel_account(
        &self,
        id: &str,
    ) -> Result<Option<ChannelAccountRow>, sqlx::Error> {
        let row = sqlx::query(AssertSqlSafe(format!(
            "SELECT {ACCOUNT_COLUMNS} FROM channel_accounts WHERE id = $1"
        )))
        .bind(id)
        .fetch_optional(self.pool())
        .await?;
        row.as_ref().map(account).transpose()
    }

    /// Delete an account of `tenant` and everything hanging off it.
    /// Delete an account and everything of it, with its audit record.
    pub async fn delete_channel_account(
        &self,
        tenant: &str,
        id: &str,
        audit: &super::NewAudit,
    ) -> Result<bool, sqlx::Error> {
        let _gate = self.write_gate().await;
        let mut tx = self.pool().begin().await?;
        let res = sqlx::query("DELETE FROM channel_accounts WHERE tenant_id = $1 AND id = $2")
            .bind(tenant)
            .bind(id)
            .execute(&mut *tx)
            .await?;
        if res.rows_affected() == 0 {
            tx.rollback().await?;
            return Ok(false);
        }
        for table in [
            "channel_inbox",
            "channel_conversations",
            "channel_members",
            "channel_pairings",
            "channel_outbox",
            "channel_cards",
        ] {
            sqlx::query(AssertSqlSafe(format!(
                "DELETE FROM {table} WHERE account_id = $1"
            )))
            .bind(id)
            .execute(&mut *tx)
            .await?;
        }
        super::audit::append_in(self.backend(), &mut tx, audit).await?;
        tx.commit().await?;
        Ok(true)
    }

    pub async fn channel_touch_inbound(&self, id: &str) -> Result<(), sqlx::Error> {
        let _gate = self.write_gate().await;
        sqlx::query("UPDATE channel_accounts SET last_inbound_at = $1 WHERE id = $2")
            .bind(now_ms())
            .bind(id)
            .execute(self.pool())
            .await?;
        Ok(())
    }

    pub async fn channel_touch_delivery(&self, id: &str) -> Result<(), sqlx::Error> {
        let _gate = self.write_gate().await;
        sqlx::query("UPDATE channel_accounts SET last_delivery_at = $1 WHERE id = $2")
            .bind(now_ms())
            .bind(id)
            .execute(self.pool())
            .await?;
        Ok(())
    }

    /// Record the account's latest error (already free of secrets).
    pub async fn channel_record_error(&self, id: &str, error: &str) -> Result<(), sqlx::Error> {
        let _gate = self.write_gate().await;
        sqlx::query(
            "UPDATE channel_accounts SET last_error = $1, last_error_at = $2 WHERE id = $3",
        )
        .bind(error)
        .bind(now_ms())
        .bind(id)
        .execute(self.pool())
        .await?;
        Ok(())
    }

    /// Count a failed pairing approval; lock approvals once `max` is reached.
    pub async fn channel_pairing_failure(
        &self,
        id: &str,
        max: i64,
        lock_until: i64,
    ) -> Result<(), sqlx::Error> {
        let _gate = self.write_gate().await;
        sqlx::query(
            "UPDATE channel_accounts SET pairing_failures = pairing_failures + 1, \
             pairing_locked_until = CASE WHEN pairing_failures + 1 >= $1 THEN $2 \
             ELSE pairing_locked_until END WHERE id = $3",
        )
        .bind(max)
        .bind(lock_until)
        .bind(id)
        .execute(self.pool())
        .await?;
        sqlx::query(
            "UPDATE channel_accounts SET pairing_failures = 0 WHERE id = $1 AND pairing_failures >= $2",
        )
        .bind(id)
        .bind(max)
        .execute(self.pool())
        .await?;
        Ok(())
    }

    pub async fn channel_pairing_success(&self, id: &str) -> Result<(), sqlx::Error> {
        let _gate = self.write_gate().await;
        sqlx::query("UPDATE channel_accounts SET pairing_failures = 0 WHERE id = $1")
            .bind(id)
            .execute(self.pool())
            .await?;
        Ok(())
    }

    // --------------------------------------------------------------- inbox

    /// Record a delivery. False when this event id was already received
    /// (a platform retry or a duplicate): the caller does nothing more.
    pub async fn channel_inbox_insert(
        &self,
        account: &str,
        event_id: &str,
        payload: &str,
    ) -> Result<bool, sqlx::Error> {
        let _gate = self.write_gate().await;
        let res = sqlx::query(
            "INSERT INTO channel_inbox (account_id, event_id, state, payload, received_at) \
             VALUES ($1, $2, 'pending', $3, $4) ON CONFLICT (account_id, event_id) DO NOTHING",
        )
        .bind(account)
        .bind(event_id)
        .bind(payload)
        .bind(now_ms())
        .execute(self.pool())
        .await?;
        Ok(res.rows_affected() == 1)
    }

    pub async fn channel_inbox_done(
        &self,
        account: &str,
        event_id: &str,
    ) -> Result<(), sqlx::Error> {
        let _gate = self.write_gate().await;
        sqlx::query(
            "UPDATE channel_inbox SET state = 'done', payload = '' WHERE account_id = $1 AND event_id = $2",
        )
        .bind(account)
        .bind(event_id)
        .execute(self.pool())
        .await?;
        Ok(())
    }

    /// Deliveries received but not handled (the server stopped in between).
    pub async fn channel_inbox_pending(
        &self,
        limit: u32,
    ) -> Result<Vec<(String, String, String)>, sqlx::Error> {
        let rows = sqlx::query(
            "SELECT account_id, event_id, payload FROM channel_inbox WHERE state = 'pending' \
             ORDER BY received_at LIMIT $1",
        )
        .bind(i64::from(limit))
        .fetch_all(self.pool())
        .await?;
        rows.iter()
            .map(|r| Ok((r.try_get(0)?, r.try_get(1)?, r.try_get(2)?)))
            .collect()
    }

    // ------------------------------------------------------- conversations

    pub async fn channel_conversation(
        &self,
        key: &ConversationKey,
    ) -> Result<Option<ConversationRow>, sqlx::Error> {
        let row = sqlx::query(AssertSqlSafe(format!(
            "SELECT {CONVERSATION_COLUMNS} FROM channel_conversations \
             WHERE account_id = $1 AND chat = $2 AND thread = $3 AND member = $4"
        )))
        .bind(&key.account_id)
        .bind(&key.chat)
        .bind(&key.thread)
        .bind(&key.member)
        .fetch_optional(self.pool())
        .await?;
        row.as_ref().map(conversation).transpose()
    }

    /// Bind a conversation to a (new) session; `/new` replaces the binding.
    pub async fn channel_bind_conversation(
        &self,
        key: &ConversationKey,
        session_id: &str,
        principal_id: &str,
    ) -> Result<(), sqlx::Error> {
        let _gate = self.write_gate().await;
        sqlx::query(
            "INSERT INTO channel_conversations (account_id, chat, thread, member, session_id, \
             principal_id, relayed_seq, created_at) VALUES ($1, $2, $3, $4, $5, $6, 0, $7) \
             ON CONFLICT (account_id, chat, thread, member) DO UPDATE SET \
             session_id = excluded.session_id, principal_id = excluded.principal_id, \
             relayed_seq = 0, reply_handle = NULL, handle_at = NULL",
        )
        .bind(&key.account_id)
        .bind(&key.chat)
        .bind(&key.thread)
        .bind(&key.member)
        .bind(session_id)
        .bind(principal_id)
        .bind(now_ms())
        .execute(self.pool())
        .await?;
        Ok(())
    }

    /// Remember the platform handle replies of the next turn use (Discord's
    /// interaction token).
    pub async fn channel_set_reply_handle(
        &self,
        key: &ConversationKey,
        handle: &str,
    ) -> Result<(), sqlx::Error> {
        let _gate = self.write_gate().await;
        sqlx::query(
            "UPDATE channel_conversations SET reply_handle = $1, handle_at = $2 \
             WHERE account_id = $3 AND chat = $4 AND thread = $5 AND member = $6",
        )
        .bind(handle)
        .bind(now_ms())
        .bind(&key.account_id)
        .bind(&key.chat)
        .bind(&key.thread)
        .bind(&key.member)
        .execute(self.pool())
        .await?;
        Ok(())
    }

    pub async fn channel_conversation_of_session(
        &self,
        session_id: &str,
    ) -> Result<Option<ConversationRow>, sqlx::Error> {
        let row = sqlx::query(AssertSqlSafe(format!(
            "SELECT {CONVERSATION_COLUMNS} FROM channel_conversations WHERE session_id = $1"
        )))
        .bind(session_id)
        .fetch_optional(self.pool())
        .await?;
        row.as_ref().map(conversation).transpose()
    }

    /// Sessions whose events were not all relayed yet (after a restart).
    pub async fn channel_sessions_behind(&self) -> Result<Vec<String>, sqlx::Error> {
        let rows = sqlx::query(
            "SELECT c.session_id FROM channel_conversations c JOIN sessions s ON s.id = c.session_id \
             WHERE c.relayed_seq < s.last_seq",
        )
        .fetch_all(self.pool())
        .await?;
        rows.iter().map(|r| r.try_get(0)).collect()
    }

    /// Turn one event into outbox rows and move the relay cursor, atomically:
    /// a restart relays each event exactly once. False when the cursor had
    /// moved already (another relay got there first; nothing is written).
    pub async fn channel_relay(
        &self,
        session_id: &str,
        from_seq: i64,
        to_seq: i64,
        rows: &[NewOutbox],
    ) -> Result<bool, sqlx::Error> {
        let _gate = self.write_gate().await;
        let mut tx = self.pool().begin().await?;
        let res = sqlx::query(
            "UPDATE channel_conversations SET relayed_seq = $1 WHERE session_id = $2 AND relayed_seq = $3",
        )
        .bind(to_seq)
        .bind(session_id)
        .bind(from_seq)
        .execute(&mut *tx)
        .await?;
        if res.rows_affected() == 0 {
            tx.rollback().await?;
            return Ok(false);
        }
        let now = now_ms();
        for o in rows {
            insert_outbox(&mut *tx, o, now).await?;
        }
        tx.commit().await?;
        Ok(true)
    }

    // --------------------------------------------------- members, pairing

    pub async fn channel_is_member(&self, account: &str, user: &str) -> Result<bool, sqlx::Error> {
        let row = sqlx::query(
            "SELECT 1 FROM channel_members WHERE account_id = $1 AND platform_user = $2",
        )
        .bind(account)
        .bind(user)
        .fetch_optional(self.pool())
        .await?;
        Ok(row.is_some())
    }

    pub async fn channel_pairing(
        &self,
        account: &str,
        user: &str,
    ) -> Result<Option<PairingRow>, sqlx::Error> {
        let row = sqlx::query(
            "SELECT account_id, platform_user, state, code, chat, created_at, expires_at \
             FROM channel_pairings WHERE account_id = $1 AND platform_user = $2",
        )
        .bind(account)
        .bind(user)
        .fetch_optional(self.pool())
        .await?;
        row.as_ref().map(pairing).transpose()
    }

    pub async fn channel_pairings(&self, account: &str) -> Result<Vec<PairingRow>, sqlx::Error> {
        let rows = sqlx::query(
            "SELECT account_id, platform_user, state, code, chat, created_at, expires_at \
             FROM channel_pairings WHERE account_id = $1 ORDER BY created_at",
        )
        .bind(account)
        .fetch_all(self.pool())
        .await?;
        rows.iter().map(pairing).collect()
    }

    /// Pending, unexpired pairings of an account.
    pub async fn channel_pending_pairings(
        &self,
        account: &str,
        now: i64,
    ) -> Result<i64, sqlx::Error> {
        let row = sqlx::query(
            "SELECT COUNT(*) FROM channel_pairings WHERE account_id = $1 AND state = 'pending' \
             AND expires_at > $2",
        )
        .bind(account)
        .bind(now)
        .fetch_one(self.pool())
        .await?;
        row.try_get(0)
    }

    pub async fn channel_put_pairing(&self, p: &PairingRow) -> Result<(), sqlx::Error> {
        let _gate = self.write_gate().await;
        sqlx::query(
            "INSERT INTO channel_pairings (account_id, platform_user, state, code, chat, created_at, \
             expires_at) VALUES ($1, $2, $3, $4, $5, $6, $7) ON CONFLICT (account_id, platform_user) \
             DO UPDATE SET state = excluded.state, code = excluded.code, chat = excluded.chat, \
             created_at = excluded.created_at, expires_at = excluded.expires_at",
        )
        .bind(&p.account_id)
        .bind(&p.platform_user)
        .bind(&p.state)
        .bind(&p.code)
        .bind(&p.chat)
        .bind(p.created_at)
        .bind(p.expires_at)
        .execute(self.pool())
        .await?;
        Ok(())
    }

    /// Approve the pending, unexpired pairing with `code`: the user becomes a
    /// member. Returns the pairing, or `None` when no such code is pending.
    /// Approve the pending pairing with `code`: its user becomes a member.
    /// `audit` commits with it, naming the user it let in.
    pub async fn channel_approve_pairing(
        &self,
        account: &str,
        code: &str,
        approved_by: &str,
        now: i64,
        audit: &super::NewAudit,
    ) -> Result<Option<PairingRow>, sqlx::Error> {
        let _gate = self.write_gate().await;
        let mut tx = self.pool().begin().await?;
        let row = sqlx::query(
            "SELECT account_id, platform_user, state, code, chat, created_at, expires_at \
             FROM channel_pairings WHERE account_id = $1 AND code = $2 AND state = 'pending' \
             AND expires_at > $3",
        )
        .bind(account)
        .bind(code)
        .bind(now)
        .fetch_optional(&mut *tx)
        .await?;
        let Some(p) = row.as_ref().map(pairing).transpose()? else {
            tx.rollback().await?;
            return Ok(None);
        };
        sqlx::query("DELETE FROM channel_pairings WHERE account_id = $1 AND platform_user = $2")
            .bind(account)
            .bind(&p.platform_user)
            .execute(&mut *tx)
            .await?;
        sqlx::query(
            "INSERT INTO channel_members (account_id, platform_user, approved_by, created_at) \
             VALUES ($1, $2, $3, $4) ON CONFLICT (account_id, platform_user) DO NOTHING",
        )
        .bind(account)
        .bind(&p.platform_user)
        .bind(approved_by)
        .bind(now)
        .execute(&mut *tx)
        .await?;
        let mut audit = audit.clone();
        audit.detail["platform_user"] = p.platform_user.clone().into();
        super::audit::append_in(self.backend(), &mut tx, &audit).await?;
        tx.commit().await?;
        Ok(Some(p))
    }

    // -------------------------------------------------------------- outbox

    pub async fn channel_enqueue(&self, rows: &[NewOutbox]) -> Result<(), sqlx::Error> {
        let _gate = self.write_gate().await;
        let mut tx = self.pool().begin().await?;
        let now = now_ms();
        for o in rows {
            insert_outbox(&mut *tx, o, now).await?;
        }
        tx.commit().await?;
        Ok(())
    }

    /// Pending rows due by `now`, oldest first.
    pub async fn channel_outbox_due(
        &self,
        now: i64,
        limit: u32,
    ) -> Result<Vec<OutboxRow>, sqlx::Error> {
        let rows = sqlx::query(
            "SELECT id, account_id, chat, thread, payload, attempts FROM channel_outbox \
             WHERE state = 'pending' AND next_at <= $1 AND lease_until <= $1 ORDER BY id LIMIT $2",
        )
        .bind(now)
        .bind(i64::from(limit))
        .fetch_all(self.pool())
        .await?;
        rows.iter()
            .map(|r| {
                Ok(OutboxRow {
                    id: r.try_get(0)?,
                    account_id: r.try_get(1)?,
                    chat: r.try_get(2)?,
                    thread: r.try_get(3)?,
                    payload: r.try_get(4)?,
                    attempts: r.try_get(5)?,
                })
            })
            .collect()
    }

    /// Earlier undelivered rows of the same chat (delivery keeps order).
    pub async fn channel_outbox_blocked(
        &self,
        account: &str,
        chat: &str,
        id: i64,
    ) -> Result<bool, sqlx::Error> {
        let row = sqlx::query(
            "SELECT 1 FROM channel_outbox WHERE account_id = $1 AND chat = $2 AND id < $3 \
             AND state = 'pending' LIMIT 1",
        )
        .bind(account)
        .bind(chat)
        .bind(id)
        .fetch_optional(self.pool())
        .await?;
        Ok(row.is_some())
    }

    /// Take a row for delivery until `lease_until` (one sender across nodes).
    pub async fn channel_outbox_claim(
        &self,
        id: i64,
        now: i64,
        lease_until: i64,
    ) -> Result<bool, sqlx::Error> {
        let _gate = self.write_gate().await;
        let res = sqlx::query(
            "UPDATE channel_outbox SET lease_until = $1, attempts = attempts + 1 \
             WHERE id = $2 AND state = 'pending' AND lease_until <= $3",
        )
        .bind(lease_until)
        .bind(id)
        .bind(now)
        .execute(self.pool())
        .await?;
        Ok(res.rows_affected() == 1)
    }

    pub async fn channel_outbox_sent(&self, id: i64) -> Result<(), sqlx::Error> {
        let _gate = self.write_gate().await;
        sqlx::query(
            "UPDATE channel_outbox SET state = 'sent', sent_at = $1, lease_until = 0, last_error = NULL \
             WHERE id = $2",
        )
        .bind(now_ms())
        .bind(id)
        .execute(self.pool())
        .await?;
        Ok(())
    }

    pub async fn channel_outbox_retry(
        &self,
        id: i64,
        next_at: i64,
        error: &str,
    ) -> Result<(), sqlx::Error> {
        let _gate = self.write_gate().await;
        sqlx::query(
            "UPDATE channel_outbox SET next_at = $1, lease_until = 0, last_error = $2 WHERE id = $3",
        )
        .bind(next_at)
        .bind(error)
        .bind(id)
        .execute(self.pool())
        .await?;
        Ok(())
    }

    pub async fn channel_outbox_failed(&self, id: i64, error: &str) -> Result<(), sqlx::Error> {
        let _gate = self.write_gate().await;
        sqlx::query(
            "UPDATE channel_outbox SET state = 'failed', lease_until = 0, last_error = $1 WHERE id = $2",
        )
        .bind(error)
        .bind(id)
        .execute(self.pool())
        .await?;
        Ok(())
    }

    /// Rows waiting per account (status and metrics).
    pub async fn channel_outbox_pending(&self, account: &str) -> Result<i64, sqlx::Error> {
        let row = sqlx::query(
            "SELECT COUNT(*) FROM channel_outbox WHERE account_id = $1 AND state = 'pending'",
        )
        .bind(account)
        .fetch_one(self.pool())
        .await?;
        row.try_get(0)
    }

    // --------------------------------------------------------------- cards

    pub async fn channel_put_card(&self, c: &CardRow) -> Result<(), sqlx::Error> {
        let _gate = self.write_gate().await;
        sqlx::query(
            "INSERT INTO channel_cards (approval_id, account_id, chat, message_ref, text) \
             VALUES ($1, $2, $3, $4, $5) ON CONFLICT (approval_id) DO NOTHING",
        )
        .bind(&c.approval_id)
        .bind(&c.account_id)
        .bind(&c.chat)
        .bind(&c.message_ref)
        .bind(&c.text)
        .execute(self.pool())
        .await?;
        Ok(())
    }

    pub async fn channel_card(&self, approval_id: &str) -> Result<Option<CardRow>, sqlx::Error> {
        let row = sqlx::query(
            "SELECT approval_id, account_id, chat, message_ref, text FROM channel_cards \
             WHERE approval_id = $1",
        )
        .bind(approval_id)
        .fetch_optional(self.pool())
        .await?;
        row.map(|r| {
            Ok(CardRow {
                approval_id: r.try_get(0)?,
                account_id: r.try_get(1)?,
                chat: r.try_get(2)?,
                message_ref: r.try_get(3)?,
                text: r.try_get(4)?,
            })
        })
        .transpose()
    }

    // ------------------------------------------------ turn-side questions

    /// The running turn of a session, if any.
    pub async fn running_turn_of(&self, session_id: &str) -> Result<Option<String>, sqlx::Error> {
        let row = sqlx::query("SELECT id FROM turns WHERE session_id = $1 AND status = $2")
            .bind(session_id)
            .bind(crate::wire::TurnStatus::Running.as_str())
            .fetch_optional(self.pool())
            .await?;
        row.map(|r| r.try_get(0)).transpose()
    }

    /// The oldest pending clarification of a session, if any.
    pub async fn pending_clarification_of(
        &self,
        session_id: &str,
    ) -> Result<Option<String>, sqlx::Error> {
        let row = sqlx::query(
            "SELECT id FROM clarifications WHERE session_id = $1 AND state = $2 \
             ORDER BY created_at LIMIT 1",
        )
        .bind(session_id)
        .bind(crate::wire::ClarificationState::Pending.as_str())
        .fetch_optional(self.pool())
        .await?;
        row.map(|r| r.try_get(0)).transpose()
    }
}
