-- Model provider keys a tenant's admin configured for the tenant's turns.
-- `sealed` is base64(nonce || ChaCha20-Poly1305 ciphertext) under the server's
-- `keys/credentials.key`, bound to (tenant, provider); the key is never stored
-- or returned in clear.
CREATE TABLE tenant_provider_keys (
    tenant_id   TEXT NOT NULL,
    provider    TEXT NOT NULL,
    sealed      TEXT NOT NULL,
    updated_at  BIGINT NOT NULL,
    updated_by  TEXT NOT NULL,
    PRIMARY KEY (tenant_id, provider)
);
