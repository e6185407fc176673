SET search_path = scr3;
\set VERBOSITY terse
\echo '--- expression index outside tx'
CREATE INDEX events_dest_expr ON events (tenant_id, ((destination::json) ->> 'name'), seq);
DROP INDEX events_dest_expr;
\echo '--- router write, then DDL in the same tx'
BEGIN;
UPDATE events SET version = version WHERE shard = 85 AND tenant_id = 't2' AND id = 'e4';
ALTER TABLE events ADD COLUMN x1 int;
ROLLBACK;
\echo '--- multi-shard UPDATE, then DDL in the same tx'
BEGIN;
UPDATE events SET version = version WHERE id = 'e4';
ALTER TABLE events ADD COLUMN x1 int;
CREATE INDEX ON events (x1);
ROLLBACK;
\echo '--- router reads of 2 shards on same worker, then DDL'
BEGIN;
SELECT count(*) FROM events WHERE shard = 85;
SELECT count(*) FROM events WHERE shard = 98;
ALTER TABLE events ADD COLUMN x1 int;
ROLLBACK;
\echo '--- write to a reference table, then create_distributed_table in same tx'
BEGIN;
INSERT INTO tenants VALUES ('t9','t9','{}',0);
CREATE TABLE zz (shard int NOT NULL, a int, PRIMARY KEY (shard, a));
SELECT create_distributed_table('zz', 'shard', colocate_with => 'events');
ROLLBACK;
\echo '--- alter_distributed_table shard_count (identity column)'
SELECT alter_distributed_table('scr3.events', shard_count := 64, cascade_to_colocated := true);
