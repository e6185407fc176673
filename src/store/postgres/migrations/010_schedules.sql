-- 010_schedules: recurring schedules. Each row holds its spec (JSON text) and its cursor, next_at:
-- the first occurrence not yet made into an event (NULL: none left). The materialiser reads the
-- schedules whose cursor is within its horizon (schedules_due) and moves the cursor with a
-- compare-and-swap on (version, next_at) in the transaction that inserts the occurrences.
CREATE TABLE schedules (
  tenant_id          text COLLATE "C" NOT NULL REFERENCES tenants (id),
  id                 text COLLATE "C" NOT NULL,
  shard              integer NOT NULL,
  version            integer NOT NULL,
  spec               text NOT NULL,
  paused             boolean NOT NULL DEFAULT false,
  next_at            bigint,
  catch_up_left      integer NOT NULL,
  fired_count        bigint NOT NULL DEFAULT 0,
  missed_count       bigint NOT NULL DEFAULT 0,
  last_occurrence_at bigint,
  created_at         bigint NOT NULL,
  updated_at         bigint NOT NULL,
  PRIMARY KEY (tenant_id, id)
);
CREATE INDEX schedules_due ON schedules (next_at) WHERE NOT paused AND next_at IS NOT NULL;
