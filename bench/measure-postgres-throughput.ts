/**
 * Measures the PostgreSQL store's write paths on one connection-pool, in a throwaway schema:
 * eventInsertMany (100k events, batches of 1000; strict then relaxed tenant), claim + record
 * (20k events, batches of 500), and single-event inserts (8 in flight; strict then relaxed).
 * Not a test; the numbers go in docs/postgres.md.
 *
 *   node --import tsx bench/measure-postgres-throughput.ts [postgres://...]
 */
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { shardOf } from '../src/core/shard.ts';
import type { NewEvent } from '../src/store/store.ts';
import { openPostgresStore, type PostgresStore } from '../src/store/postgres/postgres-store.ts';

const URL = process.argv[2] ?? process.env.BELFRY_TEST_POSTGRES_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
const INSERT_TOTAL = 100_000;
const INSERT_BATCH = 1_000;
const CLAIM_TOTAL = 20_000;
const CLAIM_BATCH = 500;
const SINGLE_TOTAL = 4_000;
const SINGLE_CONCURRENCY = 8;
const T0 = Date.UTC(2026, 0, 1);

function event(tenantId: string, i: number): NewEvent {
  const id = `evt-${i.toString().padStart(8, '0')}`;
  return {
    tenantId,
    id,
    shard: shardOf(tenantId, id),
    fireAt: T0 + (i % 3_600) * 1_000,
    destination: { name: 'orders' },
    payload: `{"orderId":${i},"note":"a payload of a typical size for a webhook body"}`,
    headers: {},
    group: null,
    retry: null,
    expireAt: null,
    tags: {},
    requestHash: `h${i}`,
  };
}

async function insertRate(store: PostgresStore, tenantId: string): Promise<number> {
  const started = performance.now();
  for (let b = 0; b < INSERT_TOTAL / INSERT_BATCH; b++) {
    const events: NewEvent[] = [];
    for (let i = 0; i < INSERT_BATCH; i++) events.push(event(tenantId, b * INSERT_BATCH + i));
    const results = await store.eventInsertMany({ events, now: T0 });
    if (results.some((r) => r.kind !== 'created')) throw new Error('measure: an insert was not created');
  }
  return INSERT_TOTAL / ((performance.now() - started) / 1_000);
}

/** One event per call, SINGLE_CONCURRENCY calls in flight: where the commit's WAL flush shows. */
async function singleRate(store: PostgresStore, tenantId: string, offset: number): Promise<number> {
  let next = 0;
  const worker = async () => {
    while (next < SINGLE_TOTAL) {
      const i = offset + next++;
      await store.eventInsertMany({ events: [event(tenantId, i)], now: T0 });
    }
  };
  const started = performance.now();
  await Promise.all(Array.from({ length: SINGLE_CONCURRENCY }, worker));
  return SINGLE_TOTAL / ((performance.now() - started) / 1_000);
}

async function claimRecordRate(store: PostgresStore, tenantId: string): Promise<number> {
  const started = performance.now();
  for (let b = 0; b < CLAIM_TOTAL / CLAIM_BATCH; b++) {
    const refs = [];
    for (let i = 0; i < CLAIM_BATCH; i++)
      refs.push({ tenantId, id: event(tenantId, b * CLAIM_BATCH + i).id, version: 1 });
    const now = T0 + 7_200_000;
    const claimed = await store.eventClaim({ refs, now, owner: 'node-a', leaseUntil: now + 60_000 });
    if (claimed.length !== CLAIM_BATCH) throw new Error(`measure: claimed ${claimed.length} of ${CLAIM_BATCH}`);
    const applied = await store.eventRecordAttempts({
      outcomes: claimed.map((e) => ({
        tenantId,
        id: e.id,
        version: e.version,
        owner: 'node-a',
        to: 'succeeded',
        status: 200,
        durationMs: 3,
      })),
      now: now + 5,
    });
    if (!applied.every(Boolean)) throw new Error('measure: an outcome did not apply');
  }
  return CLAIM_TOTAL / ((performance.now() - started) / 1_000);
}

const schema = `belfry_measure_${randomBytes(4).toString('hex')}`;
const store = await openPostgresStore({ url: URL, schema });
try {
  await store.tenantCreate({ id: 'strict', name: 'strict', settings: {}, createdAt: T0 });
  await store.tenantCreate({ id: 'relaxed', name: 'relaxed', settings: { durability: 'relaxed' }, createdAt: T0 });
  const strictInsert = await insertRate(store, 'strict');
  const relaxedInsert = await insertRate(store, 'relaxed');
  const claimRecord = await claimRecordRate(store, 'strict');
  const strictSingle = await singleRate(store, 'strict', INSERT_TOTAL);
  const relaxedSingle = await singleRate(store, 'relaxed', INSERT_TOTAL);
  console.log(
    `eventInsertMany, batches of ${INSERT_BATCH}: strict ${Math.round(strictInsert)} events/s, relaxed ${Math.round(relaxedInsert)} events/s`,
  );
  console.log(
    `eventInsertMany, one event per call, ${SINGLE_CONCURRENCY} in flight: strict ${Math.round(strictSingle)} events/s, relaxed ${Math.round(relaxedSingle)} events/s`,
  );
  console.log(`eventClaim + eventRecordAttempts, batches of ${CLAIM_BATCH}: ${Math.round(claimRecord)} events/s`);
} finally {
  await store.close();
  const admin = new pg.Client({ connectionString: URL });
  await admin.connect();
  await admin.query(`DROP SCHEMA "${schema}" CASCADE`);
  await admin.end();
}
