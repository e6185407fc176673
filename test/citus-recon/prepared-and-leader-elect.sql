SET search_path = scr3;
\set VERBOSITY terse
\echo '--- prepared eventGet+shard, 7 executions, then EXPLAIN EXECUTE (generic plan?)'
PREPARE g(text, text, int) AS SELECT id FROM events WHERE tenant_id = $1 AND id = $2 AND shard = $3;
EXECUTE g('t2','e4',85); EXECUTE g('t2','e4',85); EXECUTE g('t2','e4',85); EXECUTE g('t2','e4',85); EXECUTE g('t2','e4',85); EXECUTE g('t2','e4',85); EXECUTE g('t2','e4',85);
EXPLAIN (COSTS OFF) EXECUTE g('t2','e4',85);
SET plan_cache_mode = force_generic_plan;
PREPARE g2(text, text, int[]) AS SELECT id FROM events WHERE tenant_id = $1 AND id = $2 AND shard = ANY($3);
EXPLAIN (COSTS OFF) EXECUTE g2('t2','e4',ARRAY[85,98,170]);
EXPLAIN (COSTS OFF) EXECUTE g2('t2','e4',ARRAY[85,0,1]);
PREPARE g3(int) AS SELECT count(*) FROM events WHERE shard = $1;
EXPLAIN (COSTS OFF) EXECUTE g3(85);
RESET plan_cache_mode;
\echo '--- leaderElect with PREPARE/EXECUTE'
PREPARE le(text, bigint) AS INSERT INTO leader_lease AS l (id, node_id, epoch, expires_at)
    SELECT 1, $1, 1, t.now_ms + $2::bigint FROM (SELECT floor(extract(epoch FROM clock_timestamp()) * 1000)::bigint AS now_ms) t
    ON CONFLICT (id) DO UPDATE SET
      epoch = CASE WHEN l.expires_at > excluded.expires_at - $2::bigint THEN l.epoch ELSE l.epoch + 1 END,
      node_id = excluded.node_id, expires_at = excluded.expires_at
    WHERE l.expires_at <= excluded.expires_at - $2::bigint OR l.node_id = $1
    RETURNING node_id, epoch, expires_at;
EXECUTE le('node-a', 10000);
\echo '--- leaderElect with literals'
INSERT INTO leader_lease AS l (id, node_id, epoch, expires_at)
    SELECT 1, 'node-a', 1, t.now_ms + 10000 FROM (SELECT floor(extract(epoch FROM clock_timestamp()) * 1000)::bigint AS now_ms) t
    ON CONFLICT (id) DO UPDATE SET epoch = l.epoch + 1, node_id = excluded.node_id, expires_at = excluded.expires_at
    WHERE l.expires_at <= excluded.expires_at - 10000 OR l.node_id = 'node-a'
    RETURNING node_id, epoch, expires_at;
\echo '--- leaderElect VALUES form with params'
PREPARE le2(text, bigint) AS INSERT INTO leader_lease AS l (id, node_id, epoch, expires_at)
    VALUES (1, $1, 1, floor(extract(epoch FROM clock_timestamp()) * 1000)::bigint + $2::bigint)
    ON CONFLICT (id) DO UPDATE SET
      epoch = CASE WHEN l.expires_at > excluded.expires_at - $2::bigint THEN l.epoch ELSE l.epoch + 1 END,
      node_id = excluded.node_id, expires_at = excluded.expires_at
    WHERE l.expires_at <= excluded.expires_at - $2::bigint OR l.node_id = $1
    RETURNING node_id, epoch, expires_at;
EXECUTE le2('node-a', 10000);
