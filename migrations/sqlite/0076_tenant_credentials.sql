-- Credentials a tenant's admin stored for its packages' tools (a web search
-- provider's API key, say), by name (`<package>.<option>`). `sealed` is
-- base64(nonce || XChaCha20-Poly1305 ciphertext) under the server's
-- `keys/sealing.key`, bound to (tenant, name); the value is never stored
-- or returned in clear, and reaches only the outgoing request that names it.
CREATE TABLE tenant_credentials (
    tenant_id   TEXT NOT NULL,
    name        TEXT NOT NULL,
    sealed      TEXT NOT NULL,
    updated_at  BIGINT NOT NULL,
    updated_by  TEXT NOT NULL,
    PRIMARY KEY (tenant_id, name)
);
