-- 008_event_type: an event's optional kind (`order.timeout`), and the index that serves the list
-- filter `?type=` newest first like the other filters (src/store/event-list-plan.ts). Typed
-- events only: an event without a type costs this index nothing. Adding a nullable column
-- without a default rewrites nothing; the index build reads the table once (see 007 on building
-- it CONCURRENTLY by hand first on a large table).
ALTER TABLE events ADD COLUMN IF NOT EXISTS type text COLLATE "C";
CREATE INDEX IF NOT EXISTS events_tenant_type_seq ON events (tenant_id, type, seq) WHERE type IS NOT NULL;
