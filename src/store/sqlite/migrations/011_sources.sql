-- 011_sources: schedule requests read from Kafka topics. Each row holds its spec (JSON, with its
-- write-only credentials) and what the nodes reading it report: counts, the last errors (JSON
-- array, bounded by the code), a state, the lag per partition (JSON object) as last reported. Offsets live in the Kafka consumer group.
CREATE TABLE sources (
  tenant_id      TEXT NOT NULL REFERENCES tenants (id),
  name           TEXT NOT NULL,
  version        INTEGER NOT NULL,
  spec           TEXT NOT NULL,
  state          TEXT NOT NULL,
  accepted_count INTEGER NOT NULL DEFAULT 0,
  rejected_count INTEGER NOT NULL DEFAULT 0,
  last_errors    TEXT NOT NULL DEFAULT '[]',
  lag            TEXT NOT NULL DEFAULT '{}',
  created_at     INTEGER NOT NULL,
  updated_at     INTEGER NOT NULL,
  PRIMARY KEY (tenant_id, name)
) WITHOUT ROWID;
