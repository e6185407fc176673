/** The count sampler over a real SQLite store: what a sample holds, and how far apart samples are. */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, it } from 'node:test';
import pino from 'pino';
import { SimClock } from '../core/clock.ts';
import {
  archive,
  countByState,
  insertAll,
  mustClaim,
  newEvent,
  T0,
  twoTenants,
  SEC,
} from '../store/conformance/fixtures.ts';
import {
  CountSampler,
  SAMPLE_INTERVAL_MS_MIN,
  SAMPLE_SPACING_FACTOR,
  SAMPLE_TENANTS_MAX,
  toSample,
  type CountSample,
} from './count-sampler.ts';
import { openSqliteStore, type SqliteStore } from '../store/sqlite/sqlite-store.ts';

const logger = pino({ level: 'silent' });
const WAIT_MS_MAX = 5_000;

/** The next sample the sampler makes, or a rejection after WAIT_MS_MAX of real time. */
function nextSample(sampler: CountSampler): Promise<CountSample> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`no sample within ${WAIT_MS_MAX} ms`)), WAIT_MS_MAX);
    let done = false;
    sampler.onSample((sample) => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      resolve(sample);
    });
  });
}

describe('toSample', () => {
  it('sums states over tenants and keeps pending per tenant', () => {
    const s = toSample(
      [
        { tenantId: 'a', state: 'scheduled', n: 3 },
        { tenantId: 'a', state: 'executing', n: 1 },
        { tenantId: 'a', state: 'succeeded', n: 10 },
        { tenantId: 'b', state: 'awaiting_retry', n: 2 },
        { tenantId: 'c', state: 'archived', n: 5 },
      ],
      7,
      3,
    );
    assert.deepEqual(s.byState, {
      scheduled: 3,
      executing: 1,
      awaiting_retry: 2,
      succeeded: 10,
      discarded: 0,
      archived: 5,
      canceled: 0,
    });
    assert.deepEqual(
      [...s.pendingByTenant],
      [
        ['a', 4],
        ['b', 2],
      ],
    );
    assert.deepEqual([s.complete, s.pendingLeastKept, s.startedAtMs, s.durationMs], [true, 2, 7, 3]);
  });

  it('keeps the largest tenants when there are too many, and says what the others had at most', () => {
    const rows = Array.from({ length: SAMPLE_TENANTS_MAX + 2 }, (_, i) => ({
      tenantId: `t${i}`,
      state: 'scheduled' as const,
      n: i + 1,
    }));
    const s = toSample(rows, 0, 0);
    assert.equal(s.complete, false);
    assert.equal(s.pendingByTenant.size, SAMPLE_TENANTS_MAX);
    assert.equal(s.pendingByTenant.has('t0'), false);
    assert.equal(s.pendingLeastKept, 3);
    assert.equal(
      s.byState.scheduled,
      ((SAMPLE_TENANTS_MAX + 2) * (SAMPLE_TENANTS_MAX + 3)) / 2,
      'byState counts every row',
    );
  });
});

describe('CountSampler', () => {
  let dir: string;
  let store: SqliteStore;
  let clock: SimClock;

  beforeEach(async () => {
    dir = mkdtempSync(join(tmpdir(), 'belfry-sampler-'));
    store = await openSqliteStore({ dataDir: dir });
    clock = new SimClock();
  });
  afterEach(async () => {
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('samples every state and every tenant’s pending events as the store holds them', async () => {
    const [a, b] = await twoTenants(store);
    const evs = await insertAll(store, [newEvent(a, 'a1'), newEvent(a, 'a2'), newEvent(a, 'a3'), newEvent(b, 'b1')]);
    await mustClaim(store, evs[0], T0 + 10 * SEC);
    await archive(store, evs[1], T0 + 10 * SEC);
    const sampler = new CountSampler({ store, clock, logger });
    assert.equal(sampler.latest(), null);
    const [one, two] = await Promise.all([sampler.runOnce(), sampler.runOnce()]);
    assert.equal(one, two, 'calls during a count share it');
    assert.deepEqual(one.byState, await countByState(store));
    assert.deepEqual([...one.pendingByTenant].sort(), [
      [a, 2],
      [b, 1],
    ]);
    assert.equal(await store.eventCountPending({ tenantId: a }), 2);
    assert.equal(sampler.latest(), one);
  });

  it('counts again after max(the minimum interval, 20 × the last count), never during a request', async () => {
    // A count that takes 2 s of the clock's time: the next is 40 s later, not 15 s.
    const slow = Object.create(store) as SqliteStore;
    slow.eventCountByTenantState = async () => {
      const rows = await store.eventCountByTenantState();
      await clock.advance(2_000);
      return rows;
    };
    const sampler = new CountSampler({ store: slow, clock, logger });
    const first = nextSample(sampler);
    sampler.start();
    try {
      assert.equal((await first).durationMs, 2_000);
      // The loop goes to sleep once the microtasks after the sample have run.
      await new Promise((resolve) => setImmediate(resolve));
      assert.equal(sampler.nextWaitMs(), Math.max(SAMPLE_INTERVAL_MS_MIN, SAMPLE_SPACING_FACTOR * 2_000));
      assert.equal(
        sampler.nextWaitMs(3),
        3 * SAMPLE_SPACING_FACTOR * 2_000,
        'three nodes counting one store wait three times longer',
      );
      let counts = 0;
      sampler.onCountStart(() => counts++);
      await clock.advance(SAMPLE_SPACING_FACTOR * 2_000 - 1);
      assert.equal(counts, 0);
      const second = nextSample(sampler);
      await clock.advance(1);
      await second;
      assert.equal(counts, 1);
      assert.equal(sampler.ageMs(), 2_000, 'the age runs from when the count began');
    } finally {
      await sampler.stop();
    }
  });
});
