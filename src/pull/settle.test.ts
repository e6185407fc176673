import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { EventRecord } from '../core/event.ts';
import { decidePull, PULL_EXPIRED_REASON, pullPolicy } from './settle.ts';

const NOW = Date.UTC(2026, 0, 1);
const POLICY = { maxAttempts: 3, minBackoffMs: 1_000, maxBackoffMs: 60_000, coefficient: 2 };

function claimed(o: Partial<EventRecord> = {}): EventRecord {
  return {
    tenantId: 't',
    id: 'e',
    shard: 0,
    seq: 1,
    state: 'executing',
    version: 2,
    fireAt: NOW,
    dueAt: NOW,
    destination: { name: 'jobs' },
    queue: 'name:jobs',
    payload: '{}',
    headers: {},
    group: null,
    retry: null,
    expireAt: null,
    tags: {},
    type: null,
    attempts: 1,
    lastStatus: null,
    lastError: null,
    requestHash: '',
    createdAt: NOW,
    updatedAt: NOW,
    leaseOwner: 'pull',
    leaseUntil: NOW + 30_000,
    ...o,
  };
}

const decide = (event: EventRecord, end: Parameters<typeof decidePull>[0]['end']) =>
  decidePull({ event, receipt: 'r', end, policy: POLICY, now: NOW, random: () => 0.5 });

test('ack succeeds; nack with discard discards, with the reason or a default', () => {
  assert.deepEqual(decide(claimed(), { action: 'ack' }), {
    tenantId: 't',
    id: 'e',
    receipt: 'r',
    attempts: 1,
    action: 'ack',
    now: NOW,
    to: 'succeeded',
  });
  assert.equal(decide(claimed(), { action: 'nack', discard: true }).to, 'discarded');
  assert.equal(decide(claimed(), { action: 'nack', discard: true, reason: 'bad payload' }).error, 'bad payload');
});

test('a nack retries after its retryAfter exactly, or after the backoff; an expiry after the backoff', () => {
  const r = decide(claimed(), { action: 'nack', discard: false, retryAfterMs: 10_000 });
  assert.deepEqual([r.to, r.retryAt, r.attempts], ['awaiting_retry', NOW + 10_000, 1]);
  const short = decide(claimed({ attempts: 2 }), { action: 'nack', discard: false, retryAfterMs: 0 });
  assert.equal(short.retryAt, NOW, 'retryAfter 0 is honoured even when the backoff is longer');
  const b = decide(claimed(), { action: 'nack', discard: false });
  assert.deepEqual([b.to, b.retryAt, b.error], ['awaiting_retry', NOW + 750, 'nacked by the consumer']);
  const x = decide(claimed({ attempts: 2 }), { action: 'expire' });
  assert.deepEqual(
    [x.to, x.retryAt, x.error, x.action],
    ['awaiting_retry', NOW + 1_500, PULL_EXPIRED_REASON, 'expire'],
  );
});

test('archives once the attempts are spent or the retry would fall past expireAt', () => {
  assert.equal(decide(claimed({ attempts: 3 }), { action: 'expire' }).to, 'archived');
  assert.equal(decide(claimed({ attempts: 3 }), { action: 'nack', discard: false, retryAfterMs: 1 }).to, 'archived');
  assert.equal(
    decide(claimed({ expireAt: NOW + 100 }), { action: 'nack', discard: false, retryAfterMs: 5_000 }).to,
    'archived',
  );
});

test("the policy: the event's own, else the destination's, else the default", () => {
  const own = { ...POLICY, maxAttempts: 7 };
  assert.equal(pullPolicy(claimed({ retry: own }), null).maxAttempts, 7);
  assert.equal(
    pullPolicy(claimed(), {
      kind: 'pull',
      headers: {},
      timeoutMs: 1,
      retry: POLICY,
      rateLimitPerSecond: null,
      maxConcurrency: 1,
    }).maxAttempts,
    3,
  );
  assert.equal(pullPolicy(claimed(), null).maxAttempts, 12);
});
