-- 001_initial: tenants, api keys, destinations, events and their transition log.
-- Times are epoch milliseconds (INTEGER); JSON is stored as TEXT.

CREATE TABLE tenants (
  id         TEXT PRIMARY KEY,
  name       TEXT NOT NULL,
  settings   TEXT NOT NULL DEFAULT '{}',
  created_at INTEGER NOT NULL
) WITHOUT ROWID;

CREATE TABLE api_keys (
  id         TEXT PRIMARY KEY,
  tenant_id  TEXT NOT NULL REFERENCES tenants (id),
  hash       TEXT NOT NULL,
  prefix     TEXT NOT NULL,
  created_at INTEGER NOT NULL,
  revoked_at INTEGER
) WITHOUT ROWID;
CREATE UNIQUE INDEX api_keys_hash ON api_keys (hash);
CREATE INDEX api_keys_tenant ON api_keys (tenant_id, created_at);

CREATE TABLE destinations (
  tenant_id  TEXT NOT NULL REFERENCES tenants (id),
  name       TEXT NOT NULL,
  config     TEXT NOT NULL,
  secrets    TEXT NOT NULL,
  created_at INTEGER NOT NULL,
  updated_at INTEGER NOT NULL,
  PRIMARY KEY (tenant_id, name)
) WITHOUT ROWID;

-- seq is the rowid (INTEGER PRIMARY KEY AUTOINCREMENT): creation order, never reused, and the
-- table's own b-tree key, so listing by seq and the seq tie-break cost no extra index.
-- (tenant_id, id) is the logical key, enforced by the unique index below.
CREATE TABLE events (
  seq           INTEGER PRIMARY KEY AUTOINCREMENT,
  tenant_id     TEXT NOT NULL REFERENCES tenants (id),
  id            TEXT NOT NULL,
  shard         INTEGER NOT NULL,
  state         TEXT NOT NULL,
  version       INTEGER NOT NULL,
  fire_at       INTEGER NOT NULL,
  due_at        INTEGER NOT NULL,
  destination   TEXT NOT NULL,
  payload       TEXT NOT NULL,
  headers       TEXT NOT NULL,
  grp           TEXT,
  retry         TEXT,
  expire_at     INTEGER,
  tags          TEXT NOT NULL,
  attempts      INTEGER NOT NULL DEFAULT 0,
  last_status   INTEGER,
  last_error    TEXT,
  request_hash  TEXT NOT NULL,
  created_at    INTEGER NOT NULL,
  updated_at    INTEGER NOT NULL,
  lease_owner   TEXT,
  lease_until   INTEGER
);
CREATE UNIQUE INDEX events_tenant_id ON events (tenant_id, id);
-- The read-ahead (eventListDue): fireable rows in due order, shard kept in the index to filter
-- owned shards before touching the row.
CREATE INDEX events_due ON events (due_at, tenant_id, id, shard)
  WHERE state IN ('scheduled', 'awaiting_retry');
-- Group order (claim, list-due, group head): only non-terminal members, so a long history of
-- delivered events in one group never lengthens the "is anyone before me" probe.
CREATE INDEX events_group_live ON events (tenant_id, grp, fire_at, seq)
  WHERE grp IS NOT NULL AND state IN ('scheduled', 'executing', 'awaiting_retry');
-- eventList: newest first per tenant.
CREATE INDEX events_tenant_seq ON events (tenant_id, seq);
-- The rescuer: executing rows by lease end.
CREATE INDEX events_executing ON events (lease_until) WHERE state = 'executing';

-- One row per change of an event; seq is the version the change produced (1 = created), so it
-- starts at 1 and grows by one per change. Rows are written only by the backend, in the same
-- transaction as their event's change; there is no foreign key to events because its parent
-- probe cost ~7% of insert throughput (128k vs 119k rows/s, batches of 1000), so whatever
-- deletes events (retention) deletes their transitions too.
CREATE TABLE transitions (
  tenant_id    TEXT NOT NULL,
  event_id     TEXT NOT NULL,
  seq          INTEGER NOT NULL,
  at           INTEGER NOT NULL,
  kind         TEXT NOT NULL,
  from_state   TEXT,
  to_state     TEXT NOT NULL,
  attempt      INTEGER NOT NULL,
  status       INTEGER,
  error        TEXT,
  duration_ms  INTEGER,
  lateness_ms  INTEGER,
  detail       TEXT,
  PRIMARY KEY (tenant_id, event_id, seq)
) WITHOUT ROWID;
