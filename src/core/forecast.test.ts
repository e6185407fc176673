import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { FORECAST_BUCKETS_MAX, forecastGrid, SPIKE_COUNT_MIN, spikes } from './forecast.ts';

const MIN = 60_000;

describe('forecastGrid', () => {
  it('aligns the first bucket to the bucket size and covers the window', () => {
    const cases: [number, number, number, { startMs: number; buckets: number }][] = [
      [0, 60 * MIN, MIN, { startMs: 0, buckets: 60 }],
      [30_000, 60 * MIN, MIN, { startMs: 0, buckets: 60 }],
      [30_000, 60 * MIN + 1, MIN, { startMs: 0, buckets: 61 }],
      [MIN - 1, MIN, MIN, { startMs: 0, buckets: 1 }],
      [MIN, MIN + 1, MIN, { startMs: MIN, buckets: 1 }],
      [90 * MIN, 24 * 60 * MIN, 60 * MIN, { startMs: 60 * MIN, buckets: 23 }],
    ];
    for (const [from, to, b, want] of cases)
      assert.deepEqual(forecastGrid(from, to, b), { ...want, bucketMs: b }, `${from}..${to}/${b}`);
  });

  it('refuses more buckets than the bound, and bad arguments', () => {
    assert.equal(forecastGrid(0, FORECAST_BUCKETS_MAX * MIN, MIN)?.buckets, FORECAST_BUCKETS_MAX);
    assert.equal(forecastGrid(0, FORECAST_BUCKETS_MAX * MIN + 1, MIN), null);
    // A day of minutes from a moment inside a minute: the window is 1,440 minutes long; its grid
    // has one bucket more, the first and last partly outside it.
    const grid = forecastGrid(30_000, 30_000 + FORECAST_BUCKETS_MAX * MIN, MIN);
    assert.deepEqual(grid, { startMs: 0, bucketMs: MIN, buckets: FORECAST_BUCKETS_MAX + 1 });
    assert.equal(forecastGrid(30_000, 30_001 + FORECAST_BUCKETS_MAX * MIN, MIN), null);
    assert.throws(() => forecastGrid(0, 10, 0), RangeError);
    assert.throws(() => forecastGrid(10, 10, 1), RangeError);
  });
});

describe('spikes', () => {
  it('flags a bucket at least 4 times the median of its neighbours, and at least SPIKE_COUNT_MIN', () => {
    const flat = [10, 10, 10, 10, 10, 40, 10, 10, 10, 10, 10];
    assert.deepEqual(
      spikes(flat)
        .map((s, i) => (s ? i : -1))
        .filter((i) => i >= 0),
      [5],
    );
    assert.deepEqual(spikes([10, 10, 10, 39, 10, 10]), [false, false, false, false, false, false], 'just under 4x');
    assert.deepEqual(spikes([0, 0, 0, SPIKE_COUNT_MIN - 1, 0, 0]).some(Boolean), false, 'too small to matter');
    assert.deepEqual(
      spikes([0, 0, 0, SPIKE_COUNT_MIN, 0, 0]),
      [false, false, false, true, false, false],
      'from nothing: 4 x max(1, 0)',
    );
  });

  it('finds two spikes side by side (the median ignores them) and not their neighbours', () => {
    const s = spikes([5, 5, 5, 5, 100, 100, 5, 5, 5, 5]);
    assert.deepEqual(
      s.map((x, i) => (x ? i : -1)).filter((i) => i >= 0),
      [4, 5],
    );
  });

  it('flags nothing in a steady ramp or a plateau, and handles the edges and empty input', () => {
    assert.equal(spikes(Array.from({ length: 30 }, (_, i) => 10 * i)).some(Boolean), false);
    assert.equal(spikes(Array(20).fill(1_000)).some(Boolean), false);
    assert.deepEqual(spikes([50, 1, 1, 1]), [true, false, false, false], 'the first bucket has neighbours on one side');
    assert.deepEqual(spikes([]), []);
    assert.deepEqual(spikes([100]), [true], 'a lone bucket has no neighbours: its baseline is 1');
  });
});
