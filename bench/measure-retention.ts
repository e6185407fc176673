/**
 * Measures retention deletes on a real store: how fast eventDeleteTerminal deletes finished
 * events (with their traces) out of a large table, and what it does to a steady stream of fires
 * (claims and outcomes) running at the same time. Not a test; the numbers go in
 * docs/operations.md (Retention).
 *
 *   node --import tsx bench/measure-retention.ts sqlite|postgres [finished events, default 1000000]
 *
 * 1. Fill: N events of tenant `old`, inserted, claimed and succeeded through the store (each with
 *    3 trace entries, 2 of them rows: `created` is read from the event row), finished at 2026-01-01,
 *    so every one is past any retention period.
 * 2. A firing stream runs throughout: every 10 ms, claim the 10 events inserted on the previous tick
 *    (tenant `live`), record them succeeded, insert 10 more (1,000 fires/s). Lateness of a tick =
 *    when its claim returned minus when the tick was due.
 * 3. Phases: baseline (the stream alone); without the stream, back-to-back batches of 100 to
 *    1,000 for the raw delete rate and batch duration; with the stream, the Cleaner at the default
 *    pace for 20 s, then bounded only by its duty cycle (deletesPerSecondMax at its maximum) until
 *    every finished event is gone.
 * 4. PostgreSQL only: after the fill, the plan of a batch, VACUUM ANALYZE and CHECKPOINT (what
 *    autovacuum and time do to rows finished days ago); after the deletes, VACUUM, and a
 *    partition's detach + drop for comparison.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { pino } from 'pino';
import { SystemClock } from '../src/core/clock.ts';
import {
  Cleaner,
  CLEANER_DELETES_PER_SECOND_MAX,
  DEFAULT_CLEANER_OPTIONS,
  type CleanerBatch,
} from '../src/maintenance/cleaner.ts';
import { openPostgresStore, type PostgresStore } from '../src/store/postgres/postgres-store.ts';
import { SQL } from '../src/store/postgres/queries.ts';
import { openSqliteStore } from '../src/store/sqlite/sqlite-store.ts';
import type { NewEvent, Store } from '../src/store/store.ts';

const backend = process.argv[2];
const FINISHED = Number(process.argv[3] ?? 1_000_000);
const PG_URL = process.env.BELFRY_TEST_POSTGRES_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
const T0 = Date.UTC(2026, 0, 1);
const FILL_BATCH = 1_000;
const TICK_MS = 10;
const PER_TICK = 10;
const PHASE_MS = 20_000;
/** The duty-cycle phase runs until nothing is left, or this long. */
const DUTY_PHASE_MS_MAX = 180_000;
const RAW_BATCHES = 100;
const logger = pino({ level: 'silent' });
/** The paced phases, [batch size, events per second]: the defaults, or MEASURE_PACED="200:2000,100:5000". */
const PACED: [number, number][] = (
  process.env.MEASURE_PACED ?? `${DEFAULT_CLEANER_OPTIONS.batchSizeMax}:${DEFAULT_CLEANER_OPTIONS.deletesPerSecondMax}`
)
  .split(',')
  .map((p) => p.split(':').map(Number) as [number, number]);

function event(tenantId: string, id: string, fireAt: number): NewEvent {
  return {
    tenantId,
    id,
    shard: id.length % 256,
    fireAt,
    destination: { name: 'orders' },
    payload: '{"orderId":8812,"note":"a payload of a typical size for a webhook body"}',
    headers: {},
    group: null,
    retry: null,
    expireAt: null,
    tags: {},
    requestHash: id,
  };
}

async function fill(store: Store): Promise<void> {
  const started = performance.now();
  for (let b = 0; b < FINISHED; b += FILL_BATCH) {
    const events = Array.from({ length: Math.min(FILL_BATCH, FINISHED - b) }, (_, i) =>
      event('old', `e${String(b + i).padStart(8, '0')}`, T0),
    );
    const created = await store.eventInsertMany({ events, now: T0 });
    const claimed = await store.eventClaim({
      refs: created.map((r) => r.event),
      now: T0 + 1,
      owner: 'fill',
      leaseUntil: T0 + 60_000,
    });
    await store.eventRecordAttempts({
      outcomes: claimed.map((e) => ({
        tenantId: 'old',
        id: e.id,
        version: e.version,
        owner: 'fill',
        to: 'succeeded' as const,
        durationMs: 1,
      })),
      now: T0 + 2,
    });
  }
  console.log(
    JSON.stringify({ step: 'fill', finished: FINISHED, seconds: +((performance.now() - started) / 1_000).toFixed(1) }),
  );
}

function pct(values: number[], p: number): number {
  if (values.length === 0) return NaN;
  const s = [...values].sort((a, b) => a - b);
  return +s[Math.min(s.length - 1, Math.ceil((p / 100) * s.length) - 1)].toFixed(1);
}

