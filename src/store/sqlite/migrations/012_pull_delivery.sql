-- 012_pull_delivery: events of pull destinations (docs/pull.md). `pull` is 1 for an event whose
-- destination was a pull destination when the event was written (insert, edit, replay: the store
-- reads the destination's kind in the same statement); `receipt` is the token of its current
-- claim while it is executing, checked by ack, nack and extend.
ALTER TABLE events ADD COLUMN pull INTEGER NOT NULL DEFAULT 0;
ALTER TABLE events ADD COLUMN receipt TEXT;

-- The read-ahead never sees pull events: a pull backlog, however large, costs it nothing.
-- (Rebuilding the index reads the table once: seconds per million events at the upgrade.)
DROP INDEX IF EXISTS events_due;
CREATE INDEX events_due ON events (due_at, tenant_id, id, shard)
  WHERE state IN ('scheduled', 'awaiting_retry') AND pull = 0;

-- Claims filtered by type: per (tenant, queue, type), due order. Untyped claims walk
-- events_queue_due (004). Pull rows only: push events cost this index nothing.
CREATE INDEX events_pull_type_due ON events (tenant_id, queue, type, due_at, id)
  WHERE state IN ('scheduled', 'awaiting_retry') AND pull = 1;

-- The expirer: claimed pull events by the end of their visibility timeout.
CREATE INDEX events_pull_leases ON events (lease_until) WHERE state = 'executing' AND pull = 1;
