-- Each transition carries its event's shard. On Citus the shard is the distribution column of
-- events and transitions, and a state change and its transition go to the same shard; on plain
-- PostgreSQL it is written and not read. Rows written before this migration have NULL.
ALTER TABLE transitions ADD COLUMN IF NOT EXISTS shard integer;
