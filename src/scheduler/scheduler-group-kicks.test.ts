/**
 * The scheduler follows events that became terminal by reading each group's next head once per
 * notification: a bulk cancel of many members of one group is one head read, not one per member
 * (found by the cluster simulation's bulk workload, where a step of 500 cancels made 500 reads).
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
import type { Store } from '../store/store.ts';
import { tick } from '../../test/support/sim-time.ts';
import { Scheduler } from './scheduler.ts';

const T = Date.UTC(2026, 5, 1, 12, 0, 0);

describe('Scheduler: group heads after terminal events', () => {
  let dir: string;
  let store: SqliteStore;

  beforeEach(async () => {
    dir = mkdtempSync(join(tmpdir(), 'belfry-kicks-'));
    store = await openSqliteStore({ dataDir: dir });
  });
  afterEach(async () => {
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it("reads each group's head once for a notification of many of its members canceled", async () => {
    const clock = new SimClock(T);
    const tenant = await newTenant(store);
    await insertAll(
      store,
      Array.from({ length: 40 }, (_, i) =>
        newEvent(tenant, `m${i}`, { fireAt: T + 60_000 + i, group: i < 30 ? 'big' : 'other' }),
      ),
      T,
    );
    const heads: string[] = [];
    const counting = Object.create(store) as Store;
    counting.eventGroupHead = (p) => {
      heads.push(p.group);
      return store.eventGroupHead(p);
    };
    const claimed: EventRecord[] = [];
    const scheduler = new Scheduler(
      {
        store: counting,
        clock,
        owner: 'n',
        metrics: new Metrics(),
        logger: pino({ level: 'silent' }),
        onClaimed: (events) => claimed.push(...events),
        dispatchBacklog: () => 0,
        shards: () => null,
      },
      { lookaheadMs: 3_000, pollIntervalMs: 250 },
    );
    scheduler.start();
    try {
      await tick(clock, 0);
      const canceled: EventRecord[] = [];
      for (let i = 0; i < 35; i++) {
        const r = await store.eventCancel({ tenantId: tenant, id: `m${i}`, now: clock.now() });
        assert.equal(r.kind, 'ok');
        if (r.kind === 'ok') canceled.push(r.event);
      }
      scheduler.notifyEvents(canceled);
      await tick(clock, 10);
      assert.deepEqual(heads.sort(), ['big', 'other'], 'one head read per group, not one per canceled member');
    } finally {
      await scheduler.stop();
    }
  });
});
