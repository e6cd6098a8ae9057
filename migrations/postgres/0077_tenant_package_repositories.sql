-- Package repositories a tenant's admin added, where the server operator
-- allows it (`--tenant-package-source`): a git repository pinned to a full
-- commit, whose URL the operator's prefixes admit. Synced into the
-- tenant's own folder; the operator's repositories are flags, not rows.
CREATE TABLE tenant_package_repositories (
    tenant_id   TEXT NOT NULL,
    alias       TEXT NOT NULL,
    url         TEXT NOT NULL,
    commit_sha  TEXT NOT NULL,
    added_at    BIGINT NOT NULL,
    added_by    TEXT NOT NULL,
    PRIMARY KEY (tenant_id, alias)
);
