-- 012_pull_delivery: events of pull destinations (docs/pull.md). `pull` is true for an event whose
-- destination was a pull destination when the event was written (insert, edit, replay: the store
-- reads the destination's kind in the same statement); `receipt` is the token of its current
-- claim while it is executing, checked by ack, nack and extend. Adding columns with a constant
-- default rewrites nothing.
ALTER TABLE events ADD COLUMN IF NOT EXISTS pull boolean NOT NULL DEFAULT false;
ALTER TABLE events ADD COLUMN IF NOT EXISTS receipt text;

-- The read-ahead never sees pull events: a pull backlog, however large, costs it nothing.
-- Rebuilding the index blocks writes for as long as the build takes; on a large table build
-- events_due_push CONCURRENTLY by hand first (see 007), then this migration only drops the old one.
CREATE INDEX IF NOT EXISTS events_due_push ON events (shard, due_at, tenant_id, id)
  WHERE state IN ('scheduled', 'awaiting_retry') AND NOT pull;
DROP INDEX IF EXISTS events_due;
ALTER INDEX events_due_push RENAME TO events_due;

-- Claims filtered by type: per (tenant, queue, type), due order. Untyped claims walk
-- events_queue_due (004). Pull rows only: push events cost this index nothing.
CREATE INDEX IF NOT EXISTS events_pull_type_due ON events (tenant_id, queue, type, due_at, id)
  WHERE state IN ('scheduled', 'awaiting_retry') AND pull;

-- The expirer: claimed pull events by the end of their visibility timeout.
CREATE INDEX IF NOT EXISTS events_pull_leases ON events (lease_until) WHERE state = 'executing' AND pull;
