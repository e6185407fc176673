-- 018_store_settings: settings fixed for the life of the store, one row each. `shard_count`: the
-- number of shards its events are placed in (shardCountRecord), written by the first node that
-- starts on it; a node started with another count refuses to start.
CREATE TABLE store_settings (
  name TEXT PRIMARY KEY,
  value TEXT NOT NULL
);
