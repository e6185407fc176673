import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { SimClock } from './clock.ts';
import { tick } from '../../test/support/sim-time.ts';
import { runEvery } from './loop.ts';

describe('runEvery', () => {
  it('runs a pass, pauses, runs again; survives a pass that throws; stops when aborted', async () => {
    const clock = new SimClock();
    const abort = new AbortController();
    const at: number[] = [];
    const errors: unknown[] = [];
    const loop = runEvery(
      clock,
      1_000,
      abort.signal,
      async () => {
        at.push(clock.monotonicMs());
        if (at.length === 2) throw new Error('one bad pass');
      },
      { onError: (err) => errors.push(err) },
    );
    await tick(clock, 2_000);
    assert.deepEqual(
      at.map((t) => t - at[0]),
      [0, 1_000, 2_000],
    );
    assert.equal(errors.length, 1);
    abort.abort();
    await loop;
    await tick(clock, 5_000);
    assert.equal(at.length, 3, 'no pass after the abort');
  });

  it('pauses first when asked', async () => {
    const clock = new SimClock();
    const abort = new AbortController();
    let passes = 0;
    const loop = runEvery(clock, 500, abort.signal, async () => void passes++, { pauseFirst: true });
    await tick(clock, 0);
    assert.equal(passes, 0);
    await tick(clock, 500);
    assert.equal(passes, 1);
    abort.abort();
    await loop;
  });

  it("takes its pause from each pass's result when given a function (undefined after a pass that threw)", async () => {
    const clock = new SimClock();
    const abort = new AbortController();
    const at: number[] = [];
    const results: (number | undefined)[] = [];
    const loop = runEvery(
      clock,
      (left: number | undefined) => (results.push(left), left === undefined ? 300 : left > 0 ? 50 : 1_000),
      abort.signal,
      async () => {
        at.push(clock.monotonicMs());
        if (at.length === 3) throw new Error('one bad pass');
        return 2 - at.length; // work left: 1, 0, (throws), -2
      },
    );
    await tick(clock, 1_350);
    assert.deepEqual(
      at.map((t) => t - at[0]),
      [0, 50, 1_050, 1_350],
    );
    assert.deepEqual(results.slice(0, 3), [1, 0, undefined]);
    abort.abort();
    await loop;
  });
});
