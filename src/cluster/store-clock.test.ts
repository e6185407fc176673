import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { pino } from 'pino';
import { SimClock } from '../core/clock.ts';
import { StoreClock } from './store-clock.ts';

const logger = pino({ level: 'silent' });

/** The store's clock: true time, `skewMs` away from the node's wall clock at the start; it never jumps. */
function storeOf(local: SimClock, skewMs: number) {
  const base = local.now() + skewMs - local.monotonicMs();
  return { timeNow: async () => base + local.monotonicMs() };
}

describe('StoreClock', () => {
  it('reads the store clock at calibration, then advances with monotonic time', async () => {
    const local = new SimClock();
    const clock = new StoreClock(local, storeOf(local, 2_500), logger);
    assert.equal(await clock.calibrate(), 2_500);
    const t = clock.now();
    assert.equal(t, local.now() + 2_500);
    await local.advance(1_234);
    assert.equal(clock.now(), t + 1_234);
  });

  it('moves nothing when the local wall clock steps forward or back between calibrations', async () => {
    const local = new SimClock();
    const clock = new StoreClock(local, storeOf(local, 0), logger);
    await clock.calibrate();
    const t = clock.now();
    local.jump(3_600_000);
    assert.equal(clock.now(), t, 'a step forward of an hour: the store clock stays');
    local.jump(-7_200_000);
    assert.equal(clock.now(), t, 'a step back: the store clock stays');
    await local.advance(500);
    assert.equal(clock.now(), t + 500);
    // The next calibration reads the store, whose clock never jumped: nothing changes.
    await clock.calibrate();
    assert.equal(clock.now(), t + 500);
    assert.equal(clock.skewMs, 3_600_000, 'the skew against the stepped wall clock is reported');
  });

  it('follows the store from its first reading even when the wall clock jumps between start and then', async () => {
    const local = new SimClock();
    const store = storeOf(local, 0);
    const clock = new StoreClock(local, store, logger);
    local.jump(-60_000);
    await clock.calibrate();
    assert.equal(clock.now(), await store.timeNow());
  });

  it('never runs ahead of the store, whatever the round trip', async () => {
    const local = new SimClock();
    const truth = storeOf(local, 0);
    // The store reads its clock halfway through a 40 ms round trip.
    const slow = {
      timeNow: async () => {
        await local.advance(20);
        const t = await truth.timeNow();
        await local.advance(20);
        return t;
      },
    };
    const clock = new StoreClock(local, slow, logger);
    await clock.calibrate();
    assert.ok(clock.now() <= (await truth.timeNow()), 'at most one round trip behind, never ahead');
    assert.ok(clock.now() >= (await truth.timeNow()) - 40);
  });
});
