-- 004_event_queue: each event's virtual queue within its tenant (`name:<destination>` or
-- `url:<origin>`, core/queue.ts), kept by the store at insert and on a destination edit, and an
-- index of fireable rows per queue in due order: the scheduler bounds each queue's events in
-- memory and refills a queue from this index alone, never reading the rows of another queue.
ALTER TABLE events ADD COLUMN queue TEXT NOT NULL DEFAULT '';

-- Existing rows: the origin of an inline URL is approximated in SQL (scheme://authority,
-- lowercased; a default port is kept). The queue is only a grouping key, read back with the row,
-- so an approximate one is a queue of its own, never a wrong delivery.
UPDATE events SET queue = CASE
  WHEN json_extract(destination, '$.name') IS NOT NULL THEN 'name:' || json_extract(destination, '$.name')
  ELSE 'url:' || lower(substr(json_extract(destination, '$.url'), 1,
    instr(json_extract(destination, '$.url'), '://') + 1 +
    instr(substr(json_extract(destination, '$.url'), instr(json_extract(destination, '$.url'), '://') + 3) || '/', '/')))
END;

CREATE INDEX events_queue_due ON events (tenant_id, queue, due_at, id)
  WHERE state IN ('scheduled', 'awaiting_retry');
