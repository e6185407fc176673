-- 020_pull_partial_indexes: two indexes that a pulled event paid for and never used.
-- events_executing serves the rescuer, which never rescues a pull claim (the expirer ends those,
-- by events_pull_leases): pull rows leave it. events_pull_type_due serves typed claims, whose
-- `type = ?` never matches an untyped event: untyped rows leave it. A claim and its ack each
-- change two index entries fewer.
DROP INDEX IF EXISTS events_executing;
CREATE INDEX events_executing ON events (lease_until) WHERE state = 'executing' AND pull = 0;
DROP INDEX IF EXISTS events_pull_type_due;
CREATE INDEX events_pull_type_due ON events (tenant_id, queue, type, due_at, id)
  WHERE state IN ('scheduled', 'awaiting_retry') AND pull = 1 AND type IS NOT NULL;
