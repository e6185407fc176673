\timing on
SET citus.shard_count = 256;
CREATE SCHEMA scr4;
CREATE TABLE scr4.events (LIKE scr3.events INCLUDING DEFAULTS INCLUDING INDEXES INCLUDING CONSTRAINTS);
SELECT create_distributed_table('scr4.events', 'shard');
CREATE TABLE scr4.transitions (LIKE scr3.transitions INCLUDING ALL);
SELECT create_distributed_table('scr4.transitions', 'shard', colocate_with => 'scr4.events');
\timing off
SELECT 'shard_count 32' AS t, count(DISTINCT get_shard_id_for_distribution_column('scr3.events', s)) AS citus_shards_used,
  min(n), max(n) FROM generate_series(0,255) s, LATERAL (SELECT count(*) AS n FROM generate_series(0,255) x WHERE get_shard_id_for_distribution_column('scr3.events', x) = get_shard_id_for_distribution_column('scr3.events', s)) c;
SELECT 'shard_count 256' AS t, count(DISTINCT get_shard_id_for_distribution_column('scr4.events', s)) AS citus_shards_used,
  min(n), max(n) FROM generate_series(0,255) s, LATERAL (SELECT count(*) AS n FROM generate_series(0,255) x WHERE get_shard_id_for_distribution_column('scr4.events', x) = get_shard_id_for_distribution_column('scr4.events', s)) c;
SELECT nodeport, count(*) FROM citus_shards WHERE table_name = 'scr4.events'::regclass GROUP BY 1;
