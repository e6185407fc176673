INSERT INTO tenants (id, name, settings, created_at) VALUES ('t1','t1','{}',0),('t2','t2','{}',0),('t3','t3','{}',0);
INSERT INTO destinations VALUES ('t1','hook','{"kind":"webhook","url":"http://x"}','[]',0,0),('t1','inbox','{"kind":"pull"}','[]',0,0),
  ('t2','hook','{"kind":"webhook","url":"http://x"}','[]',0,0),('t3','hook','{"kind":"webhook","url":"http://x"}','[]',0,0);
INSERT INTO events (tenant_id, id, shard, state, version, fire_at, due_at, destination, payload, headers, grp, tags, request_hash,
  created_at, updated_at, queue, pull, lease_owner, lease_until, receipt, attempts)
SELECT tenant_id, id, mod(abs(hashtext(tenant_id || chr(1) || coalesce(grp, id))), 256), state, 1, due, due,
  CASE WHEN pull THEN '{"name":"inbox"}' ELSE '{"name":"hook"}' END, '{}', '{}', grp, '{}', 'h', 0, 0,
  CASE WHEN pull THEN 'name:inbox' ELSE 'name:hook' END, pull,
  CASE WHEN state='executing' THEN CASE WHEN pull THEN 'pull' ELSE 'node-a' END END,
  CASE WHEN state='executing' THEN 1700000000000 + i END,
  CASE WHEN state='executing' AND pull THEN 'rcpt' || i END,
  CASE WHEN state='executing' THEN 1 ELSE 0 END
FROM (SELECT i, 't' || (1 + i % 3) AS tenant_id, 'e' || i AS id,
        CASE WHEN i % 10 = 0 THEN 'g' || (i % 50) END AS grp,
        CASE WHEN i % 20 = 1 THEN 'executing' WHEN i % 5 = 2 THEN 'succeeded' ELSE 'scheduled' END AS state,
        1700000000000 + i * 100 AS due,
        (i % 3 = 0 AND i % 10 = 3) OR (i % 30 = 3) AS pull
      FROM generate_series(1, 30000) i) x;
INSERT INTO transitions (tenant_id, event_id, seq, at, kind, from_state, to_state, attempt, shard)
SELECT tenant_id, id, 2, 0, 'state', 'scheduled', 'executing', 1, shard FROM events WHERE state <> 'scheduled';
INSERT INTO nodes VALUES ('node-a', 0, 0, '{}'), ('node-b', 0, 0, '{}');
INSERT INTO claim_leases VALUES ('node-a', 0);
INSERT INTO shard_assignments SELECT s, CASE WHEN s % 2 = 0 THEN 'node-a' ELSE 'node-b' END, 1 FROM generate_series(0,255) s;
INSERT INTO schedules (tenant_id, id, shard, version, spec, next_at, catch_up_left, created_at, updated_at)
SELECT 't1', 's' || i, mod(abs(hashtext('t1' || chr(1) || 's' || i)), 256), 1, '{}', 1700000000000 + i, 0, 0, 0 FROM generate_series(1,100) i;
ANALYZE;
