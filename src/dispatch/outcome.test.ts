import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { decideNext } from './outcome.ts';
import type { RetryPolicy } from '../core/backoff.ts';

const policy: RetryPolicy = { maxAttempts: 3, minBackoffMs: 1_000, maxBackoffMs: 60_000, coefficient: 2 };
const base = { policy, expireAt: null, now: 1_000_000, random: () => 1 - Number.EPSILON };

describe('decideNext', () => {
  const cases: { name: string; params: Parameters<typeof decideNext>[0]; want: ReturnType<typeof decideNext> }[] = [
    {
      name: '2xx succeeds',
      params: { ...base, attempts: 1, outcome: { kind: 'delivered', status: 200, durationMs: 3 } },
      want: { to: 'succeeded' },
    },
    {
      name: 'discard is final',
      params: { ...base, attempts: 1, outcome: { kind: 'discard', reason: 'HTTP 404', durationMs: 3 } },
      want: { to: 'discarded', error: 'HTTP 404' },
    },
    {
      name: 'first failure retries after about minBackoff',
      params: { ...base, attempts: 1, outcome: { kind: 'retry', reason: 'HTTP 500', durationMs: 3 } },
      want: { to: 'awaiting_retry', retryAt: 1_000_000 + 999, error: 'HTTP 500' },
    },
    {
      name: 'second failure doubles',
      params: { ...base, attempts: 2, outcome: { kind: 'retry', reason: 'timeout', durationMs: 3 } },
      want: { to: 'awaiting_retry', retryAt: 1_000_000 + 1_999, error: 'timeout' },
    },
    {
      name: 'Retry-After raises the delay',
      params: {
        ...base,
        attempts: 1,
        outcome: { kind: 'retry', reason: 'HTTP 429', retryAfterMs: 30_000, durationMs: 3 },
      },
      want: { to: 'awaiting_retry', retryAt: 1_030_000, error: 'HTTP 429' },
    },
    {
      name: 'attempts exhausted archives',
      params: { ...base, attempts: 3, outcome: { kind: 'retry', reason: 'HTTP 500', durationMs: 3 } },
      want: { to: 'archived', error: 'attempts exhausted (3/3): HTTP 500' },
    },
    {
      name: 'a retry after expireAt archives',
      params: {
        ...base,
        expireAt: 1_000_500,
        attempts: 1,
        outcome: { kind: 'retry', reason: 'HTTP 500', durationMs: 3 },
      },
      want: { to: 'archived', error: 'expired before the next attempt: HTTP 500' },
    },
  ];
  for (const c of cases) it(c.name, () => assert.deepEqual(decideNext(c.params), c.want));
});
