-- 016_schedule_last_missed: why a schedule's latest missed occurrences were missed, shown on the
-- schedule (`lastMissed`): JSON {"at": epoch ms, "reason": text, "count": n}. Written by the advance
-- that counted them (late, or refused by a tenant limit) and by the counts of occurrences missed
-- at their fire.
ALTER TABLE schedules ADD COLUMN last_missed TEXT;
