/** brokerAttempt: how one broker send becomes an outcome under its timeout and its caller's signal. */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { SystemClock } from '../../core/clock.ts';
import type { DueEventCommon } from '../channel.ts';
import { brokerAttempt } from './attempt.ts';

const clock = new SystemClock();
const event = (timeoutMs: number): DueEventCommon => ({
  tenantId: 't',
  id: 'e',
  attempt: 1,
  payload: '{}',
  headers: {},
  timeoutMs,
  dueAt: 0,
});
const never = () => new Promise<void>(() => {});
const notPermanent = () => false;

describe('brokerAttempt', () => {
  it('is delivered when the send resolves, and names the broker in a failure', async () => {
    const ok = await brokerAttempt(
      event(1_000),
      new AbortController().signal,
      clock,
      'redis',
      async () => {},
      notPermanent,
    );
    assert.equal(ok.kind, 'delivered');
    const failed = await brokerAttempt(
      event(1_000),
      new AbortController().signal,
      clock,
      'redis',
      async () => {
        throw new Error('READONLY replica');
      },
      notPermanent,
    );
    assert.deepEqual([failed.kind, 'reason' in failed && failed.reason], ['retry', 'redis: READONLY replica']);
    const refused = await brokerAttempt(
      event(1_000),
      new AbortController().signal,
      clock,
      'redis',
      async () => {
        throw new Error('WRONGTYPE');
      },
      () => true,
    );
    assert.equal(refused.kind, 'discard');
  });

  it('retries after its timeout when the send never ends', async () => {
    const started = Date.now();
    const outcome = await brokerAttempt(event(200), new AbortController().signal, clock, 'nats', never, notPermanent);
    assert.deepEqual([outcome.kind, 'reason' in outcome && outcome.reason], ['retry', 'nats: timeout after 200ms']);
    assert.ok(Date.now() - started >= 190, 'not before its timeout');
  });

  it('ends every attempt in flight under a signal when it aborts, at once, and none after', async () => {
    const caller = new AbortController();
    const attempts = [1, 2, 3].map(() =>
      brokerAttempt(event(60_000), caller.signal, clock, 'amqp', never, notPermanent),
    );
    const done = brokerAttempt(event(60_000), caller.signal, clock, 'amqp', async () => {}, notPermanent);
    assert.equal((await done).kind, 'delivered');
    caller.abort();
    for (const outcome of await Promise.all(attempts))
      assert.deepEqual([outcome.kind, 'reason' in outcome && outcome.reason], ['retry', 'aborted']);
    const late = await brokerAttempt(event(60_000), caller.signal, clock, 'amqp', async () => {}, notPermanent);
    assert.deepEqual([late.kind, 'reason' in late && late.reason], ['retry', 'aborted']);
  });
});
