/**
 * Prints EXPLAIN ANALYZE of every hot query of the PostgreSQL store on a populated throwaway
 * schema (100k events over 256 shards and 10 tenants, a tenth of them grouped, a mix of states),
 * so docs/postgres.md can show the real plans. Writes run inside a rolled-back transaction.
 *
 *   node --import tsx bench/explain-hot-queries.ts [--no-statistics] [postgres://...]
 */
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { shardOf } from '../src/core/shard.ts';
import type { NewEvent } from '../src/store/store.ts';
import { LIST_EXAMINED_ROWS_MAX } from '../src/store/event-list-plan.ts';
import { perShardLimit } from '../src/store/postgres/due-list.ts';
import { openPostgresStore } from '../src/store/postgres/postgres-store.ts';
import { SQL, TX, type QueryName } from '../src/store/postgres/queries.ts';

const args = process.argv.slice(2);
/** --no-statistics: plan as a table never analyzed does (a fresh table, or autovacuum off). */
const STATISTICS = !args.includes('--no-statistics');
const URL =
  args.find((a) => !a.startsWith('--')) ??
  process.env.BELFRY_TEST_POSTGRES_URL ??
  'postgres://postgres@127.0.0.1:5432/postgres';
const EVENTS = 100_000;
const TENANTS = 10;
const API_KEYS = 2_000;
const T0 = Date.UTC(2026, 0, 1);
const HOUR_MS = 3_600_000;

const schema = `belfry_explain_${randomBytes(4).toString('hex')}`;
const store = await openPostgresStore({ url: URL, schema });

function event(i: number): NewEvent {
  const tenantId = `tenant-${i % TENANTS}`;
  const id = `evt-${i.toString().padStart(7, '0')}`;
  const group = i % 10 === 0 ? `grp-${Math.floor(i / 50)}` : null;
  return {
    tenantId,
    id,
    shard: shardOf(tenantId, group ?? id),
    fireAt: T0 + Math.floor((i * HOUR_MS) / EVENTS),
    destination: { name: i % 3 === 0 ? 'billing' : 'orders' },
    payload: `{"n":${i}}`,
    headers: {},
    group,
    retry: null,
    expireAt: null,
    tags: {},
    requestHash: `h${i}`,
  };
}

async function populate(): Promise<void> {
  for (let t = 0; t < TENANTS; t++)
    await store.tenantCreate({ id: `tenant-${t}`, name: `tenant ${t}`, settings: {}, createdAt: T0 });
  for (let k = 0; k < API_KEYS; k++) {
    const tenantId = `tenant-${k % TENANTS}`;
    await store.apiKeyCreate({
      id: `key-${k}`,
      tenantId,
      hash: `sha-${k}`,
      prefix: `bk_${k}`,
      createdAt: T0,
      revokedAt: null,
    });
  }
  // Two nodes: node-a owns the odd shards, node-b the even ones.
  const lease = await store.leaderAttemptElect({ nodeId: 'node-a', leaseMs: 600_000, now: Date.now() });
  const assignments = [...Array(256).keys()].map((shard) => ({ shard, nodeId: shard % 2 ? 'node-a' : 'node-b' }));
  await store.shardAssign({ leaderId: 'node-a', epoch: lease!.epoch, assignments, now: Date.now() });
  for (let b = 0; b < EVENTS; b += 1_000) {
    const batch: NewEvent[] = [];
    for (let i = b; i < b + 1_000; i++) batch.push(event(i));
    await store.eventInsertMany({ events: batch, now: T0 });
  }
  // The first 40% of the hour has fired: claim it, and finish most of it (some to a retry).
  const now = T0 + 0.4 * HOUR_MS;
  for (;;) {
    const due = await store.eventListDue({ shards: null, after: null, untilMs: now, limit: 1_000 });
    if (due.length === 0) break;
    const claimed = await store.eventClaim({ refs: due, now, owner: 'node-a', leaseUntil: now + 60_000 });
    const finish = claimed.filter((_, k) => k % 10 !== 0);
    await store.eventRecordAttempts({
      outcomes: finish.map((e, k) => ({
        tenantId: e.tenantId,
        id: e.id,
        version: e.version,
        owner: 'node-a',
        to: k % 20 === 0 ? ('awaiting_retry' as const) : ('succeeded' as const),
        retryAt: now + 600_000,
        durationMs: 5,
      })),
      now,
    });
    if (claimed.length === 0) break;
  }
  if (STATISTICS) await store.pool.query('VACUUM ANALYZE');
}

async function explain(
  client: pg.PoolClient,
  title: string,
  name: QueryName,
  values: unknown[],
  begin = 'BEGIN',
): Promise<void> {
  await client.query(begin);
  try {
    const res = await client.query<{ 'QUERY PLAN': string }>(
      `EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY ON) ${SQL[name]}`,
      values,
    );
    console.log(`\n### ${title} (${name})\n\n\`\`\`\n${res.rows.map((r) => r['QUERY PLAN']).join('\n')}\n\`\`\``);
  } finally {
    await client.query('ROLLBACK');
  }
}

