-- 009_forecast_bulk: the due-load forecast's index, and bulk operations' jobs.
--
-- Scheduled rows only, by (tenant, due time, queue): a forecast counts one tenant's window with one
-- covering range scan, split by destination (the queue) without reading a row. An event leaves it
-- when it fires (or is canceled), so it holds the events still ahead.
CREATE INDEX IF NOT EXISTS events_forecast ON events (tenant_id, due_at, queue) WHERE state = 'scheduled';

-- Bulk operations (POST /v1/events/bulk): one row per job, its filter and action, its progress and
-- the eventList cursor it resumes from, and a lease (owner, until, by the database clock) like the
-- leader's: the node holding an unexpired lease runs the job; after a crash the lease ends and a
-- node takes it over at the stored cursor. Each batch's changes and the cursor after them commit
-- together.
CREATE TABLE IF NOT EXISTS bulk_jobs (
  tenant_id   text COLLATE "C" NOT NULL,
  id          text COLLATE "C" NOT NULL,
  state       text NOT NULL CHECK (state IN ('running', 'succeeded', 'failed')),
  filter      text NOT NULL,
  action      text NOT NULL,
  cursor      text,
  matched     bigint NOT NULL DEFAULT 0,
  done        bigint NOT NULL DEFAULT 0,
  skipped     bigint NOT NULL DEFAULT 0,
  errors      text NOT NULL DEFAULT '[]',
  lease_owner text,
  lease_until bigint,
  created_at  bigint NOT NULL,
  updated_at  bigint NOT NULL,
  finished_at bigint,
  PRIMARY KEY (tenant_id, id)
);
-- Running jobs only: what a runner claims (oldest first) and what the per-tenant bound counts.
CREATE INDEX IF NOT EXISTS bulk_jobs_running ON bulk_jobs (created_at) WHERE state = 'running';
CREATE INDEX IF NOT EXISTS bulk_jobs_tenant_running ON bulk_jobs (tenant_id) WHERE state = 'running';
