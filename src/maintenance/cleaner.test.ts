/**
 * The retention cleaner on a real SQLite store and a SimClock: leader-only (through the real
 * elector), per-tenant periods over the node's defaults, bounded and paced batches, and an early
 * end when the lease is lost or the cleaner stops. Nothing sleeps: the tests drive the SimClock.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, it } from 'node:test';
import { pino } from 'pino';
import { SimClock } from '../core/clock.ts';
import { RETENTION_DEFAULTS } from '../core/retention.ts';
import type { NewEvent } from '../store/store.ts';
import { openSqliteStore, type SqliteStore } from '../store/sqlite/sqlite-store.ts';
import { Cleaner, cleanerPauseMs, type CleanerBatch, type CleanerDeps, type CleanerOptions } from './cleaner.ts';
import { Elector } from '../cluster/elector.ts';

const logger = pino({ level: 'silent' });
const HOUR_MS = 3_600_000;
const DAY_MS = 24 * HOUR_MS;
let store: SqliteStore;
let dataDir: string;
let tenantSeq = 0;

// A fresh store per test: a pass looks at every tenant, so tests must not see each other's rows.
beforeEach(async () => {
  dataDir = mkdtempSync(join(tmpdir(), 'belfry-cleaner-'));
  store = await openSqliteStore({ dataDir });
});
afterEach(async () => {
  await store.close();
  rmSync(dataDir, { recursive: true, force: true });
});

/** A tenant with these settings. */
async function newTenant(settings: Record<string, unknown> = {}): Promise<string> {
  const id = `t-${++tenantSeq}`;
  await store.tenantCreate({ id, name: id, settings, createdAt: 0 });
  return id;
}

function event(tenantId: string, id: string, fireAt: number): NewEvent {
  return {
    tenantId,
    id,
    shard: 0,
    fireAt,
    destination: { name: 'd' },
    payload: '{}',
    headers: {},
    group: null,
    retry: null,
    expireAt: null,
    tags: {},
    requestHash: id,
  };
}

/** Creates events and moves them to `state` at `at` (through a claim and an outcome, as the dispatcher does). */
async function finished(tenantId: string, ids: string[], state: 'succeeded' | 'archived', at: number): Promise<void> {
  const created = await store.eventInsertMany({ events: ids.map((id) => event(tenantId, id, at - 2)), now: at - 2 });
  const claimed = await store.eventClaim({
    refs: created.map((r) => r.event),
    now: at - 1,
    owner: 'o',
    leaseUntil: at + HOUR_MS,
  });
  assert.equal(claimed.length, ids.length);
  const applied = await store.eventRecordAttempts({
    outcomes: claimed.map((e) => ({ tenantId, id: e.id, version: e.version, owner: 'o', to: state, durationMs: 1 })),
    now: at,
  });
  assert.ok(applied.every(Boolean));
}

async function exists(tenantId: string, id: string): Promise<boolean> {
  return (await store.eventGet({ tenantId, id })) !== null;
}

function makeCleaner(clock: SimClock, opts: Partial<CleanerOptions>, deps: Partial<CleanerDeps> = {}) {
  const batches: (CleanerBatch & { atMs: number })[] = [];
  const cleaner = new Cleaner(
    {
      store,
      clock,
      logger,
      isLeader: () => true,
      ...deps,
      onBatch: (b) => {
        batches.push({ ...b, atMs: clock.monotonicMs() });
        deps.onBatch?.(b);
      },
    },
    opts,
  );
  return { cleaner, batches };
}

/** Advances the SimClock in steps until `p` settles (bounded), so the cleaner's pauses elapse. */
async function drive<T>(clock: SimClock, p: Promise<T>, stepMs = 50, stepsMax = 10_000): Promise<T> {
  let settled = false;
  void p.finally(() => (settled = true)).catch(() => {});
  for (let i = 0; i < stepsMax && !settled; i++) {
    await clock.advance(stepMs);
    await new Promise((r) => setImmediate(r));
  }
  assert.ok(settled, `did not finish within ${stepsMax} steps of ${stepMs} ms`);
  return p;
}

