/**
 * The due-load forecast's pure parts: the bucket grid of a window and the spike rule.
 *
 * Grid: buckets of `bucketMs` aligned to the epoch (a 1m bucket starts at a whole minute), the
 * first one holding `fromMs`, the last one holding `toMs - 1`. The window holds at most
 * FORECAST_BUCKETS_MAX bucket lengths; a window that starts inside a bucket has one grid bucket
 * more (24 hours of minutes from now: 1,441 buckets, the first and last partly outside).
 *
 * Spike rule: bucket i is a spike when
 *     count[i] ≥ SPIKE_COUNT_MIN  and  count[i] ≥ SPIKE_FACTOR × max(1, median of its neighbours)
 * where its neighbours are the buckets within SPIKE_NEIGHBOURS on either side (fewer at the
 * window's edges; itself excluded). The median, not the mean, so that two spikes side by side
 * do not hide each other, and a bucket next to one is not flagged for standing in its shadow.
 * SPIKE_COUNT_MIN keeps a quiet window (1 event where there were none) from flagging noise.
 */

/** Buckets one forecast may hold: 24 hours of minutes. */
export const FORECAST_BUCKETS_MAX = 1_440;
export const SPIKE_FACTOR = 4;
export const SPIKE_COUNT_MIN = 10;
export const SPIKE_NEIGHBOURS = 5;

export interface ForecastGrid {
  /** Start of the first bucket (aligned). */
  startMs: number;
  bucketMs: number;
  buckets: number;
}

/** The grid covering [fromMs, toMs); null when the window is longer than `bucketsMax` buckets. */
export function forecastGrid(
  fromMs: number,
  toMs: number,
  bucketMs: number,
  bucketsMax = FORECAST_BUCKETS_MAX,
): ForecastGrid | null {
  if (!(bucketMs >= 1) || !Number.isSafeInteger(bucketMs))
    throw new RangeError(`forecastGrid: bucketMs must be a positive integer, got ${bucketMs}`);
  if (!(toMs > fromMs)) throw new RangeError('forecastGrid: toMs must be after fromMs');
  if (toMs - fromMs > bucketsMax * bucketMs) return null;
  const startMs = Math.floor(fromMs / bucketMs) * bucketMs;
  return { startMs, bucketMs, buckets: Math.ceil((toMs - startMs) / bucketMs) };
}

function median(values: number[]): number {
  if (values.length === 0) return 0;
  const s = [...values].sort((a, b) => a - b);
  const mid = s.length >> 1;
  return s.length % 2 ? s[mid] : (s[mid - 1] + s[mid]) / 2;
}

/** Which buckets are spikes, by the rule in this file's header. */
export function spikes(counts: readonly number[]): boolean[] {
  return counts.map((n, i) => {
    if (n < SPIKE_COUNT_MIN) return false;
    const around: number[] = [];
    for (let j = Math.max(0, i - SPIKE_NEIGHBOURS); j <= Math.min(counts.length - 1, i + SPIKE_NEIGHBOURS); j++)
      if (j !== i) around.push(counts[j]);
    return n >= SPIKE_FACTOR * Math.max(1, median(around));
  });
}
