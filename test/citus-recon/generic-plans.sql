SET search_path = scr3;
\set VERBOSITY terse
PREPARE g2(text, text, int[]) AS SELECT id FROM events WHERE tenant_id = $1 AND id = $2 AND shard = ANY($3);
EXECUTE g2('t2','e4',ARRAY[85,0,1]); EXECUTE g2('t2','e4',ARRAY[85,0,1]); EXECUTE g2('t2','e4',ARRAY[85,0,1]); EXECUTE g2('t2','e4',ARRAY[85,0,1]); EXECUTE g2('t2','e4',ARRAY[85,0,1]); EXECUTE g2('t2','e4',ARRAY[85,0,1]); EXECUTE g2('t2','e4',ARRAY[85,0,1]); EXECUTE g2('t2','e4',ARRAY[85,0,1]);
SELECT generic_plans, custom_plans FROM pg_prepared_statements WHERE name = 'g2';
PREPARE g4(text, text, int) AS SELECT id FROM events WHERE tenant_id = $1 AND id = $2 AND shard = $3;
EXECUTE g4('t2','e4',85); EXECUTE g4('t2','e4',85); EXECUTE g4('t2','e4',85); EXECUTE g4('t2','e4',85); EXECUTE g4('t2','e4',85); EXECUTE g4('t2','e4',85); EXECUTE g4('t2','e4',85); EXECUTE g4('t2','e4',85);
SELECT generic_plans, custom_plans FROM pg_prepared_statements WHERE name = 'g4';
SET plan_cache_mode = force_generic_plan;
PREPARE g5(text, text, int) AS SELECT id FROM events WHERE tenant_id = $1 AND id = $2 AND shard = $3;
EXECUTE g5('t2','e4',85);
EXPLAIN (COSTS OFF) EXECUTE g5('t2','e4',85);
