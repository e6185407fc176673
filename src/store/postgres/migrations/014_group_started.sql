-- 014_group_started: group order holds whatever the fireAt of members created or edited while one
-- is being delivered. A member that has started (executing, or awaiting_retry after an attempt)
-- holds its group until it is terminal; the group-head predicate probes this index for such a
-- member (normally at most one per group, so the probe is one entry).
CREATE INDEX IF NOT EXISTS events_group_started ON events (tenant_id, grp, fire_at, seq)
  WHERE grp IS NOT NULL AND state IN ('executing', 'awaiting_retry');
