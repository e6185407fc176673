-- 007_list_indexes: every filter of eventList walks an index in the list's own order (newest
-- first, by seq), so a page reads a bounded number of entries whatever the size of the table
-- (src/store/event-list-plan.ts). The state index also serves the background counts per
-- (tenant, state) (metrics, the pending quota) as a covering scan.
-- Building them reads the whole table once: seconds per million events at the upgrade.
CREATE INDEX IF NOT EXISTS events_tenant_state_seq ON events (tenant_id, state, seq);
CREATE INDEX IF NOT EXISTS events_tenant_destination_seq ON events (tenant_id, json_extract(destination, '$.name'), seq);
-- Grouped events only: most events have no group, and they cost this index nothing.
CREATE INDEX IF NOT EXISTS events_tenant_grp_seq ON events (tenant_id, grp, seq) WHERE grp IS NOT NULL;
