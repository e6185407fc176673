SET search_path = scr3;
\set VERBOSITY terse
CREATE TABLE event_locator (shard int NOT NULL, tenant_id text COLLATE "C" NOT NULL, id text COLLATE "C" NOT NULL, event_shard int NOT NULL, PRIMARY KEY (shard, tenant_id, id));
SELECT create_distributed_table('event_locator', 'shard', colocate_with => 'events');
EXPLAIN (COSTS OFF) SELECT id FROM events WHERE shard = coalesce((SELECT event_shard FROM event_locator WHERE shard = 85 AND tenant_id = 't2' AND id = 'e4'), 85) AND tenant_id = 't2' AND id = 'e4';
\echo '--- multi-shard tx: locator insert + event insert into different Citus shards, then COMMIT (2PC?)'
BEGIN;
INSERT INTO event_locator VALUES (85, 't1', 'loc1', 0);
INSERT INTO events (tenant_id, id, shard, state, version, fire_at, due_at, destination, payload, headers, tags, request_hash, created_at, updated_at) VALUES ('t1', 'loc1', 0, 'scheduled', 1, 0, 0, '{}', '{}', '{}', '{}', 'h', 0, 0);
COMMIT;
SELECT count(*) AS prepared_tx_records FROM pg_dist_transaction;
SHOW citus.multi_shard_modify_mode;
