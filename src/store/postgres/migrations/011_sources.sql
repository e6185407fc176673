-- 011_sources: schedule requests read from Kafka topics. Each row holds its spec (JSON text, with
-- its write-only credentials) and what the nodes reading it report: counts, the last errors (JSON
-- array, bounded by the code), a state, the lag per partition (JSON object) as last reported. Offsets live in the Kafka consumer group.
CREATE TABLE sources (
  tenant_id      text COLLATE "C" NOT NULL REFERENCES tenants (id),
  name           text COLLATE "C" NOT NULL,
  version        integer NOT NULL,
  spec           text NOT NULL,
  state          text NOT NULL,
  accepted_count bigint NOT NULL DEFAULT 0,
  rejected_count bigint NOT NULL DEFAULT 0,
  last_errors    text NOT NULL DEFAULT '[]',
  lag            text NOT NULL DEFAULT '{}',
  created_at     bigint NOT NULL,
  updated_at     bigint NOT NULL,
  PRIMARY KEY (tenant_id, name)
);
