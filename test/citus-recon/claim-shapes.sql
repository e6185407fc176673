SET search_path = scr3;
\set VERBOSITY terse
\echo '--- A: pinned claim, ctid, no transitions CTE'
EXPLAIN WITH claimable AS (
  SELECT l.row_id FROM unnest(ARRAY['t2'], ARRAY['e4']) AS r(tenant_id, id) CROSS JOIN LATERAL (
    SELECT e.ctid AS row_id FROM events e WHERE e.shard = 85 AND e.tenant_id = r.tenant_id AND e.id = r.id FOR UPDATE SKIP LOCKED) l
), claimed AS (UPDATE events e SET version = e.version + 1 FROM claimable c WHERE e.shard = 85 AND e.ctid = c.row_id RETURNING e.id)
SELECT * FROM claimed;
\echo '--- B: pinned claim, join by PK instead of ctid, with transitions CTE'
EXPLAIN WITH claimable AS (
  SELECT l.tenant_id, l.id FROM unnest(ARRAY['t2'], ARRAY['e4']) AS r(tenant_id, id) CROSS JOIN LATERAL (
    SELECT e.tenant_id, e.id FROM events e WHERE e.shard = 85 AND e.tenant_id = r.tenant_id AND e.id = r.id FOR UPDATE SKIP LOCKED) l
), claimed AS (UPDATE events e SET version = e.version + 1 FROM claimable c WHERE e.shard = 85 AND e.tenant_id = c.tenant_id AND e.id = c.id RETURNING e.tenant_id, e.id, e.version)
, traced AS (INSERT INTO transitions (shard, tenant_id, event_id, seq, at, kind, to_state, attempt) SELECT 85, tenant_id, id, version, 0, 'state', 'executing', 1 FROM claimed)
SELECT * FROM claimed;
\echo '--- C: pinned single UPDATE with IN (SELECT .. FOR UPDATE SKIP LOCKED), no CTE'
EXPLAIN UPDATE events e SET version = e.version + 1 WHERE e.shard = 85 AND (e.tenant_id, e.id) IN (
  SELECT x.tenant_id, x.id FROM events x WHERE x.shard = 85 AND (x.tenant_id, x.id) IN (SELECT * FROM unnest(ARRAY['t2'], ARRAY['e4'])) FOR UPDATE SKIP LOCKED) RETURNING e.id;
\echo '--- D: C + transitions insert via CTE'
EXPLAIN WITH claimed AS (UPDATE events e SET version = e.version + 1 WHERE e.shard = 85 AND (e.tenant_id, e.id) IN (
  SELECT x.tenant_id, x.id FROM events x WHERE x.shard = 85 AND (x.tenant_id, x.id) IN (SELECT * FROM unnest(ARRAY['t2'], ARRAY['e4'])) FOR UPDATE SKIP LOCKED) RETURNING e.tenant_id, e.id, e.version)
, traced AS (INSERT INTO transitions (shard, tenant_id, event_id, seq, at, kind, to_state, attempt) SELECT 85, tenant_id, id, version, 0, 'state', 'executing', 1 FROM claimed)
SELECT * FROM claimed;
\echo '--- E: A with LATERAL and ctid but pinned, UPDATE only by ctid IN'
EXPLAIN UPDATE events e SET version = e.version + 1 WHERE e.shard = 85 AND e.ctid IN (
  SELECT l.row_id FROM unnest(ARRAY['t2'], ARRAY['e4']) AS r(tenant_id, id) CROSS JOIN LATERAL (
    SELECT x.ctid AS row_id FROM events x WHERE x.shard = 85 AND x.tenant_id = r.tenant_id AND x.id = r.id FOR UPDATE SKIP LOCKED) l) RETURNING e.id;
\echo '--- F: simple pinned CTE update + transitions insert (eventCancel shape), plan detail'
EXPLAIN WITH changed AS (UPDATE events SET version = version + 1 WHERE shard = 85 AND tenant_id = 't2' AND id = 'e4' RETURNING tenant_id, id, version)
, traced AS (INSERT INTO transitions (shard, tenant_id, event_id, seq, at, kind, to_state, attempt) SELECT 85, tenant_id, id, version, 0, 'state', 'canceled', 1 FROM changed)
SELECT * FROM changed;
