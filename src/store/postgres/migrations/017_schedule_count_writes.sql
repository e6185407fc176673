-- 017_schedule_count_writes: the ids of the schedules' counts writes applied lately, so that a
-- write repeated because its answer was lost after it committed adds nothing again
-- (scheduleCountsAdd). Kept an hour (SCHEDULE_COUNT_WRITE_KEEP_MS), pruned by the writes
-- themselves in bounded steps, oldest first (index on written_at).
CREATE TABLE schedule_count_writes (
  write_id TEXT PRIMARY KEY,
  written_at BIGINT NOT NULL
);
CREATE INDEX schedule_count_writes_written_at ON schedule_count_writes (written_at);