interface StreamStats {
  /** Per tick: when its claim returned minus when the tick was due (ms); grows when the stream falls behind. */
  lateness: number[];
  /** Per tick: how long the claim statement took (ms). */
  claimMs: number[];
}

/** The firing stream: runs until stopped. */
function startStream(store: Store): { stop(): Promise<StreamStats> } {
  let stopped = false;
  let seq = 0;
  const lateness: number[] = [];
  const claimMs: number[] = [];
  const done = (async () => {
    let pending: { tenantId: string; id: string; version: number }[] = [];
    let due = performance.now();
    while (!stopped) {
      const wait = due - performance.now();
      if (wait > 0) await new Promise((r) => setTimeout(r, wait));
      const now = Date.now();
      const t = performance.now();
      const claimed = await store.eventClaim({ refs: pending, now, owner: 'stream', leaseUntil: now + 60_000 });
      claimMs.push(performance.now() - t);
      lateness.push(performance.now() - due);
      await store.eventRecordAttempts({
        outcomes: claimed.map((e) => ({
          tenantId: 'live',
          id: e.id,
          version: e.version,
          owner: 'stream',
          to: 'succeeded' as const,
          durationMs: 1,
        })),
        now,
      });
      const created = await store.eventInsertMany({
        events: Array.from({ length: PER_TICK }, () => event('live', `l${seq++}`, now)),
        now,
      });
      pending = created.map((r) => r.event);
      due += TICK_MS;
    }
  })();
  return { stop: async () => ((stopped = true), await done, { lateness, claimMs }) };
}

function summary(phase: string, stream: StreamStats | null, batches: CleanerBatch[], ms: number) {
  const events = batches.reduce((n, b) => n + b.events, 0);
  const transitions = batches.reduce((n, b) => n + b.transitions, 0);
  const d = batches.filter((b) => b.events > 0).map((b) => b.durationMs);
  console.log(
    JSON.stringify({
      phase,
      seconds: +(ms / 1_000).toFixed(1),
      deletedEvents: events,
      deletedTransitions: transitions,
      eventsPerSecond: Math.round(events / (ms / 1_000)),
      batchMs: { p50: pct(d, 50), p99: pct(d, 99), max: pct(d, 100) },
      ...(stream
        ? {
            ticks: stream.lateness.length,
            claimMs: { p50: pct(stream.claimMs, 50), p99: pct(stream.claimMs, 99), max: pct(stream.claimMs, 100) },
            fireLatenessMs: {
              p50: pct(stream.lateness, 50),
              p99: pct(stream.lateness, 99),
              max: pct(stream.lateness, 100),
            },
          }
        : {}),
    }),
  );
}

/** Runs the cleaner (over tenants old and live) with the stream for PHASE_MS or until nothing is left. */
async function cleanerPhase(
  store: Store,
  phase: string,
  deletesPerSecondMax: number,
  phaseMs: number,
  batchSizeMax: number,
): Promise<void> {
  const batches: CleanerBatch[] = [];
  const stream = startStream(store);
  const cleaner = new Cleaner(
    { store, clock: new SystemClock(), logger, isLeader: () => true, onBatch: (b) => batches.push(b) },
    {
      deletesPerSecondMax,
      batchSizeMax,
      defaults: { succeeded: 86_400_000, canceled: 86_400_000, discarded: 86_400_000, archived: 86_400_000 },
    },
  );
  const started = performance.now();
  const pass = cleaner.runOnce();
  await Promise.race([pass, new Promise((r) => setTimeout(r, phaseMs))]);
  await cleaner.stop();
  await pass;
  summary(phase, await stream.stop(), batches, performance.now() - started);
  const full = batches.filter((b) => b.events > 0);
  const tenth = Math.max(1, Math.floor(full.length / 10));
  const mean = (bs: CleanerBatch[]) => +(bs.reduce((n, b) => n + b.durationMs, 0) / bs.length).toFixed(1);
  if (full.length >= 20)
    console.log(
      JSON.stringify({
        phase,
        batchMsMeanFirstTenth: mean(full.slice(0, tenth)),
        batchMsMeanLastTenth: mean(full.slice(-tenth)),
      }),
    );
}

