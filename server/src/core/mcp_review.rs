//! The MCP security review of an evolve run, pure: which MCP declarations
//! a run adds, removes or modifies, a before/after security summary of
//! each (what it runs or reaches, which environment and header *names* it
//! sets, its policy; never a value), and the content-bound token
//! `mcp-review:<sha256>` a promote must carry. The token hashes the
//! reviewed content commit and every changed declaration's bytes before
//! and after, so a new review, a new base or any edit makes an old token
//! stale.

use serde::{Deserialize, Serialize};
use serde_json::{json, Value};
use sha2::{Digest, Sha256};

use crate::mcp::manifest::ServerManifest;

/// The token's prefix.
pub const TOKEN_PREFIX: &str = "mcp-review:";

/// One changed declaration, as read from the two trees.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Declaration {
    /// Agents-relative path, e.g. `assistant/agent/mcp/srv.yaml`.
    pub path: String,
    /// The file before (live), `None` when added.
    pub before: Option<Vec<u8>>,
    /// The file after (the run), `None` when removed.
    pub after: Option<Vec<u8>>,
}

/// One change as the review shows it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct McpChange {
    pub path: String,
    /// `added`, `removed` or `modified`.
    pub change: String,
    #[schema(value_type = Object)]
    pub before: Value,
    #[schema(value_type = Object)]
    pub after: Value,
}

/// What a promote of an MCP-changing run must be approved against.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct McpReview {
    /// Changed declaration paths, sorted.
    pub changed_paths: Vec<String>,
    pub changes: Vec<McpChange>,
    /// `mcp-review:<sha256>`, what a promote must carry as its
    /// `mcp_review_token` (named `id` here: a field named `token` is
    /// redacted from every view, and this one is a binding, not a secret).
    pub id: String,
}

