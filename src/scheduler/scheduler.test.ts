/**
 * The scheduler on a SimClock and a real SQLite store: timing decisions are deterministic, so the
 * tests can assert "not one millisecond early" and "cancel after the read-ahead wins" exactly.
 */
import { afterEach, beforeEach, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino } from 'pino';
import { SimClock } from '../core/clock.ts';
import type { EventRecord } from '../core/event.ts';
import { Metrics } from '../node/metrics.ts';
import { insertAll, newEvent, newTenant } from '../store/conformance/fixtures.ts';
import { openSqliteStore, type SqliteStore } from '../store/sqlite/sqlite-store.ts';
import { countingListDue, tick as tickSim } from '../../test/support/sim-time.ts';
import { Scheduler } from './scheduler.ts';

const T = Date.UTC(2026, 5, 1, 12, 0, 0);

describe('Scheduler on a SimClock', () => {
  let dir: string;
  let store: SqliteStore;
  let clock: SimClock;
  let scheduler: Scheduler;
  let claimed: { event: EventRecord; atMs: number }[];
  let tenant: string;
  /** What the dispatcher holds, as the scheduler sees it: ≥ 20,000 holds claiming back. */
  let backlog: number;
  /** Rows eventListDue returned, over all calls. */
  let rowsListed: number;
  /** What onDueSoon was told, with the simulated time it was told. */
  let dueSoon: { queues: string[]; atMs: number }[];

  /** Simulated time, advanced in 10 ms steps with real callbacks run between them. */
  const tick = (ms: number) => tickSim(clock, ms);

  beforeEach(async () => {
    dir = mkdtempSync(join(tmpdir(), 'belfry-sched-'));
    store = await openSqliteStore({ dataDir: dir });
    clock = new SimClock(T);
    claimed = [];
    tenant = await newTenant(store);
    backlog = 0;
    rowsListed = 0;
    dueSoon = [];
    const counted = countingListDue(store, (n) => (rowsListed += n));
    scheduler = new Scheduler(
      {
        store: counted,
        clock,
        owner: 'node-sim',
        metrics: new Metrics(),
        logger: pino({ level: 'silent' }),
        onClaimed: (events) => claimed.push(...events.map((event) => ({ event, atMs: clock.now() }))),
        dispatchBacklog: () => backlog,
        onDueSoon: (queues) =>
          dueSoon.push({ queues: [...queues.values()].map((q) => q.queue).sort(), atMs: clock.now() }),
        shards: () => null,
      },
      { lookaheadMs: 3_000, pollIntervalMs: 250 },
    );
  });

  afterEach(async () => {
    await scheduler.stop();
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('fires each event at its due millisecond, not before, including ones beyond the look-ahead', async () => {
    await insertAll(
      store,
      [
        newEvent(tenant, 'a', { fireAt: T + 1_000 }),
        newEvent(tenant, 'b', { fireAt: T + 1_500 }),
        newEvent(tenant, 'far', { fireAt: T + 10_000 }),
      ],
      T,
    );
    scheduler.start();
    await tick(0);
    assert.equal(scheduler.pending, 2, 'only events within the look-ahead are in memory');
    await tick(999);
    assert.deepEqual(
      claimed.map((c) => c.event.id),
      [],
    );
    await tick(1);
    assert.deepEqual(
      claimed.map((c) => [c.event.id, c.atMs - T]),
      [['a', 1_000]],
    );
    await tick(500);
    assert.deepEqual(
      claimed.map((c) => [c.event.id, c.atMs - T]),
      [
        ['a', 1_000],
        ['b', 1_500],
      ],
    );
    await tick(8_499);
    assert.equal(claimed.length, 2);
    await tick(1);
    assert.deepEqual(
      claimed.map((c) => [c.event.id, c.atMs - T]),
      [
        ['a', 1_000],
        ['b', 1_500],
        ['far', 10_000],
      ],
    );
    assert.equal(claimed[0].event.state, 'executing');
  });

  it('tells which queues have events loaded ahead, once per page, a look-ahead before they fall due', async () => {
    await insertAll(
      store,
      [
        newEvent(tenant, 'a1', { fireAt: T + 2_000, destination: { name: 'orders' } }),
        newEvent(tenant, 'a2', { fireAt: T + 2_001, destination: { name: 'orders' } }),
        newEvent(tenant, 'b1', { fireAt: T + 2_500, destination: { url: 'https://hooks.example/x' } }),
        newEvent(tenant, 'late', { fireAt: T + 9_000, destination: { name: 'billing' } }),
      ],
      T,
    );
    scheduler.start();
    await tick(0);
    assert.deepEqual(dueSoon, [{ queues: ['name:orders', 'url:https://hooks.example'], atMs: T }]);
    await tick(6_000);
    assert.deepEqual(dueSoon.at(-1), { queues: ['name:billing'], atMs: T + 6_000 }, 'billing, 3 s before it falls due');
    assert.equal(claimed.filter((c) => c.event.id === 'late').length, 0);
  });

  it('fires overdue events at once', async () => {
    await insertAll(store, [newEvent(tenant, 'old', { fireAt: T - 60_000 })], T);
    scheduler.start();
    await tick(0);
    assert.deepEqual(
      claimed.map((c) => [c.event.id, c.atMs - T]),
      [['old', 0]],
    );
  });

  it('a cancel or reschedule that commits after the read-ahead wins', async () => {
    const [c, m] = await insertAll(
      store,
      [newEvent(tenant, 'c', { fireAt: T + 2_000 }), newEvent(tenant, 'm', { fireAt: T + 2_000 })],
      T,
    );
    scheduler.start();
    await tick(0);
    assert.equal(scheduler.pending, 2);
    const canceled = await store.eventCancel({ tenantId: tenant, id: c.id, now: clock.now() });
    assert.equal(canceled.kind, 'ok');
    const moved = await store.eventUpdate({
      tenantId: tenant,
      id: m.id,
      now: clock.now(),
      patch: { fireAt: T + 5_000 },
    });
    assert.equal(moved.kind, 'ok');
    // Without telling the scheduler: the stale entries must not fire.
    await tick(2_500);
    assert.equal(claimed.length, 0);
    // The read-ahead finds the rescheduled event at its new time.
    await tick(2_499);
    assert.equal(claimed.length, 0);
    await tick(1);
    assert.deepEqual(
      claimed.map((x) => [x.event.id, x.atMs - T]),
      [['m', 5_000]],
    );
  });

  it('never fires early when the wall clock jumps backwards', async () => {
    await insertAll(store, [newEvent(tenant, 'a', { fireAt: T + 1_000 })], T);
    scheduler.start();
    await tick(0);
    clock.jump(-5_000);
    await tick(1_000); // the timer set for +1 s runs, but the wall clock says T - 4 s
    assert.equal(claimed.length, 0);
    await tick(4_999);
    assert.equal(claimed.length, 0);
    await tick(1);
    assert.equal(claimed.length, 1);
    assert.equal(claimed[0].atMs, T + 1_000);
  });

  it('fires at once when the wall clock jumps forward past due events', async () => {
    await insertAll(store, [newEvent(tenant, 'a', { fireAt: T + 2_000 })], T);
    scheduler.start();
    await tick(0);
    clock.jump(10_000);
    await tick(250); // the next read-ahead poll notices
    assert.equal(claimed.length, 1);
    assert.ok(claimed[0].atMs - T <= 10_250);
  });

  it('notified events due before the read-ahead cursor still fire on time', async () => {
    await insertAll(store, [newEvent(tenant, 'late-in-window', { fireAt: T + 2_900 })], T);
    scheduler.start();
    await tick(0);
    // Created after the read-ahead passed its due time: only the notification brings it in.
    const [e] = await insertAll(store, [newEvent(tenant, 'soon', { fireAt: T + 500 })], clock.now());
    scheduler.notifyEvents([e]);
    await tick(500);
    assert.deepEqual(
      claimed.map((c) => [c.event.id, c.atMs - T]),
      [['soon', 500]],
    );
  });

  it('the overdue sweep finds rows written behind the cursor without a notification', async () => {
    await insertAll(store, [newEvent(tenant, 'ahead', { fireAt: T + 2_900 })], T);
    scheduler.start();
    await tick(0);
    // Another process writes an event due before the cursor and tells nobody.
    await insertAll(store, [newEvent(tenant, 'foreign', { fireAt: T + 100 })], T);
    await tick(1_999);
    assert.deepEqual(
      claimed.map((c) => c.event.id),
      [],
    );
    await tick(1); // the sweep at T + 2 s takes rows overdue by the 1 s grace
    assert.deepEqual(
      claimed.map((c) => [c.event.id, c.atMs - T]),
      [['foreign', 2_000]],
    );
  });

  it('while the node is at its claim bound, due events wait unclaimed and the sweep still finds rows behind the cursor', async () => {
    backlog = 20_000; // the dispatcher is full: nothing is claimed
    const held = Array.from({ length: 100 }, (_, i) =>
      newEvent(tenant, `held-${i}`, { fireAt: T + 500 + Math.floor(i / 50) * 100 }),
    );
    await insertAll(store, held, T);
    scheduler.start();
    await tick(0);
    assert.equal(scheduler.pending, 100);
    // Written by another process: one older than everything held, one among them.
    await insertAll(
      store,
      [newEvent(tenant, 'older', { fireAt: T + 400 }), newEvent(tenant, 'among', { fireAt: T + 550 })],
      T,
    );
    await tick(10_000); // five sweeps
    assert.equal(claimed.length, 0);
    assert.equal(scheduler.pending, 102, 'both rows joined the events held');
    assert.equal(scheduler.parkedCount, 102, 'all of them due, parked unclaimed');
    backlog = 0;
    scheduler.roomFreed();
    await tick(100);
    const ids = claimed.map((c) => c.event.id);
    assert.equal(ids.length, 102, 'every event fired once room was free');
    assert.ok(ids.includes('older') && ids.includes('among'));
  });
});