describe('Cleaner', () => {
  it('pauses after a batch so at most deletesPerSecondMax events go per second, and at least as long as the batch took', () => {
    assert.equal(cleanerPauseMs(0, 3, 1_000), 0);
    assert.equal(cleanerPauseMs(500, 0, 1_000), 500);
    assert.equal(cleanerPauseMs(500, 20, 1_000), 480);
    assert.equal(cleanerPauseMs(500, 400, 5_000), 400, 'a slow batch: half the time at most');
  });

  it('cleans only while its node holds the leader lease', async () => {
    const clock = new SimClock();
    const tenantId = await newTenant();
    await finished(tenantId, ['old'], 'succeeded', clock.now() - 8 * DAY_MS);
    const electors = ['node-a', 'node-b'].map(
      (nodeId) =>
        new Elector(
          { store, clock, nodeId, logger },
          { intervalMs: 1_000, leaseMs: 60_000, nodeTtlMs: 60_000, shardCount: 4 },
        ),
    );
    const [a, b] = electors;
    assert.equal((await a.runOnce()).leader, true);
    assert.equal((await b.runOnce()).leader, false);

    const follower = makeCleaner(clock, {}, { isLeader: () => b.isLeader });
    assert.deepEqual(await drive(clock, follower.cleaner.runOnce()), {
      leader: false,
      completed: false,
      tenants: 0,
      batches: 0,
      events: 0,
      transitions: 0,
      durationMs: 0,
    });
    assert.equal(follower.batches.length, 0);
    assert.ok(await exists(tenantId, 'old'), 'a follower deletes nothing');

    const leader = makeCleaner(clock, {}, { isLeader: () => a.isLeader });
    const pass = await drive(clock, leader.cleaner.runOnce());
    assert.equal(pass.leader, true);
    assert.equal(pass.completed, true);
    assert.ok(pass.events >= 1);
    assert.equal(await exists(tenantId, 'old'), false);
    await a.stop();
    await b.stop();
  });

  it("applies each tenant's own periods over the node's defaults", async () => {
    const clock = new SimClock();
    const now = clock.now();
    const plain = await newTenant();
    const short = await newTenant({ retention: { succeeded: HOUR_MS, archived: 2 * HOUR_MS } });
    const long = await newTenant({ retention: { succeeded: 365 * DAY_MS } });
    for (const t of [plain, short, long]) {
      await finished(t, ['s-90m'], 'succeeded', now - 90 * 60_000);
      await finished(t, ['s-8d'], 'succeeded', now - 8 * DAY_MS);
      await finished(t, ['a-90m'], 'archived', now - 90 * 60_000);
      await finished(t, ['a-8d'], 'archived', now - 8 * DAY_MS);
      await finished(t, ['a-31d'], 'archived', now - 31 * DAY_MS);
    }
    const { cleaner } = makeCleaner(clock, { defaults: RETENTION_DEFAULTS });
    await drive(clock, cleaner.runOnce());
    const left = async (t: string) =>
      (
        await Promise.all(
          ['s-90m', 's-8d', 'a-90m', 'a-8d', 'a-31d'].map(async (id) => ((await exists(t, id)) ? [id] : [])),
        )
      ).flat();
    assert.deepEqual(await left(plain), ['s-90m', 'a-90m', 'a-8d'], 'defaults: succeeded 7d, archived 30d');
    assert.deepEqual(await left(short), ['a-90m'], 'succeeded 1h, archived 2h');
    assert.deepEqual(await left(long), ['s-90m', 's-8d', 'a-90m', 'a-8d'], 'succeeded a year, archived by default');
  });

  it('deletes in batches of at most batchSizeMax, paced to deletesPerSecondMax', async () => {
    const clock = new SimClock();
    const tenantId = await newTenant();
    const ids = Array.from({ length: 1_200 }, (_, i) => `e${i}`);
    await finished(tenantId, ids, 'succeeded', clock.now() - 8 * DAY_MS);
    const { cleaner, batches } = makeCleaner(clock, { batchSizeMax: 500, deletesPerSecondMax: 1_000 });
    const startMs = clock.monotonicMs();
    const pass = await drive(clock, cleaner.runOnce());
    const mine = batches.filter((b) => b.tenantId === tenantId && b.events > 0);
    // Two transition rows per event: claimed and succeeded (`created` is read from the event row).
    assert.deepEqual(
      mine.map((b) => [b.state, b.events, b.transitions]),
      [
        ['succeeded', 500, 1_000],
        ['succeeded', 500, 1_000],
        ['succeeded', 200, 400],
      ],
    );
    assert.ok(batches.every((b) => b.events <= 500));
    for (let i = 1; i < mine.length; i++)
      assert.ok(
        mine[i].atMs - mine[i - 1].atMs >= 500,
        `batch ${i} came ${mine[i].atMs - mine[i - 1].atMs} ms after the one before`,
      );
    assert.ok(clock.monotonicMs() - startMs >= 1_200, '1,200 events at 1,000/s take 1.2 s at least');
    assert.equal(pass.events, 1_200);
    assert.equal(await exists(tenantId, 'e0'), false);
    assert.equal(await exists(tenantId, 'e1199'), false);
  });

  it('ends the pass after the batch in progress when the lease is lost', async () => {
    const clock = new SimClock();
    const tenantId = await newTenant();
    await finished(
      tenantId,
      Array.from({ length: 30 }, (_, i) => `e${i}`),
      'succeeded',
      clock.now() - 8 * DAY_MS,
    );
    let leader = true;
    const { cleaner, batches } = makeCleaner(
      clock,
      { batchSizeMax: 10 },
      { isLeader: () => leader, onBatch: () => (leader = false) },
    );
    const pass = await drive(clock, cleaner.runOnce());
    assert.deepEqual([pass.leader, pass.completed, pass.batches, pass.events], [true, false, 1, 10]);
    assert.equal(batches.length, 1);
  });

  it('stops while it pauses between batches, mid-pass', async () => {
    const clock = new SimClock();
    const tenantId = await newTenant();
    await finished(
      tenantId,
      Array.from({ length: 30 }, (_, i) => `e${i}`),
      'succeeded',
      clock.now() - 8 * DAY_MS,
    );
    let firstBatch: () => void = () => {};
    const sawBatch = new Promise<void>((resolve) => (firstBatch = resolve));
    const { cleaner, batches } = makeCleaner(
      clock,
      { batchSizeMax: 10, deletesPerSecondMax: 1 },
      { onBatch: () => firstBatch() },
    );
    cleaner.start();
    await sawBatch;
    await cleaner.stop();
    assert.equal(batches.length, 1, 'a 10 s pause was cut short, nothing more deleted');
    assert.equal((await store.eventGet({ tenantId, id: 'e29' }))?.state, 'succeeded');
  });
});
