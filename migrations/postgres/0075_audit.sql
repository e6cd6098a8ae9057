-- The audit log: one hash chain per tenant. A row records one change
-- (who, as which role, from which surface, what, to what) and is written
-- in the same transaction as the change. `hash` is SHA-256 over
-- `prev_hash` and the row's fields (see audit_chain.rs); the first row's
-- `prev_hash` is 64 zeros. `audit_heads` holds each chain's last seq and
-- hash apart, so a deleted last row is found too; appending locks it.
-- Pruning keeps the chain verifiable: the last pruned row's seq and hash
-- become a checkpoint the chain continues from.
CREATE TABLE audit_events (
    id          BIGSERIAL PRIMARY KEY,
    tenant_id   TEXT NOT NULL,
    seq         BIGINT NOT NULL,
    at          BIGINT NOT NULL,
    actor       TEXT NOT NULL,
    role        TEXT NOT NULL,
    surface     TEXT NOT NULL,
    action      TEXT NOT NULL,
    target      TEXT NOT NULL,
    detail      TEXT NOT NULL,
    prev_hash   TEXT NOT NULL,
    hash        TEXT NOT NULL
);
CREATE UNIQUE INDEX audit_events_chain ON audit_events (tenant_id, seq);
CREATE INDEX audit_events_at ON audit_events (tenant_id, at);

CREATE TABLE audit_heads (
    tenant_id   TEXT PRIMARY KEY,
    seq         BIGINT NOT NULL,
    hash        TEXT NOT NULL
);

CREATE TABLE audit_checkpoints (
    tenant_id   TEXT NOT NULL,
    seq         BIGINT NOT NULL,
    hash        TEXT NOT NULL,
    at          BIGINT NOT NULL,
    PRIMARY KEY (tenant_id, seq)
);
