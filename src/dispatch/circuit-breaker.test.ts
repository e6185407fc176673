import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { SimClock } from '../core/clock.ts';
import { CircuitBreaker } from './circuit-breaker.ts';

function failTimes(breaker: CircuitBreaker, n: number): void {
  for (let i = 0; i < n; i++) breaker.onFailure();
}

describe('CircuitBreaker', () => {
  it('stays closed below the threshold; a success resets the count', () => {
    const clock = new SimClock();
    const breaker = new CircuitBreaker({ failureThreshold: 3 }, clock);
    failTimes(breaker, 2);
    breaker.onSuccess();
    failTimes(breaker, 2);
    assert.equal(breaker.state, 'closed');
    assert.deepEqual(breaker.check(), { ok: true });
  });

  it('opens after failureThreshold consecutive failures (default 10)', () => {
    const clock = new SimClock();
    const breaker = new CircuitBreaker({}, clock);
    failTimes(breaker, 9);
    assert.equal(breaker.state, 'closed');
    breaker.onFailure();
    assert.equal(breaker.state, 'open');
    assert.deepEqual(breaker.check(), { ok: false, retryInMs: 1000 });
  });

  it('reports the time left while open', async () => {
    const clock = new SimClock();
    const breaker = new CircuitBreaker({ failureThreshold: 1, openMs: 500 }, clock);
    breaker.onFailure();
    await clock.advance(200);
    assert.deepEqual(breaker.check(), { ok: false, retryInMs: 300 });
    assert.equal(breaker.state, 'open');
  });

  it('lets exactly one probe through after openMs; others wait for its result', async () => {
    const clock = new SimClock();
    const breaker = new CircuitBreaker({ failureThreshold: 1, openMs: 500 }, clock);
    breaker.onFailure();
    await clock.advance(500);
    assert.deepEqual(breaker.check(), { ok: true });
    assert.equal(breaker.state, 'half_open');
    for (let i = 0; i < 5; i++) {
      const check = breaker.check();
      assert.equal(check.ok, false);
      assert.ok(!check.ok && check.retryInMs > 0);
    }
    breaker.onSuccess();
    assert.equal(breaker.state, 'closed');
    assert.deepEqual(breaker.check(), { ok: true });
    assert.deepEqual(breaker.check(), { ok: true });
  });

  it('says what check() would let through without taking the probe (admits)', async () => {
    const clock = new SimClock();
    const breaker = new CircuitBreaker({ failureThreshold: 1, openMs: 500, probeMsMax: 2000 }, clock);
    assert.deepEqual(breaker.admits(), { admits: 'all' });
    breaker.onFailure();
    assert.deepEqual(breaker.admits(), { admits: 'none', inMs: 500 });
    await clock.advance(500);
    // Asked any number of times, the probe stays there for check() to take.
    assert.deepEqual(breaker.admits(), { admits: 'probe' });
    assert.deepEqual(breaker.admits(), { admits: 'probe' });
    assert.equal(breaker.state, 'open');
    assert.deepEqual(breaker.check(), { ok: true });
    assert.deepEqual(breaker.admits(), { admits: 'none', inMs: 2000 });
    await clock.advance(2000);
    assert.deepEqual(breaker.admits(), { admits: 'probe' }, 'the probe in flight is presumed lost');
    breaker.onSuccess();
    assert.deepEqual(breaker.admits(), { admits: 'all' });
  });

  it('a failed probe reopens with a doubled duration, bounded by openMsMax', async () => {
    const clock = new SimClock();
    const breaker = new CircuitBreaker({ failureThreshold: 1, openMs: 1000, openMsMax: 5000 }, clock);
    breaker.onFailure();
    const seen: number[] = [];
    for (let round = 0; round < 5; round++) {
      await clock.advance(breaker.openMs);
      assert.deepEqual(breaker.check(), { ok: true }, `probe in round ${round}`);
      breaker.onFailure();
      assert.equal(breaker.state, 'open');
      seen.push(breaker.openMs);
    }
    assert.deepEqual(seen, [2000, 4000, 5000, 5000, 5000]);
    const check = breaker.check();
    assert.deepEqual(check, { ok: false, retryInMs: 5000 });
  });

  it('a success resets the open duration to openMs', async () => {
    const clock = new SimClock();
    const breaker = new CircuitBreaker({ failureThreshold: 2, openMs: 1000 }, clock);
    failTimes(breaker, 2);
    await clock.advance(1000);
    breaker.check();
    breaker.onFailure(); // probe failed: 2000 ms
    await clock.advance(2000);
    assert.deepEqual(breaker.check(), { ok: true });
    breaker.onSuccess();
    assert.equal(breaker.openMs, 1000);
    // It takes the full threshold again to reopen, and then for openMs.
    breaker.onFailure();
    assert.equal(breaker.state, 'closed');
    breaker.onFailure();
    assert.deepEqual(breaker.check(), { ok: false, retryInMs: 1000 });
  });

  it('ignores late failures while open (they do not extend the open time)', async () => {
    const clock = new SimClock();
    const breaker = new CircuitBreaker({ failureThreshold: 1, openMs: 1000 }, clock);
    breaker.onFailure();
    await clock.advance(600);
    failTimes(breaker, 20);
    assert.deepEqual(breaker.check(), { ok: false, retryInMs: 400 });
    assert.equal(breaker.openMs, 1000);
  });

  it('lets another probe through when one stays unanswered past probeMsMax', async () => {
    const clock = new SimClock();
    const breaker = new CircuitBreaker({ failureThreshold: 1, openMs: 100, probeMsMax: 5000 }, clock);
    breaker.onFailure();
    await clock.advance(100);
    assert.deepEqual(breaker.check(), { ok: true });
    await clock.advance(4999);
    assert.equal(breaker.check().ok, false);
    await clock.advance(1);
    assert.deepEqual(breaker.check(), { ok: true });
    assert.equal(breaker.check().ok, false);
  });

  it('uses monotonic time: wall-clock jumps change nothing', async () => {
    const clock = new SimClock();
    const breaker = new CircuitBreaker({ failureThreshold: 1, openMs: 1000 }, clock);
    breaker.onFailure();
    clock.jump(3_600_000);
    assert.deepEqual(breaker.check(), { ok: false, retryInMs: 1000 });
    clock.jump(-7_200_000);
    assert.deepEqual(breaker.check(), { ok: false, retryInMs: 1000 });
  });

  it('rejects invalid options', () => {
    const clock = new SimClock();
    assert.throws(() => new CircuitBreaker({ failureThreshold: 0 }, clock), RangeError);
    assert.throws(() => new CircuitBreaker({ openMs: 0 }, clock), RangeError);
  });
});
