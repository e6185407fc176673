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
import { CLAIMED_MAX, CLAIMED_MIN, claimedMaxOf, VirtualQueue } from './virtual-queue.ts';

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