async function main(): Promise<void> {
  let store: Store;
  let cleanup: () => Promise<void>;
  if (backend === 'sqlite') {
    const dir = mkdtempSync(join(tmpdir(), 'belfry-measure-'));
    const s = await openSqliteStore({ dataDir: dir });
    store = s;
    cleanup = async () => {
      await s.close();
      rmSync(dir, { recursive: true, force: true });
    };
  } else if (backend === 'postgres') {
    const schema = `belfry_measure_${randomBytes(4).toString('hex')}`;
    const s = await openPostgresStore({ url: PG_URL, schema });
    store = s;
    cleanup = async () => {
      // A fresh pool: the store's may have lost its connections (a database restart).
      const drop = await openPostgresStore({ url: PG_URL, schema }).catch(() => null);
      await drop?.pool
        .query(`DROP SCHEMA ${schema} CASCADE`)
        .catch((err: Error) => console.error(`left schema ${schema}: ${err.message}`));
      await drop?.close();
      await s.close().catch(() => {});
    };
  } else {
    throw new Error('usage: bench/measure-retention.ts sqlite|postgres [finished events]');
  }
  try {
    for (const id of ['old', 'live']) await store.tenantCreate({ id, name: id, settings: {}, createdAt: T0 });
    await fill(store);
    if (backend === 'postgres') await postgresSettle(store as PostgresStore);

    const baseline = startStream(store);
    await new Promise((r) => setTimeout(r, PHASE_MS / 2));
    summary('baseline: stream only', await baseline.stop(), [], PHASE_MS / 2);
    for (const size of [100, 200, 500, 1_000]) {
      const raw: CleanerBatch[] = [];
      const started = performance.now();
      for (let i = 0; i < RAW_BATCHES; i++) {
        const t = performance.now();
        const r = await store.eventDeleteTerminal({
          tenantId: 'old',
          state: 'succeeded',
          finishedBefore: T0 + 10,
          limit: size,
        });
        raw.push({ tenantId: 'old', state: 'succeeded', ...r, durationMs: performance.now() - t });
        if (r.events < size) break;
      }
      summary(`back-to-back batches of ${size}, no stream`, null, raw, performance.now() - started);
    }
    for (const [batch, rate] of PACED)
      await cleanerPhase(store, `cleaner at ${rate}/s, batches of ${batch}`, rate, PHASE_MS, batch);
    await cleanerPhase(
      store,
      'cleaner bounded by its duty cycle only',
      CLEANER_DELETES_PER_SECOND_MAX,
      DUTY_PHASE_MS_MAX,
      DEFAULT_CLEANER_OPTIONS.batchSizeMax,
    );

    if (backend === 'postgres') await postgresExtras(store as PostgresStore);
  } catch (err) {
    console.error(err);
    process.exitCode = 1;
  } finally {
    await cleanup();
  }
}

/**
 * After the fill: the plan of a delete batch (rolled back), then what autovacuum would have done
 * to rows finished days ago (VACUUM ANALYZE: hint bits set, visibility map, statistics), and a
 * CHECKPOINT, so the phases do not measure the fill's own write-back.
 */
async function postgresSettle(store: PostgresStore): Promise<void> {
  const client = await store.pool.connect();
  try {
    await client.query('BEGIN');
    const plan = await client.query(`EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF) ${SQL.eventDeleteTerminal}`, [
      'old',
      'succeeded',
      T0 + 10,
      500,
    ]);
    console.log(plan.rows.map((r) => r['QUERY PLAN']).join('\n'));
    await client.query('ROLLBACK');
  } finally {
    client.release();
  }
  console.log(
    JSON.stringify({
      step: 'settle',
      vacuumAnalyzeSeconds: await timed(store, 'VACUUM ANALYZE events, transitions'),
      checkpointSeconds: await timed(store, 'CHECKPOINT'),
    }),
  );
}

async function timed(store: PostgresStore, sql: string): Promise<number> {
  const t = performance.now();
  await store.pool.query(sql);
  return +((performance.now() - t) / 1_000).toFixed(2);
}

/** VACUUM after the deletes; and what dropping a time partition of the same size costs. */
async function postgresExtras(store: PostgresStore): Promise<void> {
  const left = (await store.pool.query<{ n: number }>(`SELECT count(*)::int AS n FROM events WHERE tenant_id = 'old'`))
    .rows[0].n;
  console.log(
    JSON.stringify({
      step: 'vacuum',
      oldEventsLeft: left,
      vacuumEventsSeconds: await timed(store, 'VACUUM events'),
      vacuumTransitionsSeconds: await timed(store, 'VACUUM transitions'),
    }),
  );
  await store.pool.query(
    `CREATE TABLE part_demo (tenant_id text, event_id text, seq int, at bigint, detail text) PARTITION BY RANGE (at)`,
  );
  await store.pool.query(`CREATE TABLE part_demo_old PARTITION OF part_demo FOR VALUES FROM (0) TO (1000000000)`);
  await store.pool.query(
    `CREATE TABLE part_demo_new PARTITION OF part_demo FOR VALUES FROM (1000000000) TO (2000000000)`,
  );
  await store.pool.query(
    `INSERT INTO part_demo SELECT 'old', 'e' || i, 1, i, repeat('x', 60) FROM generate_series(1, ${FINISHED}) i`,
  );
  await store.pool.query(`CREATE INDEX ON part_demo (tenant_id, event_id, seq)`);
  const detach = await timed(store, 'ALTER TABLE part_demo DETACH PARTITION part_demo_old');
  const drop = await timed(store, 'DROP TABLE part_demo_old');
  console.log(JSON.stringify({ step: 'partition', rows: FINISHED, detachSeconds: detach, dropSeconds: drop }));
  await store.pool.query('DROP TABLE part_demo');
}

await main();
