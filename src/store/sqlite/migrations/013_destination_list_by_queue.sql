-- 013_destination_list_by_queue: the list filter `?destination=` walks (tenant_id, queue, seq)
-- instead of (tenant_id, json_extract(destination, '$.name'), seq). The queue of an event of a
-- named destination is `name:<destination>` (004, core/queue.ts), kept by every write that
-- changes the destination, so the walk finds the same rows; the expression index parsed the
-- destination's JSON on every insert and on every write that changed the destination.
-- (The build reads the table once: seconds per million events at the upgrade.)
DROP INDEX IF EXISTS events_tenant_destination_seq;
CREATE INDEX IF NOT EXISTS events_tenant_queue_seq ON events (tenant_id, queue, seq);
