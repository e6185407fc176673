/**
 * Measures a bulk shift and the forecast on a real store. Not a test; the numbers go in
 * docs/bulk-and-forecast.md. Do not run it at 10,000,000 on a shared machine.
 *
 *   node --import tsx bench/measure-bulk.ts sqlite|postgres [events, default 100000] [batch, default 500] [pause factor, default 1]
 *
 * 1. Fill: N scheduled events of one tenant, due over the next 24 hours, a tenth of them typed.
 * 2. Forecast: the next 24 hours in 1-minute buckets (1440), by destination; then the next hour;
 *    each timed (best of 3), and its plan shown.
 * 3. Bulk: one job shifting every event of the tenant by +1h (filter: the destination), run by a
 *    BulkRunner with the node's defaults (or the batch and pause given) until it succeeds:
 *    events shifted per second, and the job's counts.
 *
 * SQLite runs on its store thread (as a node does).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { pino } from 'pino';
import { SystemClock } from '../src/core/clock.ts';
import { newSortableId } from '../src/core/ids.ts';
import { BulkRunner, DEFAULT_BULK_RUNNER_OPTIONS } from '../src/bulk/runner.ts';
import { openPostgresStore } from '../src/store/postgres/postgres-store.ts';
import { openSqliteThreadStore } from '../src/store/sqlite/thread-store.ts';
import type { NewEvent, Store } from '../src/store/store.ts';

const backend = process.argv[2];
const N = Number(process.argv[3] ?? 100_000);
const BATCH = Number(process.argv[4] ?? DEFAULT_BULK_RUNNER_OPTIONS.batchSize);
const PAUSE = Number(process.argv[5] ?? DEFAULT_BULK_RUNNER_OPTIONS.pauseFactor);
const PG_URL = process.env.BELFRY_TEST_POSTGRES_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
const DAY_MS = 86_400_000;
const TENANT = 'measure';
const logger = pino({ level: 'silent' });

async function open(): Promise<{ store: Store; cleanup(): Promise<void> }> {
  if (backend === 'sqlite') {
    const dir = mkdtempSync(join(tmpdir(), 'belfry-measure-bulk-'));
    const store = await openSqliteThreadStore({ dataDir: dir });
    return {
      store: store as unknown as Store,
      cleanup: async () => {
        await store.close();
        rmSync(dir, { recursive: true, force: true });
      },
    };
  }
  if (backend === 'postgres') {
    const schema = `belfry_measure_${randomBytes(4).toString('hex')}`;
    const store = await openPostgresStore({ url: PG_URL, schema });
    return {
      store,
      cleanup: async () => {
        await store.pool.query(`DROP SCHEMA "${schema}" CASCADE`);
        await store.close();
      },
    };
  }
  throw new Error('usage: measure-bulk.ts sqlite|postgres [events] [batch] [pause factor]');
}

async function timed<T>(fn: () => Promise<T>): Promise<[T, number]> {
  let best = Infinity;
  let out: T | undefined;
  for (let i = 0; i < 3; i++) {
    const t = performance.now();
    out = await fn();
    best = Math.min(best, performance.now() - t);
  }
  return [out!, best];
}

const { store, cleanup } = await open();
try {
  const now = Date.now();
  await store.tenantCreate({ id: TENANT, name: TENANT, settings: {}, createdAt: now });
  const fillStart = performance.now();
  for (let b = 0; b < N; b += 1_000) {
    const events: NewEvent[] = [];
    for (let i = b; i < Math.min(N, b + 1_000); i++) {
      events.push({
        tenantId: TENANT,
        id: `e-${i}`,
        shard: i % 256,
        fireAt: now + 60_000 + Math.floor((i * DAY_MS) / N),
        destination: { name: i % 4 ? 'orders' : 'billing' },
        payload: '{"orderId":8812,"note":"a payload of a typical size for a webhook body"}',
        headers: {},
        group: null,
        retry: null,
        expireAt: null,
        tags: {},
        type: i % 10 ? null : 'order.timeout',
        requestHash: '',
      });
    }
    await store.eventInsertMany({ events, now });
  }
  console.log(`fill: ${N} events in ${((performance.now() - fillStart) / 1000).toFixed(1)} s`);

  const [day, dayMs] = await timed(() =>
    store.eventForecast({
      tenantId: TENANT,
      fromMs: Math.floor(now / 60_000) * 60_000,
      toMs: Math.floor(now / 60_000) * 60_000 + DAY_MS,
      bucketMs: 60_000,
      by: 'destination',
    }),
  );
  const [, hourMs] = await timed(() =>
    store.eventForecast({
      tenantId: TENANT,
      fromMs: Math.floor(now / 60_000) * 60_000,
      toMs: now + 3_600_000,
      bucketMs: 60_000,
      by: 'none',
    }),
  );
  const [, allMs] = await timed(() =>
    store.eventForecast({
      tenantId: null,
      fromMs: Math.floor(now / 60_000) * 60_000,
      toMs: now + 3_600_000,
      bucketMs: 60_000,
      by: 'tenant',
    }),
  );
  console.log(
    `forecast: 24 h in 1 m buckets by destination ${dayMs.toFixed(1)} ms (${day.reduce((a, r) => a + r.n, 0)} events); next hour ${hourMs.toFixed(1)} ms; next hour, all tenants, by tenant ${allMs.toFixed(1)} ms`,
  );

  const clock = new SystemClock();
  const id = `bulk_${newSortableId(now)}`;
  await store.bulkJobCreate({
    job: {
      tenantId: TENANT,
      id,
      state: 'running',
      filter: { destination: 'orders' },
      action: { kind: 'shift', shiftMs: 3_600_000 },
      cursor: null,
      matched: 0,
      done: 0,
      skipped: 0,
      errors: [],
      leaseOwner: null,
      leaseUntil: null,
      createdAt: now,
      updatedAt: now,
      finishedAt: null,
    },
    runningMax: 2,
  });
  const runner = new BulkRunner(
    { store, clock, logger, owner: 'measure', events: { changed: () => {} } },
    { batchSize: BATCH, pauseFactor: PAUSE },
  );
  const started = performance.now();
  const run = await runner.runOnce();
  const seconds = (performance.now() - started) / 1000;
  const job = await store.bulkJobGet({ tenantId: TENANT, id });
  console.log(
    `bulk shift (${backend}, batch ${BATCH}, pause factor ${PAUSE}): ${job?.done} events shifted in ${seconds.toFixed(1)} s = ${Math.round((job?.done ?? 0) / seconds)} events/s; ${run.steps} steps; job ${job?.state}, matched ${job?.matched}, skipped ${job?.skipped}`,
  );
} finally {
  await cleanup();
}
