-- The durable task queue: tasks are queued, claimed by a bounded worker pool
-- under per-tenant and per-principal caps, and held with a lease their
-- instance renews; an expired lease is taken over (the task becomes `lost`).
-- status: queued | running | succeeded | failed | cancelled | blocked | lost
ALTER TABLE tasks ADD COLUMN lease_until BIGINT;
ALTER TABLE tasks ADD COLUMN started_at BIGINT;
-- The owner's role, for the completion turn that runs as the owner.
ALTER TABLE tasks ADD COLUMN owner_role TEXT NOT NULL DEFAULT 'member';
-- Completion notification: none | wanted | pending | delivering | delivered | consumed.
ALTER TABLE tasks ADD COLUMN completion TEXT NOT NULL DEFAULT 'none';
-- Set by a cancel received on another instance; the owner acts on it.
ALTER TABLE tasks ADD COLUMN cancel_requested BIGINT NOT NULL DEFAULT 0;
-- The running process group (JSON), so a survivor can end it after takeover.
ALTER TABLE tasks ADD COLUMN process TEXT;
-- Operator-only metadata (e.g. a child agent's requested and resolved controls).
ALTER TABLE tasks ADD COLUMN metadata TEXT;
CREATE INDEX tasks_queue ON tasks (status, created_at);
CREATE INDEX tasks_tenant_status ON tasks (tenant_id, status);
CREATE INDEX tasks_completion_pending ON tasks (completion) WHERE completion = 'pending';
