/**
 * The scheduler's isolation bounds on a SimClock and a real SQLite store: each virtual queue's
 * claims and memory are bounded, the rest of its due events stay scheduled (unclaimed) in the
 * store and come back in order as room frees, a queue refills from its own index, the node's own
 * bound is shared in turn, and the overdue sweep reads a bounded number of rows per pass.
 *
 * The dispatcher is played by the test: it holds every claimed event until the test "records"
 * some (`record`), and answers queueRoom as the real one does (bound minus held).
 */
import { afterEach, beforeEach, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino } from 'pino';
import { SimClock } from '../core/clock.ts';
import type { EventRecord } from '../core/event.ts';
import { queueKeyOf } from '../core/queue.ts';
import { Metrics } from '../node/metrics.ts';
import { insertAll, newEvent, newTenant } from '../store/conformance/fixtures.ts';
import { openSqliteStore, type SqliteStore } from '../store/sqlite/sqlite-store.ts';
import type { NewEvent } from '../store/store.ts';
import { countingListDue, tick as tickSim } from '../../test/support/sim-time.ts';
import { Scheduler, type SchedulerOptions } from './scheduler.ts';

const T = Date.UTC(2026, 5, 1, 12, 0, 0);

describe('Scheduler bounds per virtual queue', () => {
  let dir: string;
  let store: SqliteStore;
  let clock: SimClock;
  let scheduler: Scheduler;
  let tenant: string;
  /** Claimed and not yet "recorded", per queue key, in claim order. */
  let held: Map<string, EventRecord[]>;
  let claimedIds: string[];
  let rowsListed: number;
  let queueBound: number;

  /** Simulated time, advanced in 10 ms steps with real callbacks run between them. */
  const tick = (ms: number) => tickSim(clock, ms);

  const heldCount = () => [...held.values()].reduce((n, list) => n + list.length, 0);
  const keyOf = (destination: string) => queueKeyOf(tenant, `name:${destination}`);

  function start(opts: Partial<SchedulerOptions> = {}): void {
    const counted = countingListDue(store, (n) => (rowsListed += n));
    scheduler = new Scheduler(
      {
        store: counted,
        clock,
        owner: 'node-sim',
        metrics: new Metrics(),
        logger: pino({ level: 'silent' }),
        onClaimed: (events) => {
          for (const e of events) {
            const key = queueKeyOf(e.tenantId, e.queue);
            held.set(key, [...(held.get(key) ?? []), e]);
            claimedIds.push(e.id);
          }
        },
        dispatchBacklog: heldCount,
        queueRoom: (key) => queueBound - (held.get(key)?.length ?? 0),
        queueBound: () => queueBound,
        shards: () => null,
      },
      { lookaheadMs: 3_000, pollIntervalMs: 250, ...opts },
    );
    scheduler.start();
  }

  /** The dispatcher recorded the first `n` held events of a queue (they left the store's executing state). */
  async function record(destination: string, n: number): Promise<void> {
    const list = held.get(keyOf(destination)) ?? [];
    const done = list.splice(0, n);
    const applied = await store.eventRecordAttempts({
      outcomes: done.map((e) => ({
        tenantId: e.tenantId,
        id: e.id,
        version: e.version,
        owner: 'node-sim',
        to: 'succeeded',
        status: 200,
        durationMs: 1,
      })),
      now: clock.now(),
    });
    assert.ok(applied.every(Boolean));
    scheduler.roomFreed();
  }

  function events(destination: string, count: number, fireAt: number): NewEvent[] {
    return Array.from({ length: count }, (_, i) =>
      newEvent(tenant, `${destination}-${String(i).padStart(5, '0')}`, { destination: { name: destination }, fireAt }),
    );
  }

  beforeEach(async () => {
    dir = mkdtempSync(join(tmpdir(), 'belfry-bounds-'));
    store = await openSqliteStore({ dataDir: dir });
    clock = new SimClock(T);
    tenant = await newTenant(store);
    held = new Map();
    claimedIds = [];
    rowsListed = 0;
    queueBound = 50;
  });

  afterEach(async () => {
    await scheduler?.stop();
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('claims a full queue only up to its bound; another queue due at the same ms fires on time', async () => {
    await insertAll(store, [...events('a', 1_000, T + 500), ...events('b', 10, T + 500)], T);
    start();
    await tick(500 + 10); // claims under load are spaced by up to 2 ms
    assert.equal(held.get(keyOf('a'))?.length, 50, "A's claims stop at its bound");
    assert.equal(held.get(keyOf('b'))?.length, 10, "all of B's events fired at their millisecond");
    const stored = await store.eventList({ tenantId: tenant, state: 'scheduled', limit: 2_000 });
    assert.equal(stored.events.length, 950, "A's other events stay scheduled in the store, unclaimed");
    assert.ok(
      stored.events.every((e) => e.attempts === 0),
      'and spend no attempt',
    );

    await record('a', 20);
    await tick(10);
    assert.equal(held.get(keyOf('a'))?.length, 50, 'room freed is taken again, up to the bound');
    assert.equal(claimedIds.filter((id) => id.startsWith('a-')).length, 70);
  });

  it("gives every queue with due events its share of each claim: a flood with room does not claim ahead of another queue's events", async () => {
    queueBound = 5_000;
    await insertAll(store, [...events('a', 2_000, T + 500), ...events('b', 10, T + 500)], T);
    const claims: string[][] = [];
    const claim = store.eventClaim.bind(store);
    store.eventClaim = async (input) => {
      claims.push(input.refs.map((r) => r.id));
      return claim(input);
    };
    start({ claimBatchMax: 250 });
    await tick(510);
    assert.equal(held.get(keyOf('b'))?.length, 10);
    assert.equal(held.get(keyOf('a'))?.length, 2_000, 'A has room for all of its events: all are claimed');
    assert.ok(
      claims.every((ids) => ids.length <= 250),
      `claim sizes: ${claims.map((ids) => ids.length)}`,
    );
    // A's 2,000 come first in due order (same ms, ids sort before B's), yet B's 10 are in the first claim.
    assert.equal(claims[0].filter((id) => id.startsWith('b-')).length, 10, 'all of B in the first claim');
  });

  it("claims a quiet queue's due event at once while a flood's claims hold every claim slot", async () => {
    queueBound = 5_000;
    await insertAll(store, [...events('a', 2_000, T + 500), ...events('b', 1, T + 800)], T);
    // A's claims do not return until the gate opens (a store saturated by the flood); B's do.
    let openGate!: () => void;
    const gate = new Promise<void>((resolve) => (openGate = resolve));
    const claim = store.eventClaim.bind(store);
    let aClaimsWaiting = 0;
    store.eventClaim = async (input) => {
      if (input.refs.some((r) => r.id.startsWith('a-'))) {
        aClaimsWaiting++;
        await gate;
      }
      return claim(input);
    };
    start({ claimBatchMax: 100 });
    try {
      await tick(510);
      assert.equal(aClaimsWaiting, 4, "A's claims fill every slot and wait");
      await tick(300 + 10);
      assert.equal(held.get(keyOf('b'))?.length, 1, "B's event is claimed at its due time, A's claims still waiting");
      assert.equal(held.get(keyOf('a')), undefined);
    } finally {
      openGate();
    }
    await tick(100);
    assert.ok((held.get(keyOf('a'))?.length ?? 0) >= 400, "A's claims go on once the store answers");
  });

  it("holds at most queueRefsMax of a queue's events in memory and refills the queue from its own index", async () => {
    queueBound = 100;
    await insertAll(store, [...events('a', 1_000, T + 500), ...events('b', 5, T + 600)], T);
    start({ queueRefsMax: 200, listBatchMax: 100 });
    await tick(0);
    assert.ok(scheduler.pending <= 205, `in memory: ${scheduler.pending}`);
    assert.equal(scheduler.overflowedQueues, 1);
    await tick(600);
    assert.equal(held.get(keyOf('b'))?.length, 5, "B's events fire though A's queue overflowed");
    // Drain A: every event is claimed exactly once, in due order (ids in order within one ms).
    for (let round = 0; round < 100 && claimedIds.filter((id) => id.startsWith('a-')).length < 1_000; round++) {
      await record('a', 100);
      await tick(10);
      assert.ok(scheduler.pending <= 205, `in memory: ${scheduler.pending}`);
    }
    const claimedA = claimedIds.filter((id) => id.startsWith('a-'));
    assert.equal(claimedA.length, 1_000);
    assert.equal(new Set(claimedA).size, 1_000, 'no event claimed twice');
    assert.deepEqual(claimedA, [...claimedA].sort(), 'claimed in due order');
    await tick(300); // the next pass finds nothing left behind
    assert.equal(scheduler.overflowedQueues, 0);
  });

  it("shares the node's own bound among queues in turn when that bound binds", async () => {
    queueBound = 1_000;
    await insertAll(
      store,
      [...events('a', 500, T + 100), ...events('b', 500, T + 100), ...events('c', 500, T + 100)],
      T,
    );
    start({ dispatchBacklogMax: 90 });
    await tick(110);
    assert.equal(heldCount(), 90);
    // Free room by recording what A holds: the freed room goes to the queues in turn.
    for (const d of ['a', 'b', 'c']) held.set(keyOf(d), []);
    await store.eventRecordAttempts({ outcomes: [], now: clock.now() });
    scheduler.roomFreed();
    await tick(0);
    const counts = ['a', 'b', 'c'].map((d) => held.get(keyOf(d))?.length ?? 0);
    assert.equal(
      counts.reduce((a, b) => a + b),
      90,
    );
    assert.ok(
      counts.every((n) => n >= 16),
      `each queue got a share: ${counts.join(', ')}`,
    );
  });

  it('sweeps a bounded number of rows per pass over an overdue backlog, and continues where it stopped', async () => {
    queueBound = 0; // nothing may be claimed: everything stays overdue
    await insertAll(store, [newEvent(tenant, 'ahead', { destination: { name: 'c' }, fireAt: T + 50 })], T);
    start({ queueRefsMax: 50, listBatchMax: 20, sweepPagesMax: 2, lookaheadMs: 100 });
    await tick(0); // the read-ahead's cursor is past every row written below
    // Written by another process, already overdue: only the sweep finds them.
    await insertAll(store, events('a', 500, T - 10_000), T);
    await insertAll(store, [newEvent(tenant, 'b-late', { destination: { name: 'b' }, fireAt: T - 5_000 })], T);
    rowsListed = 0;
    await tick(2_000);
    assert.ok(rowsListed <= 2 * 20 + 20, `one sweep pass read ${rowsListed} rows (two pages, plus the read-ahead's)`);
    queueBound = 10;
    for (let i = 0; i < 30 && !claimedIds.includes('b-late'); i++) await tick(2_000);
    assert.ok(claimedIds.includes('b-late'), "the sweep went on past A's backlog and found B's row");
  });
});
