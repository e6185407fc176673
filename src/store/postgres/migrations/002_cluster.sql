-- 002_cluster: node registry, the leader lease (one row) and the shard map.
-- Every time here is the DATABASE clock (epoch ms), written by the queries themselves, so nodes
-- with skewed clocks still agree on who holds the lease and how old a heartbeat is.

CREATE TABLE nodes (
  id           text COLLATE "C" PRIMARY KEY,
  started_at   bigint NOT NULL,
  heartbeat_at bigint NOT NULL,
  meta         jsonb NOT NULL DEFAULT '{}'
);

-- At most one row (id = 1). `epoch` grows by one each time the lease changes hands; the row is
-- kept after a resign (expires_at moved to the present) so the next epoch still grows.
CREATE TABLE leader_lease (
  id         integer PRIMARY KEY CHECK (id = 1),
  node_id    text COLLATE "C" NOT NULL,
  epoch      bigint NOT NULL,
  expires_at bigint NOT NULL
);

-- The shard map, written whole by the leader under its epoch. The primary key serves the claim
-- fence (shard = e.shard AND node_id = owner).
CREATE TABLE shard_assignments (
  shard   integer PRIMARY KEY,
  node_id text COLLATE "C" NOT NULL,
  epoch   bigint NOT NULL
);
