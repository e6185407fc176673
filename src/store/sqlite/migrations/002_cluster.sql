-- 002_cluster: node registry, the leader lease (one row) and the shard map.
-- SQLite serves one process, so its clock is that process's Date.now(); the tables exist so a
-- single node runs the same elector and assigner code as a cluster on PostgreSQL.

CREATE TABLE nodes (
  id           TEXT PRIMARY KEY,
  started_at   INTEGER NOT NULL,
  heartbeat_at INTEGER NOT NULL,
  meta         TEXT NOT NULL DEFAULT '{}'
) WITHOUT ROWID;

-- At most one row (id = 1). `epoch` grows by one each time the lease changes hands; the row is
-- kept after a resign (expires_at set in the past) so the next epoch still grows.
CREATE TABLE leader_lease (
  id         INTEGER PRIMARY KEY CHECK (id = 1),
  node_id    TEXT NOT NULL,
  epoch      INTEGER NOT NULL,
  expires_at INTEGER NOT NULL
);

-- The shard map, written whole by the leader under its epoch.
CREATE TABLE shard_assignments (
  shard   INTEGER PRIMARY KEY,
  node_id TEXT NOT NULL,
  epoch   INTEGER NOT NULL
);
CREATE INDEX shard_assignments_node ON shard_assignments (node_id, shard);
