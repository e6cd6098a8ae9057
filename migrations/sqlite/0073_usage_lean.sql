-- Every raw usage row is written on a busy server's path and read only by
-- the roll-up (through the unrolled index) and by pruning (through `at`):
-- the per-tenant time indexes cost each insert and serve no query.
DROP INDEX usage_model_calls_tenant_at;
DROP INDEX usage_tool_calls_tenant_at;
