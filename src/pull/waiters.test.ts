import assert from 'node:assert/strict';
import { test } from 'node:test';
import { SimClock } from '../core/clock.ts';
import type { EventRecord } from '../core/event.ts';
import { PullWaiters } from './waiters.ts';

test('bounds parked claims per tenant and per node; a release frees the slot', () => {
  const w = new PullWaiters(new SimClock(), { parkedPerTenantMax: 2, parkedMax: 3, pollMs: 1_000 });
  const a1 = w.enter('a', 'name:q');
  w.enter('a', 'name:q');
  assert.throws(() => w.enter('a', 'name:q'), /too many claims waiting/);
  w.enter('b', 'name:q');
  assert.throws(() => w.enter('c', 'name:q'), /too many claims waiting/, 'the node bound');
  a1.release();
  a1.release();
  assert.equal(w.parkedCount, 2, 'a second release changes nothing');
  w.enter('c', 'name:q');
});

test('a sleep ends at its time (capped at pollMs), at a wake of its queue, or at once after a wake it missed', async () => {
  const clock = new SimClock();
  const w = new PullWaiters(clock, { pollMs: 1_000 });
  const watch = w.enter('t', 'name:q');
  let done = false;
  const capped = watch.sleep(60_000).then(() => (done = true));
  await clock.advance(999);
  assert.equal(done, false);
  await clock.advance(1);
  await capped;
  assert.equal(w.sleepingCount, 0);

  let woken = false;
  const sleeping = watch.sleep(500).then(() => (woken = true));
  assert.equal(w.sleepingCount, 1);
  w.wake('t', 'name:other');
  w.wake('u', 'name:q');
  await Promise.resolve();
  assert.equal(woken, false, 'another queue, another tenant');
  w.wakeEvents([{ tenantId: 't', queue: 'name:q', state: 'scheduled', group: null } as EventRecord]);
  await sleeping;

  // Woken between two sleeps (while the claim read the store): the next sleep returns at once.
  w.wake('t', 'name:q');
  await watch.sleep(60_000);
  watch.release();
  assert.equal(w.parkedCount, 0);
});

test('close answers every parked claim at once, and later sleeps too', async () => {
  const w = new PullWaiters(new SimClock());
  const watch = w.enter('t', 'name:q');
  const s = watch.sleep(10_000);
  w.close();
  await s;
  await watch.sleep(10_000);
  assert.equal(w.isClosed, true);
});
