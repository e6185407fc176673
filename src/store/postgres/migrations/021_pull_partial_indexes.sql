-- 021_pull_partial_indexes: two indexes that a pulled event paid for and never used.
-- events_executing serves the rescuer, which never rescues a pull claim (the expirer ends those,
-- by events_pull_leases): pull rows leave it. events_pull_type_due serves typed claims, whose
-- `type = $n` never matches an untyped event: untyped rows leave it. A claim and its ack each
-- insert two index entries fewer.
-- Each new index is built under a new name, the old one dropped, the new one renamed to the old
-- name. The builds run inside the migration transaction, which blocks writes to events while each
-- reads the table (seconds per million events). On a large table build them first by hand with
-- CREATE INDEX CONCURRENTLY under the names events_executing_push and events_pull_typed_due and
-- these definitions: IF NOT EXISTS then skips the builds.
CREATE INDEX IF NOT EXISTS events_executing_push ON events (lease_until) WHERE state = 'executing' AND NOT pull;
DROP INDEX IF EXISTS events_executing;
ALTER INDEX events_executing_push RENAME TO events_executing;
CREATE INDEX IF NOT EXISTS events_pull_typed_due ON events (tenant_id, queue, type, due_at, id)
  WHERE state IN ('scheduled', 'awaiting_retry') AND pull AND type IS NOT NULL;
DROP INDEX IF EXISTS events_pull_type_due;
ALTER INDEX events_pull_typed_due RENAME TO events_pull_type_due;
