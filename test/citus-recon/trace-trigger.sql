SET search_path = scr3;
\set VERBOSITY terse
CREATE FUNCTION scr3.trace_change() RETURNS trigger LANGUAGE plpgsql AS $f$
BEGIN
  INSERT INTO scr3.transitions (shard, tenant_id, event_id, seq, at, kind, from_state, to_state, attempt)
  VALUES (NEW.shard, NEW.tenant_id, NEW.id, NEW.version, NEW.updated_at, 'state', OLD.state, NEW.state, NEW.attempts);
  RETURN NULL;
END $f$;
\echo '--- trigger without citus.enable_unsafe_triggers'
CREATE TRIGGER events_trace AFTER UPDATE ON events FOR EACH ROW WHEN (OLD.version <> NEW.version) EXECUTE FUNCTION scr3.trace_change();
SET citus.enable_unsafe_triggers = on;
\echo '--- with citus.enable_unsafe_triggers = on'
CREATE TRIGGER events_trace AFTER UPDATE ON events FOR EACH ROW WHEN (OLD.version <> NEW.version) EXECUTE FUNCTION scr3.trace_change();
EXPLAIN (COSTS OFF) UPDATE events SET version = version + 1, updated_at = 7 WHERE shard = 85 AND tenant_id = 't2' AND id = 'e4';
BEGIN;
UPDATE events SET version = version + 1, updated_at = 7 WHERE shard = 85 AND tenant_id = 't2' AND id = 'e4' RETURNING version;
SELECT shard, event_id, seq, at, from_state, to_state FROM transitions WHERE shard = 85 AND tenant_id = 't2' AND event_id = 'e4';
ROLLBACK;
DROP TRIGGER events_trace ON events;
