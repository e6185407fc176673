\set VERBOSITY default
SET search_path = scr2;
\echo '### events: PK -> (shard, tenant_id, id), then by shard'
ALTER TABLE events DROP CONSTRAINT events_pkey, ADD PRIMARY KEY (shard, tenant_id, id);
SELECT create_distributed_table('events','shard');
\echo '### transitions: add shard, PK (shard, tenant_id, event_id, seq), colocate with events'
ALTER TABLE transitions ADD COLUMN shard integer;
SELECT create_distributed_table('transitions','shard', colocate_with => 'events');
\echo '### ^ with nullable shard column; now NOT NULL + PK'
SELECT undistribute_table('transitions');
ALTER TABLE transitions ALTER COLUMN shard SET NOT NULL;
ALTER TABLE transitions DROP CONSTRAINT transitions_pkey, ADD PRIMARY KEY (shard, tenant_id, event_id, seq);
SELECT create_distributed_table('transitions','shard', colocate_with => 'events');
\echo '### schedules: PK (shard, tenant_id, id) + FK tenants (local table still)'
ALTER TABLE schedules DROP CONSTRAINT schedules_pkey, ADD PRIMARY KEY (shard, tenant_id, id);
SELECT create_distributed_table('schedules','shard', colocate_with => 'events');
\echo '### reference tables'
SELECT create_reference_table('tenants');
SELECT create_distributed_table('schedules','shard', colocate_with => 'events');
SELECT create_reference_table('api_keys');
SELECT create_reference_table('destinations');
SELECT create_reference_table('sources');
SELECT create_reference_table('bulk_jobs');
SELECT create_reference_table('nodes');
SELECT create_reference_table('leader_lease');
SELECT create_reference_table('shard_assignments');
SELECT create_reference_table('claim_leases');
SELECT create_reference_table('schedule_count_writes');
SELECT create_reference_table('store_settings');
SELECT create_reference_table('schema_migrations');
SELECT table_name, citus_table_type, distribution_column, colocation_id, shard_count FROM citus_tables WHERE table_name::text LIKE 'scr2.%' OR table_name::text NOT LIKE '%.%' ORDER BY 1;
