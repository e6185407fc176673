import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { SimClock } from './clock.ts';
import { TokenBucket } from './token-bucket.ts';

describe('TokenBucket', () => {
  it('starts full: lets `burst` through at once, then reports the wait', () => {
    const clock = new SimClock();
    const bucket = new TokenBucket({ perSecond: 10, burst: 3 }, clock);
    assert.deepEqual([bucket.take(), bucket.take(), bucket.take()], [0, 0, 0]);
    assert.equal(bucket.take(), 100);
    // Asking again does not consume: the answer stays the same.
    assert.equal(bucket.take(), 100);
  });

  it('refills at perSecond and the reported wait is exact', async () => {
    const clock = new SimClock();
    const bucket = new TokenBucket({ perSecond: 10, burst: 1 }, clock);
    assert.equal(bucket.take(), 0);
    await clock.advance(40);
    assert.equal(bucket.take(), 60);
    await clock.advance(59);
    assert.equal(bucket.take(), 1);
    await clock.advance(1);
    assert.equal(bucket.take(), 0);
    assert.equal(bucket.take(), 100);
  });

  it('defaults burst to max(1, perSecond)', () => {
    const clock = new SimClock();
    const fast = new TokenBucket({ perSecond: 200 }, clock);
    let passed = 0;
    while (fast.take() === 0) passed++;
    assert.equal(passed, 200);

    const slow = new TokenBucket({ perSecond: 0.5 }, clock);
    assert.equal(slow.take(), 0);
    assert.equal(slow.take(), 2000);
  });

  it('never holds more than burst after a long quiet spell', async () => {
    const clock = new SimClock();
    const bucket = new TokenBucket({ perSecond: 100, burst: 5 }, clock);
    await clock.advance(3_600_000);
    let passed = 0;
    while (bucket.take() === 0) passed++;
    assert.equal(passed, 5);
  });

  it('sustains perSecond over a long run', async () => {
    const clock = new SimClock();
    const bucket = new TokenBucket({ perSecond: 50 }, clock);
    let passed = 0;
    for (let ms = 0; ms < 10_000; ms++) {
      while (bucket.take() === 0) passed++;
      await clock.advance(1);
    }
    // 50 from the initial burst plus 50/s for 10 s (the last ms may or may not have refilled).
    assert.ok(passed >= 549 && passed <= 550, `passed ${passed}`);
  });

  it('ignores wall-clock jumps', () => {
    const clock = new SimClock();
    const bucket = new TokenBucket({ perSecond: 1 }, clock);
    assert.equal(bucket.take(), 0);
    clock.jump(3_600_000);
    assert.equal(bucket.take(), 1000);
    clock.jump(-7_200_000);
    assert.equal(bucket.take(), 1000);
  });

  it('rejects invalid options', () => {
    const clock = new SimClock();
    assert.throws(() => new TokenBucket({ perSecond: 0 }, clock), RangeError);
    assert.throws(() => new TokenBucket({ perSecond: -1 }, clock), RangeError);
    assert.throws(() => new TokenBucket({ perSecond: Number.NaN }, clock), RangeError);
    assert.throws(() => new TokenBucket({ perSecond: 10, burst: 0.5 }, clock), RangeError);
  });

  it('takeUpTo takes the whole tokens there are, or says how long until one is', async () => {
    const clock = new SimClock();
    const bucket = new TokenBucket({ perSecond: 4, burst: 4 }, clock);
    assert.deepEqual(bucket.takeUpTo(3), { granted: 3, waitMs: 0 });
    assert.deepEqual(bucket.takeUpTo(3), { granted: 1, waitMs: 0 });
    assert.deepEqual(bucket.takeUpTo(1), { granted: 0, waitMs: 250 });
    await clock.advance(500);
    assert.deepEqual(bucket.takeUpTo(5), { granted: 2, waitMs: 0 });
  });

  it('setRate: the tokens kept up to the new burst, the time since flows in at the new rate', async () => {
    const clock = new SimClock();
    const bucket = new TokenBucket({ perSecond: 10, burst: 10 }, clock);
    bucket.setRate({ perSecond: 2, burst: 2 });
    assert.equal(bucket.available, 2);
    assert.deepEqual(bucket.takeUpTo(2), { granted: 2, waitMs: 0 });
    await clock.advance(250);
    bucket.setRate({ perSecond: 8, burst: 8 });
    assert.equal(bucket.available, 2);
  });
});
