/**
 * The virtual queue while its circuit is open: events fail fast as retries, spread after the
 * reopen time so they do not all come due again in the same millisecond (a herd that delays
 * every other destination's events due then). And the claim bound.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { SimClock } from '../core/clock.ts';
import { DEFAULT_RETRY } from '../core/backoff.ts';
import type { DeliverySettings } from './destinations.ts';
import type { DeliveryOutcome } from '../channels/channel.ts';
import {
  CLAIMED_MAX,
  CLAIMED_MIN,
  claimedMaxOf,
  RECOVERED_AFTER_MS,
  VirtualQueue,
  type QueueChange,
} from './virtual-queue.ts';

const SETTINGS: DeliverySettings = {
  queueKey: 't/a',
  target: 'http://127.0.0.1:1/',
  headers: {},
  secrets: [],
  timeoutMs: 1_000,
  retry: DEFAULT_RETRY,
  rateLimitPerSecond: null,
  maxConcurrency: 1,
  missing: false,
};

describe('VirtualQueue with its circuit open', () => {
  it('fails events fast as retries spread over [reopen, twice the time to reopen]', async () => {
    const clock = new SimClock();
    const done: { item: number; outcome: DeliveryOutcome }[] = [];
    const queue = new VirtualQueue<number>(SETTINGS, clock, {
      deliver: async () => ({ kind: 'retry', reason: 'HTTP 500', durationMs: 1 }),
      done: (item, _settings, outcome) => done.push({ item, outcome }),
    });
    // Consecutive failures open the circuit (10 by default).
    for (let i = 0; i < 10; i++) {
      queue.push(i);
      await new Promise((resolve) => setImmediate(resolve));
    }
    assert.equal(queue.breakerState, 'open');
    done.length = 0;
    for (let i = 0; i < 200; i++) queue.push(100 + i);
    assert.equal(done.length, 200, 'every event failed fast');
    const delays = done.map((d) => (d.outcome.kind === 'retry' ? (d.outcome.retryAfterMs ?? -1) : -1));
    // The simulated clock stands still: the circuit reopens in exactly its first open time, 1 s.
    const reopenMs = 1_000;
    assert.ok(
      delays.every((d) => d >= reopenMs && d <= 2 * reopenMs),
      `all within [1 s, 2 s]: ${Math.min(...delays)}–${Math.max(...delays)} ms`,
    );
    assert.ok(new Set(delays).size > 100, `spread, not one instant (${new Set(delays).size} distinct delays of 200)`);
  });
});

describe('VirtualQueue: what its owner may claim for it', () => {
  it('admits nothing while the circuit is open, says when it lets a probe through, and admits all once the probe succeeds', async () => {
    const clock = new SimClock();
    let answer: DeliveryOutcome = { kind: 'retry', reason: 'HTTP 500', durationMs: 1 };
    let probesDue = 0;
    const delivered: number[] = [];
    const queue = new VirtualQueue<number>(SETTINGS, clock, {
      deliver: async (item) => {
        delivered.push(item);
        return answer;
      },
      done: () => {},
      probeDue: () => probesDue++,
    });
    assert.deepEqual(queue.admits(), { admits: 'all' });
    for (let i = 0; i < 10; i++) {
      queue.push(i);
      await new Promise((resolve) => setImmediate(resolve));
    }
    assert.equal(queue.breakerState, 'open');
    assert.deepEqual(queue.admits(), { admits: 'none', inMs: 1_000 });
    await clock.advance(999);
    assert.equal(probesDue, 0);
    await clock.advance(1);
    assert.equal(probesDue, 1, 'told once when the open time has passed');
    assert.deepEqual(queue.admits(), { admits: 'probe' });
    // The probe fails: open again, for twice as long, and told again when that has passed.
    queue.push(10);
    await new Promise((resolve) => setImmediate(resolve));
    assert.deepEqual(delivered.slice(-1), [10], 'the probe was sent');
    assert.deepEqual(queue.admits(), { admits: 'none', inMs: 2_000 });
    await clock.advance(2_000);
    assert.equal(probesDue, 2);
    answer = { kind: 'delivered', status: 200, durationMs: 1 };
    queue.push(11);
    await new Promise((resolve) => setImmediate(resolve));
    assert.equal(queue.breakerState, 'closed');
    assert.deepEqual(queue.admits(), { admits: 'all' });
  });
});

describe('claimedMaxOf', () => {
  it('scales with concurrency, caps at two seconds of the rate limit, within its bounds', () => {
    assert.equal(claimedMaxOf({ maxConcurrency: 20, rateLimitPerSecond: null }), 500);
    assert.equal(claimedMaxOf({ maxConcurrency: 1000, rateLimitPerSecond: null }), CLAIMED_MAX);
    assert.equal(claimedMaxOf({ maxConcurrency: 1, rateLimitPerSecond: null }), CLAIMED_MIN);
    assert.equal(claimedMaxOf({ maxConcurrency: 20, rateLimitPerSecond: 5 }), CLAIMED_MIN);
    assert.equal(claimedMaxOf({ maxConcurrency: 100, rateLimitPerSecond: 200 }), 400);
  });
});

describe('VirtualQueue.health', () => {
  it('counts waiting and in flight, and the success rate and p99 duration of finished attempts', async () => {
    const clock = new SimClock();
    let answer: (o: DeliveryOutcome) => void = () => {};
    const queue = new VirtualQueue<number>(SETTINGS, clock, {
      deliver: () =>
        new Promise<DeliveryOutcome>((resolve) => {
          answer = resolve;
        }),
      done: () => {},
    });
    assert.deepEqual(queue.health(), {
      circuit: 'closed',
      waiting: 0,
      inFlight: 0,
      deliveries: 0,
      successRate: null,
      p99DurationMs: null,
    });
    queue.push(1);
    queue.push(2);
    queue.push(3);
    assert.deepEqual(
      { ...queue.health() },
      { circuit: 'closed', waiting: 2, inFlight: 1, deliveries: 0, successRate: null, p99DurationMs: null },
    );
    answer({ kind: 'delivered', status: 200, durationMs: 40 });
    await new Promise((resolve) => setImmediate(resolve));
    answer({ kind: 'retry', reason: 'HTTP 500', durationMs: 900 });
    await new Promise((resolve) => setImmediate(resolve));
    assert.deepEqual(queue.health(), {
      circuit: 'closed',
      waiting: 0,
      inFlight: 1,
      deliveries: 2,
      successRate: 0.5,
      p99DurationMs: 900,
    });
  });
});

describe("VirtualQueue's changes (what the dispatcher logs)", () => {
  /** A queue whose endpoint answers as `endpoint.ok` says, with every change it reports. */
  function scripted() {
    const clock = new SimClock();
    const endpoint = { ok: true };
    const changes: QueueChange[] = [];
    let finished = 0;
    const queue = new VirtualQueue<number>(SETTINGS, clock, {
      deliver: async () =>
        endpoint.ok
          ? { kind: 'delivered', status: 200, durationMs: 1 }
          : { kind: 'retry', status: 503, reason: 'HTTP 503', durationMs: 1 },
      done: () => void finished++,
      changed: (change) => void changes.push(change),
    });
    /** Pushes `n` events one after another, each finished before the next (concurrency 1). */
    const deliver = async (n: number) => {
      for (let i = 0; i < n; i++) {
        const before = finished;
        queue.push(i);
        while (finished === before) await new Promise((resolve) => setImmediate(resolve));
      }
    };
    return { clock, endpoint, changes, queue, deliver, kinds: () => changes.map((c) => c.kind) };
  }

  it('a failing endpoint: failing once, circuit opened once, however many events follow', async () => {
    const q = scripted();
    await q.deliver(5);
    assert.deepEqual(q.changes, [], 'successes change nothing');
    q.endpoint.ok = false;
    await q.deliver(10);
    assert.deepEqual(q.changes, [
      { kind: 'failing', status: 503, timedOut: false },
      { kind: 'circuit_opened', openMs: 1_000, status: 503, timedOut: false },
    ]);
    // A flood while open: every event fails fast, no change more.
    for (let i = 0; i < 1_000; i++) q.queue.push(i);
    assert.equal(q.changes.length, 2);
  });

  it('circuit closed at the first success; recovered only once no failure came for 30 s', async () => {
    const q = scripted();
    q.endpoint.ok = false;
    await q.deliver(10);
    assert.deepEqual(q.kinds(), ['failing', 'circuit_opened']);
    await q.clock.advance(1_000);
    q.endpoint.ok = true;
    await q.deliver(1); // the half-open probe
    assert.deepEqual(q.kinds(), ['failing', 'circuit_opened', 'circuit_closed']);
    await q.clock.advance(RECOVERED_AFTER_MS - 1_001);
    await q.deliver(3);
    assert.equal(q.changes.length, 3, 'not recovered 29 s after the last failure');
    await q.clock.advance(1);
    await q.deliver(1);
    assert.deepEqual(q.changes.at(-1), { kind: 'recovered', failures: 10, failingMs: RECOVERED_AFTER_MS });
    // Failing again after the recovery is a new change.
    q.endpoint.ok = false;
    await q.deliver(1);
    assert.deepEqual(q.kinds(), ['failing', 'circuit_opened', 'circuit_closed', 'recovered', 'failing']);
  });

  it('tells a timeout from an answer, and passes no reason text on', async () => {
    const clock = new SimClock();
    const changes: QueueChange[] = [];
    const items: number[] = [];
    const queue = new VirtualQueue<number>(SETTINGS, clock, {
      deliver: async () => ({ kind: 'retry', reason: 'timeout after 1000ms', durationMs: 1_000 }),
      done: () => {},
      changed: (change, item) => {
        changes.push(change);
        items.push(item);
      },
    });
    queue.push(7);
    while (changes.length === 0) await new Promise((resolve) => setImmediate(resolve));
    assert.deepEqual(changes, [{ kind: 'failing', status: undefined, timedOut: true }]);
    assert.deepEqual(items, [7], 'the item whose delivery changed it');
  });

  it('a flapping endpoint under a flood: one failing per 30 s, not one per event', async () => {
    const q = scripted();
    // 2,000 deliveries, every other one failing (never 10 in a row: the circuit stays closed),
    // 10 ms apart: 20 s of flapping.
    for (let i = 0; i < 2_000; i++) {
      q.endpoint.ok = i % 2 === 0;
      await q.deliver(1);
      await q.clock.advance(10);
    }
    assert.deepEqual(q.kinds(), ['failing']);
    // The same for 60 s more: it never recovers, since a failure keeps coming.
    for (let i = 0; i < 6_000; i++) {
      q.endpoint.ok = i % 2 === 0;
      await q.deliver(1);
      await q.clock.advance(10);
    }
    assert.deepEqual(q.kinds(), ['failing']);
  });
});