/// The security summary of one declaration's bytes (never a secret value:
/// env and header values are replaced by their names).
pub fn summary(bytes: Option<&[u8]>) -> Value {
    let Some(bytes) = bytes else {
        return Value::Null;
    };
    let raw: serde_yaml_ng::Value = match serde_yaml_ng::from_slice(bytes) {
        Ok(serde_yaml_ng::Value::Null) => serde_yaml_ng::Value::Mapping(Default::default()),
        Ok(v) => v,
        Err(e) => return json!({"invalid": format!("not YAML: {e}")}),
    };
    match ServerManifest::parse(&raw) {
        Ok(m) => json!({
            "enabled": m.enabled,
            "transport": m.transport.as_str(),
            "command": m.command,
            "args": m.args,
            "cwd": m.cwd,
            "url": m.url,
            "env_names": m.env.keys().collect::<Vec<_>>(),
            "header_names": m.headers.keys().collect::<Vec<_>>(),
            "tools_include": m.tools.include,
            "tools_exclude": m.tools.exclude,
            "risk": m.risk,
            "approval_policy": m.approval_policy,
            "capability": m.capability,
        }),
        Err(e) => json!({"invalid": e}),
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// The token for `commit` and these declarations (order-independent).
pub fn token(commit: &str, declarations: &[Declaration]) -> String {
    let mut decls: Vec<&Declaration> = declarations.iter().collect();
    decls.sort_by(|a, b| a.path.cmp(&b.path));
    let mut h = Sha256::new();
    h.update(b"demiurge-mcp-review-v1\n");
    h.update(commit.trim().as_bytes());
    h.update(b"\n");
    for d in decls {
        h.update(d.path.as_bytes());
        h.update(b"\n");
        for side in [&d.before, &d.after] {
            match side {
                Some(b) => h.update(hex(&Sha256::digest(b)).as_bytes()),
                None => h.update(b"-"),
            }
            h.update(b"\n");
        }
    }
    format!("{TOKEN_PREFIX}{}", hex(&h.finalize()))
}

/// The review of these declarations; `None` when none changed (a
/// declaration whose bytes are equal on both sides is no change).
pub fn review(commit: &str, declarations: &[Declaration]) -> Option<McpReview> {
    let mut changed: Vec<Declaration> = declarations
        .iter()
        .filter(|d| d.before != d.after)
        .cloned()
        .collect();
    if changed.is_empty() {
        return None;
    }
    changed.sort_by(|a, b| a.path.cmp(&b.path));
    changed.dedup_by(|a, b| a.path == b.path);
    let changes = changed
        .iter()
        .map(|d| McpChange {
            path: d.path.clone(),
            change: match (&d.before, &d.after) {
                (None, _) => "added",
                (_, None) => "removed",
                _ => "modified",
            }
            .to_owned(),
            before: summary(d.before.as_deref()),
            after: summary(d.after.as_deref()),
        })
        .collect();
    Some(McpReview {
        changed_paths: changed.iter().map(|d| d.path.clone()).collect(),
        changes,
        id: token(commit, &changed),
    })
}

/// Whether `given` is the token `review` requires (a constant-time
/// comparison is not needed: the token is no secret, only a binding).
pub fn accepts(review: &McpReview, given: Option<&str>) -> Result<(), String> {
    match given.map(str::trim).filter(|t| !t.is_empty()) {
        None => Err(format!(
            "this run changes MCP declarations ({}); review it and promote with the \
             mcp_review_token the review returned",
            review.changed_paths.join(", ")
        )),
        Some(t) if t == review.id => Ok(()),
        Some(_) => Err(
            "the mcp_review_token does not match this run's reviewed content; it is stale \
             or wrong: review the run again"
                .into(),
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn d(path: &str, before: Option<&str>, after: Option<&str>) -> Declaration {
        Declaration {
            path: path.into(),
            before: before.map(|s| s.as_bytes().to_vec()),
            after: after.map(|s| s.as_bytes().to_vec()),
        }
    }

    #[test]
    fn no_change_needs_no_review() {
        assert!(review("c1", &[]).is_none());
        assert!(review("c1", &[d("a/agent/mcp/s.yaml", Some("x"), Some("x"))]).is_none());
    }

    #[test]
    fn changes_are_classified_and_summarised_without_values() {
        let r = review(
            "c1",
            &[
                d(
                    "a/agent/mcp/new.yaml",
                    None,
                    Some("command: srv\nenv: {TOKEN: s3cret}\nheaders: {}\n"),
                ),
                d("a/agent/mcp/old.yaml", Some("command: old\n"), None),
                d(
                    "a/agent/mcp/mod.yaml",
                    Some("command: a\n"),
                    Some("transport: streamable_http\nurl: https://x.example/mcp\nheaders: {Authorization: Bearer zz}\n"),
                ),
            ],
        )
        .unwrap();
        assert_eq!(
            r.changed_paths,
            [
                "a/agent/mcp/mod.yaml",
                "a/agent/mcp/new.yaml",
                "a/agent/mcp/old.yaml"
            ]
        );
        let kinds: Vec<&str> = r.changes.iter().map(|c| c.change.as_str()).collect();
        assert_eq!(kinds, ["modified", "added", "removed"]);
        let shown = serde_json::to_string(&r).unwrap();
        assert!(
            !shown.contains("s3cret") && !shown.contains("Bearer zz"),
            "{shown}"
        );
        assert_eq!(r.changes[1].after["env_names"], json!(["TOKEN"]));
        assert_eq!(r.changes[1].before, Value::Null);
        assert_eq!(r.changes[0].after["transport"], "streamable_http");
        assert_eq!(r.changes[0].after["header_names"], json!(["Authorization"]));
        assert_eq!(r.changes[2].after, Value::Null);
        assert!(r.id.starts_with(TOKEN_PREFIX) && r.id.len() == TOKEN_PREFIX.len() + 64);
    }

    #[test]
    fn an_invalid_declaration_is_summarised_as_invalid() {
        assert!(summary(Some(b"transport: websocket\n"))["invalid"].is_string());
        assert!(summary(Some(b": : :\n- x"))["invalid"].is_string());
        assert_eq!(
            summary(Some(b""))["invalid"],
            json!("stdio MCP server requires command")
        );
    }

    #[test]
    fn the_token_binds_commit_and_bytes() {
        let base = [d("a/m.yaml", None, Some("command: x\n"))];
        let t = token("c1", &base);
        assert_eq!(t, token("c1", &base));
        assert_ne!(t, token("c2", &base));
        assert_ne!(t, token("c1", &[d("a/m.yaml", None, Some("command: y\n"))]));
        assert_ne!(
            t,
            token("c1", &[d("a/m.yaml", Some(""), Some("command: x\n"))])
        );
        assert_ne!(t, token("c1", &[d("b/m.yaml", None, Some("command: x\n"))]));
        // Order of the list does not matter.
        let two = [d("a", None, Some("1")), d("b", Some("2"), None)];
        let rev = [d("b", Some("2"), None), d("a", None, Some("1"))];
        assert_eq!(token("c", &two), token("c", &rev));
    }

    #[test]
    fn promote_accepts_only_the_reviewed_token() {
        let r = review("c1", &[d("a/m.yaml", None, Some("command: x\n"))]).unwrap();
        assert!(accepts(&r, None).unwrap_err().contains("a/m.yaml"));
        assert!(accepts(&r, Some("  ")).is_err());
        assert!(accepts(&r, Some("mcp-review:00"))
            .unwrap_err()
            .contains("stale"));
        let other = review("c2", &[d("a/m.yaml", None, Some("command: x\n"))]).unwrap();
        assert!(accepts(&r, Some(&other.id)).is_err());
        assert!(accepts(&r, Some(&r.id)).is_ok());
        assert!(accepts(&r, Some(&format!(" {} ", r.id))).is_ok());
    }
}
