-- 009_forecast_bulk: the due-load forecast's index, and bulk operations' jobs.
--
-- Scheduled rows only, by (tenant, due time, queue): a forecast counts one tenant's window with one
-- covering range scan, split by destination (the queue) without reading a row. An event leaves it
-- when it fires (or is canceled), so it holds the events still ahead.
CREATE INDEX IF NOT EXISTS events_forecast ON events (tenant_id, due_at, queue) WHERE state = 'scheduled';

-- Bulk operations (POST /v1/events/bulk): one row per job, its filter and action, its progress and
-- the eventList cursor it resumes from, and a lease (owner, until) like the leader's: the node
-- holding an unexpired lease runs the job; after a crash the lease ends and a node takes it over
-- at the stored cursor. Each batch's changes and the cursor after them commit together.
CREATE TABLE IF NOT EXISTS bulk_jobs (
  tenant_id   TEXT NOT NULL,
  id          TEXT NOT NULL,
  state       TEXT NOT NULL,
  filter      TEXT NOT NULL,
  action      TEXT NOT NULL,
  cursor      TEXT,
  matched     INTEGER NOT NULL DEFAULT 0,
  done        INTEGER NOT NULL DEFAULT 0,
  skipped     INTEGER NOT NULL DEFAULT 0,
  errors      TEXT NOT NULL DEFAULT '[]',
  lease_owner TEXT,
  lease_until INTEGER,
  created_at  INTEGER NOT NULL,
  updated_at  INTEGER NOT NULL,
  finished_at INTEGER,
  PRIMARY KEY (tenant_id, id)
) WITHOUT ROWID;
-- Running jobs only: what a runner claims (oldest first) and what the per-tenant bound counts.
CREATE INDEX IF NOT EXISTS bulk_jobs_running ON bulk_jobs (created_at) WHERE state = 'running';
CREATE INDEX IF NOT EXISTS bulk_jobs_tenant_running ON bulk_jobs (tenant_id) WHERE state = 'running';
