SET search_path = scr3;
\set VERBOSITY terse
CREATE OR REPLACE FUNCTION scr3.claim_pinned(s int, tids text[], ids text[]) RETURNS SETOF text LANGUAGE sql AS $f$
  WITH claimable AS (
    SELECT l.row_id FROM unnest(tids, ids) AS r(tenant_id, id) CROSS JOIN LATERAL (
      SELECT e.ctid AS row_id FROM scr3.events e WHERE e.shard = s AND e.tenant_id = r.tenant_id AND e.id = r.id FOR UPDATE SKIP LOCKED) l
  ), claimed AS (UPDATE scr3.events e SET version = e.version + 1 FROM claimable c WHERE e.shard = s AND e.ctid = c.row_id RETURNING e.shard, e.tenant_id, e.id, e.version)
  , traced AS (INSERT INTO scr3.transitions (shard, tenant_id, event_id, seq, at, kind, to_state, attempt) SELECT shard, tenant_id, id, version, 0, 'state', 'executing', 1 FROM claimed)
  SELECT id FROM claimed
$f$;
SELECT create_distributed_function('scr3.claim_pinned(int,text[],text[])', 's', colocate_with := 'scr3.events');
EXPLAIN (COSTS OFF) SELECT scr3.claim_pinned(85, ARRAY['t2'], ARRAY['e4']);
BEGIN;
SELECT scr3.claim_pinned(85, ARRAY['t2'], ARRAY['e4']);
ROLLBACK;
SELECT * FROM scr3.claim_pinned(85, ARRAY['t2'], ARRAY['e4']);
