/**
 * The whole-cluster simulation (docs/simulation.md) on a fixed set of seeds: 3 to 5 nodes on one
 * SQLite store, clients creating, editing and canceling events, schedules, and faults (kills,
 * pauses, stops, crashes between claim and send and between send and record, wall-clock steps,
 * partitions, a slow store, store errors and lost answers, hanging destinations, a leader
 * stalled past its lease), every invariant checked. `npm run sim -- --seeds N` runs more.
 *
 * Also: the same seed gives the same run (its trace digest), and the checker flags what it
 * names (an early send, a duplicate with no fault, two members of a group in flight).
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { simulate, type FaultKind, type SimResult } from './simulate.ts';
import { History } from './history.ts';
import { Prng, World } from './world.ts';
import type { DueEvent } from '../../src/channels/channel.ts';
import type { EventRecord } from '../../src/core/event.ts';

function explain(r: SimResult, faults?: FaultKind[]): string {
  return [
    `seed ${r.seed} broke ${r.violationCount} invariants (repeat: npm run sim -- --seed ${r.seed}${faults ? ` --faults ${faults.join(',')} --duration 20000` : ''})`,
    ...r.violations.slice(0, 10).map((v) => `  ${v.invariant} at ${v.atMs} ms: ${v.detail}`),
    'trace (last lines):',
    ...r.trace.slice(-80),
  ].join('\n');
}

/** Seeds chosen to cover every fault kind of the default set between them. */
const SEEDS = [1, 2, 3, 6, 8];

describe('cluster simulation: fixed seeds', () => {
  for (const seed of SEEDS) {
    it(`seed ${seed}: every invariant holds`, async () => {
      const r = await simulate({ seed });
      assert.ok(r.stats.attempts > 100, `seed ${seed} delivered little (${r.stats.attempts} attempts)`);
      assert.ok(r.ok, explain(r));
    });
  }

  it('fairness: one tenant catching up an hour of 150 schedules, another tenant on time', async () => {
    const faults: FaultKind[] = ['catchup'];
    const r = await simulate({ seed: 11, faults, durationMs: 20_000 });
    assert.ok(r.stats.schedules >= 151 && r.stats.occurrences > 100, `catch-up made ${r.stats.occurrences} occurrences`);
    assert.ok(r.ok, explain(r, faults));
  });

  it('bounded traces: an event edited 1,100 times', async () => {
    const r = await simulate({ seed: 12, faults: ['edits'], durationMs: 20_000 });
    assert.ok(r.ok, explain(r, ['edits']));
  });

  it('the same seed gives the same run', async () => {
    const a = await simulate({ seed: 5, durationMs: 10_000 });
    const b = await simulate({ seed: 5, durationMs: 10_000 });
    assert.equal(a.traceDigest, b.traceDigest);
    assert.deepEqual(a.stats, b.stats);
  });
});

describe('cluster simulation: the checker', () => {
  function harness() {
    const world = new World(new Prng(1), Date.UTC(2026, 0, 1), () => {});
    let executing = 0;
    const history = new History(world, () => executing);
    const claim = (id: string, node: string, extra: Partial<EventRecord> = {}) =>
      history.claimed(node, world.storeNow(), [{ tenantId: 't', id, version: 2, attempts: 1, group: null, dueAt: world.storeNow(), fireAt: world.storeNow(), ...extra } as EventRecord], false);
    const due = (id: string, attempt = 1, dueAt = world.storeNow()): DueEvent =>
      ({ tenantId: 't', id, attempt, payload: '{}', headers: {}, target: 'x', secrets: [], timeoutMs: 1_000, dueAt, fireAt: dueAt });
    return { world, history, claim, due, setExecuting: (n: number) => (executing = n) };
  }

  it('flags a send before the due time by the store clock', () => {
    const h = harness();
    h.claim('e1', 'n1');
    h.history.attemptStart('n1', h.due('e1', 1, h.world.storeNow() + 5), 'd', 'delivered');
    assert.deepEqual(h.history.violations.map((v) => v.invariant), ['early', 'early']);
  });

  it('flags a second delivery with no fault, and excuses one after a kill', () => {
    const h = harness();
    h.claim('e1', 'n1');
    const a = h.history.attemptStart('n1', h.due('e1', 1), 'd', 'delivered');
    h.history.attemptEnd(a, 'delivered');
    h.history.claimed('n2', h.world.storeNow(), [{ tenantId: 't', id: 'e1', version: 4, attempts: 2, group: null, dueAt: 0, fireAt: 0 } as EventRecord], false);
    h.history.attemptStart('n2', h.due('e1', 2, 0), 'd', 'delivered');
    assert.deepEqual(h.history.violations.map((v) => v.invariant), ['duplicate']);

    const k = harness();
    k.claim('e1', 'n1');
    const b = k.history.attemptStart('n1', k.due('e1', 1), 'd', 'delivered');
    k.history.attemptEnd(b, 'delivered');
    k.history.killed('n1');
    k.history.claimed('n2', k.world.storeNow(), [{ tenantId: 't', id: 'e1', version: 4, attempts: 2, group: null, dueAt: 0, fireAt: 0 } as EventRecord], false);
    k.history.attemptStart('n2', k.due('e1', 2, 0), 'd', 'delivered');
    assert.deepEqual(k.history.violations, []);
    assert.equal(k.history.stats.duplicatesExcused, 1);
  });

  it('flags two members of a group in flight, and two executing in the store', () => {
    const h = harness();
    h.claim('e1', 'n1', { group: 'g' });
    h.history.attemptStart('n1', h.due('e1'), 'd', 'hang');
    h.setExecuting(2);
    h.claim('e2', 'n2', { group: 'g' });
    h.history.attemptStart('n2', h.due('e2'), 'd', 'delivered');
    assert.deepEqual(h.history.violations.map((v) => v.invariant), ['group-executing', 'group-in-flight']);
  });

  it('flags the rescue of a live claim, and a send after a canceled answer', () => {
    const h = harness();
    h.claim('e1', 'n1');
    h.history.rescued('n2', 'eventRescue', [{ tenantId: 't', id: 'e1', version: 3 }]);
    h.history.event('t', 'e2').cancelAckMs = h.world.storeNow();
    h.claim('e2', 'n1');
    h.history.attemptStart('n1', h.due('e2'), 'd', 'delivered');
    assert.deepEqual(h.history.violations.map((v) => v.invariant), ['rescued-live-claim', 'after-cancel']);
  });
});
