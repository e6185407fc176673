-- 015_schedule_catch_up: the materialiser serves schedules with a late stretch a tenant at a time,
-- round robin (scheduleListCatchUp), after the on-time ones: their cursors by tenant.
CREATE INDEX IF NOT EXISTS schedules_tenant_due ON schedules (tenant_id, next_at) WHERE paused = 0 AND next_at IS NOT NULL;