try {
  await populate();
  const counts: Record<string, number> = {};
  for (const r of await store.eventCountByTenantState()) counts[r.state] = (counts[r.state] ?? 0) + r.n;
  console.log(`events: ${JSON.stringify(counts)}`);
  const now = T0 + 0.4 * HOUR_MS;
  const evenShards = [...Array(256).keys()].filter((s) => s % 2 === 0);
  const due = await store.eventListDue({ shards: null, after: null, untilMs: now + 60_000, limit: 500 });
  const executing = (
    await store.pool.query<{ tenant_id: string; id: string; version: number }>(
      `SELECT tenant_id, id, version FROM events WHERE state = 'executing' LIMIT 500`,
    )
  ).rows;
  const client = await store.pool.connect();
  try {
    const cursor = [now, '', ''];
    const k128 = perShardLimit(2_000, 128);
    await explain(client, 'read-ahead of a node owning 128 shards, 3 s ahead', 'eventListDueShards', [
      now + 3_000,
      ...cursor,
      2_000,
      k128,
      evenShards,
    ]);
    await explain(
      client,
      'overdue sweep of a node owning 128 shards in a backlog (everything due)',
      'eventListDueShards',
      [T0 + 2 * HOUR_MS, ...cursor, 2_000, k128, evenShards],
    );
    await explain(
      client,
      'the same sweep reading the full page from every shard (what the merge avoids)',
      'eventListDueShards',
      [T0 + 2 * HOUR_MS, ...cursor, 2_000, 2_000, evenShards],
    );
    await explain(client, 'read-ahead over all shards (single node)', 'eventListDueAll', [
      now + 3_000,
      ...cursor,
      2_000,
      perShardLimit(2_000, 256),
    ]);
    await explain(
      client,
      'refill of one virtual queue from its overflow mark (128 shards owned)',
      'eventListDueQueue',
      ['tenant-3', 'name:orders', T0 + 2 * HOUR_MS, T0, '', 2_000, evenShards],
    );
    await explain(client, 'claim of 500 due refs', 'eventClaim', [
      due.map((r) => r.tenantId),
      due.map((r) => r.id),
      due.map((r) => r.version),
      'node-b',
      now + 60_000,
      now,
      '{"owner":"node-b"}',
      false,
    ]);
    await explain(client, 'claim of 500 due refs, fenced by the shard map', 'eventClaim', [
      due.map((r) => r.tenantId),
      due.map((r) => r.id),
      due.map((r) => r.version),
      'node-b',
      now + 60_000,
      now,
      '{"owner":"node-b"}',
      true,
    ]);
    await explain(client, 'group head', 'eventGroupFirst', ['tenant-0', 'grp-900']);
    await explain(client, 'outcomes of 500 claimed events', 'eventRecordAttempts', [
      executing.map((r) => r.tenant_id),
      executing.map((r) => r.id),
      executing.map((r) => r.version),
      executing.map(() => 'node-a'),
      executing.map(() => 'succeeded'),
      executing.map(() => null),
      executing.map(() => 200),
      executing.map(() => null),
      executing.map(() => 4),
      now,
    ]);
    await explain(client, 'rescue of expired leases (at most 1,000)', 'eventRescue', [
      now + 120_000,
      null,
      1_000,
      now + 120_000,
      null,
    ]);
    await explain(client, 'get one event', 'eventGet', ['tenant-3', 'evt-0050003']);
    const top = ['tenant-3', Number.MAX_SAFE_INTEGER];
    const walked = LIST_EXAMINED_ROWS_MAX;
    await explain(
      client,
      'list a tenant, newest first',
      'eventListByTenant',
      [...top, null, null, null, null, null, 51, 51, null],
      TX.beginOrderedWalk,
    );
    await explain(
      client,
      'list a tenant by state (awaiting_retry)',
      'eventListByState',
      [...top, 'awaiting_retry', null, null, null, null, 51, 51, null],
      TX.beginOrderedWalk,
    );
    await explain(
      client,
      'list a tenant by state (scheduled)',
      'eventListByState',
      [...top, 'scheduled', null, null, null, null, 51, 51, null],
      TX.beginOrderedWalk,
    );
    await explain(
      client,
      'list a tenant by destination',
      'eventListByDestination',
      [...top, null, 'billing', null, null, null, 51, 51, null],
      TX.beginOrderedWalk,
    );
    await explain(
      client,
      'list a group',
      'eventListByGroup',
      ['tenant-0', Number.MAX_SAFE_INTEGER, null, null, 'grp-900', null, null, 51, 51, null],
      TX.beginOrderedWalk,
    );
    await explain(
      client,
      'list succeeded events of a destination (a bounded walk)',
      'eventListByDestination',
      [...top, 'succeeded', 'billing', null, null, null, walked, 51, null],
      TX.beginOrderedWalk,
    );
    await explain(
      client,
      'list by fireAt range (a bounded walk)',
      'eventListByTenant',
      [...top, null, null, null, T0 + HOUR_MS / 2, T0 + HOUR_MS / 2 + 60_000, walked, 51, null],
      TX.beginOrderedWalk,
    );
    await explain(client, 'trace of one event', 'transitionList', ['tenant-0', 'evt-0000010', 0, 100]);
    await explain(client, 'API key by hash', 'apiKeyByHash', ['sha-4']);
    await explain(client, 'retention: 200 finished events and their traces', 'eventDeleteTerminal', [
      'tenant-3',
      'succeeded',
      now + 1,
      200,
    ]);
  } finally {
    client.release();
  }
} finally {
  await store.close();
  const admin = new pg.Client({ connectionString: URL });
  await admin.connect();
  await admin.query(`DROP SCHEMA "${schema}" CASCADE`);
  await admin.end();
}
