-- 019_schedule_spec_fields: schedules written before their spec had `missedAfterMs` (how late an
-- occurrence may fire) or their template `type` (the events' kind) get them here, with the values
-- their readers assumed for them (1000 ms, null), so every stored spec has both and nothing reads
-- them with a default.
UPDATE schedules SET spec = json_set(spec, '$.missedAfterMs', 1000)
  WHERE json_type(spec, '$.missedAfterMs') IS NULL;
UPDATE schedules SET spec = json_set(spec, '$.template.type', NULL)
  WHERE json_type(spec, '$.template.type') IS NULL;
