\set VERBOSITY default
SET search_path = scr1;
\echo '### 1. events as-is by shard'
SELECT create_distributed_table('events','shard');
\echo '### 2. transitions as-is, no shard column: by tenant_id'
SELECT create_distributed_table('transitions','tenant_id');
\echo '### 3. reference tables'
SELECT create_reference_table('tenants');
SELECT create_reference_table('api_keys');
SELECT create_reference_table('destinations');
\echo '### 4. schedules by shard (FK to tenants, PK tenant_id,id)'
SELECT create_distributed_table('schedules','shard');
\echo '### 5. events distributed by tenant_id as-is'
SELECT create_distributed_table('events','tenant_id');
SELECT undistribute_table('events');
