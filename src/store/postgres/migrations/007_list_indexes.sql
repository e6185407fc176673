-- 007_list_indexes: every filter of eventList walks an index in the list's own order (newest
-- first, by seq), so a page reads a bounded number of entries whatever the size of the table
-- (src/store/event-list-plan.ts). The state index also serves the background counts per
-- (tenant, state) (metrics, the pending quota).
-- Building them here blocks writes to events for as long as the build takes (seconds per million
-- events). On a large table, build them first by hand with CREATE INDEX CONCURRENTLY under the
-- same names and definitions: IF NOT EXISTS then skips them.
CREATE INDEX IF NOT EXISTS events_tenant_state_seq ON events (tenant_id, state, seq);
CREATE INDEX IF NOT EXISTS events_tenant_destination_seq ON events (tenant_id, ((destination::json) ->> 'name'), seq);
-- Grouped events only: most events have no group, and they cost this index nothing.
CREATE INDEX IF NOT EXISTS events_tenant_grp_seq ON events (tenant_id, grp, seq) WHERE grp IS NOT NULL;
