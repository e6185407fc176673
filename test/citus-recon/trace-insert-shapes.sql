SET search_path = scr3;
\set VERBOSITY terse
\echo '--- G: top-level INSERT INTO transitions ... FROM modifying CTE, all pinned'
EXPLAIN WITH changed AS (UPDATE events SET version = version + 1 WHERE shard = 85 AND tenant_id = 't2' AND id = 'e4' RETURNING shard, tenant_id, id, version)
INSERT INTO transitions (shard, tenant_id, event_id, seq, at, kind, to_state, attempt) SELECT shard, tenant_id, id, version, 0, 'state', 'canceled', 1 FROM changed WHERE shard = 85 RETURNING event_id;
\echo '--- H: citus.enable_router_execution / local: transitions insert of VALUES pinned in same tx (two statements)'
BEGIN;
EXPLAIN (COSTS OFF) UPDATE events SET version = version + 1 WHERE shard = 85 AND tenant_id = 't2' AND id = 'e4' RETURNING tenant_id, id, version;
EXPLAIN (COSTS OFF) INSERT INTO transitions (shard, tenant_id, event_id, seq, at, kind, to_state, attempt) SELECT 85, t, i, v, 0, 'state', 'x', 1 FROM unnest(ARRAY['t2'], ARRAY['e4'], ARRAY[9]) AS u(t, i, v);
EXPLAIN (COSTS OFF) INSERT INTO transitions (shard, tenant_id, event_id, seq, at, kind, to_state, attempt) VALUES (85, 't2', 'e4', 9, 0, 'state', 'x', 1), (85, 't2', 'e5', 9, 0, 'state', 'x', 1);
ROLLBACK;
