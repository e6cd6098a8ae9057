//! Sessions: owner-scoped reads, cursor pagination on the time-ordered id.

use sqlx::any::AnyRow;
use sqlx::{AssertSqlSafe, Row};

use super::Store;
use crate::ids::{PrincipalId, SessionId, TenantId};
use crate::time::now_ms;

#[derive(Debug, Clone)]
pub struct NewSession {
    pub id: SessionId,
    pub tenant: TenantId,
    pub principal: PrincipalId,
    pub title: String,
    pub core: String,
    pub workspace: String,
    pub provider: String,
}

#[derive(Debug, Clone, serde::Serialize)]
pub struct SessionRow {
    pub id: SessionId,
    pub tenant_id: String,
    pub principal_id: String,
    pub title: String,
    pub core: String,
    pub workspace: String,
    pub provider: String,
    pub created_at: i64,
    pub updated_at: i64,
    pub last_seq: i64,
}

/// Most sessions kept in the hot-path cache.
const SESSION_CACHE_MAX: usize = 65_536;

const COLUMNS: &str =
    "id, tenant_id, principal_id, title, core, workspace, provider, created_at, updated_at, last_seq";

fn decode(r: &AnyRow) -> Result<SessionRow, sqlx::Error> {
    Ok(SessionRow {
        id: super::id(r, "id")?,
        tenant_id: r.try_get("tenant_id")?,
        principal_id: r.try_get("principal_id")?,
        title: r.try_get("title")?,
        core: r.try_get("core")?,
        workspace: r.try_get("workspace")?,
        provider: r.try_get("provider")?,
        created_at: r.try_get("created_at")?,
        updated_at: r.try_get("updated_at")?,
        last_seq: r.try_get("last_seq")?,
    })
}

impl Store {
    pub async fn create_session(&self, s: &NewSession) -> Result<SessionRow, sqlx::Error> {
        let _gate = self.write_gate().await;
        let now = now_ms();
        sqlx::query(
            "INSERT INTO sessions (id, tenant_id, principal_id, title, core, workspace, provider, \
             created_at, updated_at, last_seq) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, 0)",
        )
        .bind(s.id.to_string())
        .bind(s.tenant.as_str())
        .bind(s.principal.as_str())
        .bind(&s.title)
        .bind(&s.core)
        .bind(&s.workspace)
        .bind(&s.provider)
        .bind(now)
        .bind(now)
        .execute(self.pool())
        .await?;
        let row = SessionRow {
            id: s.id,
            tenant_id: s.tenant.to_string(),
            principal_id: s.principal.to_string(),
            title: s.title.clone(),
            core: s.core.clone(),
            workspace: s.workspace.clone(),
            provider: s.provider.clone(),
            created_at: now,
            updated_at: now,
            last_seq: 0,
        };
        self.cache_session(s.id, &row);
        Ok(row)
    }

    fn cache_session(&self, id: SessionId, row: &SessionRow) {
        let mut cache = self.session_cache.lock().unwrap_or_else(|p| p.into_inner());
        if cache.len() >= SESSION_CACHE_MAX {
            cache.clear(); // Crude but bounded; misses only cost one query.
        }
        cache.insert(id, row.clone());
    }

    /// Like [`Store::get_session`], but may answer from memory: the owner and
    /// identity fields are exact; `last_seq`, `title` and `updated_at` may be stale.
    pub async fn get_session_cached(
        &self,
        tenant: &TenantId,
        principal: &PrincipalId,
        id: SessionId,
    ) -> Result<Option<SessionRow>, sqlx::Error> {
        let hit = {
            let cache = self.session_cache.lock().unwrap_or_else(|p| p.into_inner());
            cache.get(&id).cloned()
        };
        let row = match hit {
            Some(r) => Some(r),
            None => {
                let r = self.get_session(tenant, principal, id).await?;
                if let Some(r) = &r {
                    self.cache_session(id, r);
                }
                r
            }
        };
        Ok(row.filter(|r| r.tenant_id == tenant.as_str() && r.principal_id == principal.as_str()))
    }

    /// The session if it exists *and* belongs to this principal of this tenant.
    pub async fn get_session(
        &self,
        tenant: &TenantId,
        principal: &PrincipalId,
        id: SessionId,
    ) -> Result<Option<SessionRow>, sqlx::Error> {
        let sql = format!(
            "SELECT {COLUMNS} FROM sessions WHERE id = $1 AND tenant_id = $2 AND principal_id = $3"
        );
        sqlx::query(AssertSqlSafe(sql))
            .bind(id.to_string())
            .bind(tenant.as_str())
            .bind(principal.as_str())
            .fetch_optional(self.pool())
            .await?
            .as_ref()
            .map(decode)
            .transpose()
    }

    /// Newest first; `before` is the id of the last row of the previous page.
    pub async fn list_sessions(
        &self,
        tenant: &TenantId,
        principal: &PrincipalId,
        before: Option<SessionId>,
        limit: u32,
    ) -> Result<Vec<SessionRow>, sqlx::Error> {
        let rows = match before {
            Some(cursor) => {
                let sql = format!(
                    "SELECT {COLUMNS} FROM sessions WHERE tenant_id = $1 AND principal_id = $2 \
                     AND id < $3 ORDER BY id DESC LIMIT $4"
                );
                sqlx::query(AssertSqlSafe(sql))
                    .bind(tenant.as_str())
                    .bind(principal.as_str())
                    .bind(cursor.to_string())
                    .bind(i64::from(limit))
                    .fetch_all(self.pool())
                    .await?
            }
            None => {
                let sql = format!(
                    "SELECT {COLUMNS} FROM sessions WHERE tenant_id = $1 AND principal_id = $2 \
                     ORDER BY id DESC LIMIT $3"
                );
                sqlx::query(AssertSqlSafe(sql))
                    .bind(tenant.as_str())
                    .bind(principal.as_str())
                    .bind(i64::from(limit))
                    .fetch_all(self.pool())
                    .await?
            }
        };
        rows.iter().map(decode).collect()
    }
}
