-- 019_schedule_spec_fields: schedules written before their spec had `missedAfterMs` (how late an
-- occurrence may fire) or their template `type` (the events' kind) get them here, with the values
-- their readers assumed for them (1000 ms, null), so every stored spec has both and nothing reads
-- them with a default. Only those rows are rewritten (the spec is text: jsonb respells it).
UPDATE schedules SET spec = jsonb_set(spec::jsonb, '{missedAfterMs}', '1000')::text
  WHERE spec::json -> 'missedAfterMs' IS NULL;
UPDATE schedules SET spec = jsonb_set(spec::jsonb, '{template,type}', 'null')::text
  WHERE spec::json -> 'template' -> 'type' IS NULL;
