-- 010_schedules: recurring schedules. Each row holds its spec (JSON) and its cursor, next_at: the
-- first occurrence not yet made into an event (NULL: none left). The materialiser reads the
-- schedules whose cursor is within its horizon (schedules_due) and moves the cursor with a
-- compare-and-swap on (version, next_at) in the transaction that inserts the occurrences.
CREATE TABLE schedules (
  tenant_id          TEXT NOT NULL REFERENCES tenants (id),
  id                 TEXT NOT NULL,
  shard              INTEGER NOT NULL,
  version            INTEGER NOT NULL,
  spec               TEXT NOT NULL,
  paused             INTEGER NOT NULL DEFAULT 0,
  next_at            INTEGER,
  catch_up_left      INTEGER NOT NULL,
  fired_count        INTEGER NOT NULL DEFAULT 0,
  missed_count       INTEGER NOT NULL DEFAULT 0,
  last_occurrence_at INTEGER,
  created_at         INTEGER NOT NULL,
  updated_at         INTEGER NOT NULL,
  PRIMARY KEY (tenant_id, id)
) WITHOUT ROWID;
CREATE INDEX schedules_due ON schedules (next_at) WHERE paused = 0 AND next_at IS NOT NULL;
