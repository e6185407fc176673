#!/usr/bin/env bash
# Prints, for psql, Belfry's migrations 001..019 as migrate.ts runs them (one transaction under the
# advisory lock) with the Citus conversion of each migration's new tables after it: the PK changes,
# transitions' shard column, create_distributed_table by shard (colocated) or create_reference_table.
#   bash migrations-one-tx.sh SCHEMA | psql -h 127.0.0.1 -p PORT -U postgres postgres
set -euo pipefail
schema=${1:?SCHEMA}
m="$(cd "$(dirname "$0")/../../src/store/postgres/migrations" && pwd)"
echo '\set ON_ERROR_STOP 1'
echo 'BEGIN;'
echo 'SET LOCAL statement_timeout = 0;'
echo "SELECT pg_advisory_xact_lock(hashtext('belfry.migrate'), hashtext('$schema'));"
echo "CREATE SCHEMA IF NOT EXISTS \"$schema\";"
echo "SET LOCAL search_path = $schema;"
echo 'CREATE TABLE IF NOT EXISTS schema_migrations (version integer PRIMARY KEY, name text NOT NULL, applied_at bigint NOT NULL);'
for f in "$m"/*.sql; do
  v=$(basename "$f" | cut -c1-3)
  echo "\\echo '### migration $v'"
  cat "$f"
  case $v in
    001) cat <<'SQL'
\echo '### citus 001'
ALTER TABLE events DROP CONSTRAINT events_pkey, ADD PRIMARY KEY (shard, tenant_id, id);
ALTER TABLE transitions ADD COLUMN shard integer NOT NULL;
ALTER TABLE transitions DROP CONSTRAINT transitions_pkey, ADD PRIMARY KEY (shard, tenant_id, event_id, seq);
SELECT create_reference_table('schema_migrations');
SELECT create_reference_table('tenants');
SELECT create_reference_table('api_keys');
SELECT create_reference_table('destinations');
SELECT create_distributed_table('events', 'shard');
SELECT create_distributed_table('transitions', 'shard', colocate_with => 'events');
SQL
      ;;
    002) echo "SELECT create_reference_table('nodes'); SELECT create_reference_table('leader_lease'); SELECT create_reference_table('shard_assignments');" ;;
    003) echo "SELECT create_reference_table('claim_leases');" ;;
    009) echo "SELECT create_reference_table('bulk_jobs');" ;;
    # schedules became a Citus local table at its CREATE (FK to the reference table tenants): one subcommand per ALTER.
    010) echo "ALTER TABLE schedules DROP CONSTRAINT schedules_pkey; ALTER TABLE schedules ADD PRIMARY KEY (shard, tenant_id, id); SELECT create_distributed_table('schedules', 'shard', colocate_with => 'events');" ;;
    011) echo "SELECT create_reference_table('sources');" ;;
    017) echo "SELECT create_reference_table('schedule_count_writes');" ;;
    018) echo "SELECT create_reference_table('store_settings');" ;;
  esac
  echo "INSERT INTO schema_migrations VALUES ($((10#$v)), '$(basename "$f" .sql)', 0);"
done
echo 'COMMIT;'
