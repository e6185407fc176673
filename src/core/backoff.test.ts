import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { backoffDelayMs, resolveRetryPolicy, DEFAULT_RETRY, RETRY_BACKOFF_MS_MAX } from './backoff.ts';

const policy = { maxAttempts: 50, minBackoffMs: 1_000, maxBackoffMs: 3_600_000, coefficient: 2 };

describe('backoffDelayMs', () => {
  it('grows exponentially and caps at maxBackoff', () => {
    const max = () => 1 - Number.EPSILON;
    assert.equal(backoffDelayMs(policy, 1, max), 999);
    assert.equal(backoffDelayMs(policy, 2, max), 1_999);
    assert.equal(backoffDelayMs(policy, 5, max), 15_999);
    assert.equal(backoffDelayMs(policy, 40, max), 3_599_999);
  });
  it('jitter stays within [delay/2, delay]', () => {
    for (let attempt = 1; attempt < 20; attempt++) {
      const lo = backoffDelayMs(policy, attempt, () => 0);
      const hi = backoffDelayMs(policy, attempt, () => 0.999999);
      const raw = Math.min(policy.maxBackoffMs, policy.minBackoffMs * 2 ** (attempt - 1));
      assert.equal(lo, Math.floor(raw / 2));
      assert.ok(hi <= raw && hi >= lo);
    }
  });
  it('survives huge attempt counts', () => {
    assert.equal(
      backoffDelayMs(policy, 1e9, () => 0),
      1_800_000,
    );
  });
  it('honours Retry-After above the backoff, bounded', () => {
    assert.equal(
      backoffDelayMs(policy, 1, () => 0, 120_000),
      120_000,
    );
    assert.equal(
      backoffDelayMs(policy, 1, () => 0, 1e15),
      RETRY_BACKOFF_MS_MAX,
    );
  });
});

describe('resolveRetryPolicy', () => {
  it('merges durations over the defaults', () => {
    assert.deepEqual(resolveRetryPolicy({ maxAttempts: 3, minBackoff: '250ms' }), {
      ...DEFAULT_RETRY,
      maxAttempts: 3,
      minBackoffMs: 250,
    });
  });
  for (const [name, input] of [
    ['zero attempts', { maxAttempts: 0 }],
    ['min above max', { minBackoff: '2h', maxBackoff: '1h' }],
    ['bad duration', { minBackoff: '5 minutes' }],
    ['coefficient below 1', { coefficient: 0.5 }],
  ] as const) {
    it(`rejects ${name}`, () => assert.throws(() => resolveRetryPolicy(input), RangeError));
  }
});
