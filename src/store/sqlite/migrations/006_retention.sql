-- 006_retention: the retention cleaner's index. Terminal rows only, by (tenant, state, time they
-- became terminal): each delete batch is one range scan of exactly the rows it deletes, however
-- many finished events the table holds and whatever period each tenant keeps. (A tenant's rows
-- kept longer never sit in front of another tenant's expired ones, as they would in one index by
-- (state, updated_at).) Live rows are not in it, so firing pays nothing for it until an event
-- finishes: one index entry per finished event.
CREATE INDEX IF NOT EXISTS events_terminal ON events (tenant_id, state, updated_at)
  WHERE state IN ('succeeded', 'discarded', 'archived', 'canceled');
