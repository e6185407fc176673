/** Percentiles and rates over samples measured by the driver or the receiver. */

export interface Distribution {
  count: number;
  p50: number;
  p90: number;
  p99: number;
  p999: number;
  max: number;
  mean: number;
}

/** Nearest-rank percentiles; NaN (shown as "—") for no samples. */
export function distribution(samples: ArrayLike<number>): Distribution {
  const sorted = Float64Array.from(samples).sort();
  const n = sorted.length;
  if (n === 0) return { count: 0, p50: NaN, p90: NaN, p99: NaN, p999: NaN, max: NaN, mean: NaN };
  const at = (q: number) => sorted[Math.min(n - 1, Math.max(0, Math.ceil(q * n) - 1))];
  let sum = 0;
  for (const v of sorted) sum += v;
  return { count: n, p50: at(0.5), p90: at(0.9), p99: at(0.99), p999: at(0.999), max: sorted[n - 1], mean: sum / n };
}

/** Items per second over an interval in ms (0 for an empty interval). */
export function perSecond(items: number, elapsedMs: number): number {
  return elapsedMs > 0 ? (items * 1000) / elapsedMs : 0;
}

export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/** What a chart needs of one run: the lateness CDF and deliveries per second over time. */
export interface ChartSeries {
  /** [lateness ms, fraction of deliveries at or below it], ascending. */
  cdf: [number, number][];
  /** Deliveries per second in consecutive buckets of `bucketMs`, from `fromAt`. */
  timeline: { fromAt: number; bucketMs: number; perSecond: number[] };
}

const CDF_POINTS = 200;
const TIMELINE_BUCKETS_MAX = 600;
/** Buckets of a quarter second: short enough to show a poller's rhythm, long enough not to be noise. */
const TIMELINE_BUCKET_MS_MIN = 250;

/**
 * The chart data of deliveries given by due time and lateness (receivedAt = fireAt + lateness),
 * with time measured from `fromAt` (the first due time of the scenario).
 */
export function chartSeries(fireAtMs: ArrayLike<number>, latenessMs: ArrayLike<number>, fromAt: number): ChartSeries {
  const sorted = Float64Array.from(latenessMs).sort();
  const n = sorted.length;
  const cdf: [number, number][] = [];
  for (let k = 1; k <= CDF_POINTS && n > 0; k++) {
    const q = k / CDF_POINTS;
    cdf.push([sorted[Math.min(n - 1, Math.ceil(q * n) - 1)], q]);
  }
  let lastAt = fromAt;
  for (let i = 0; i < fireAtMs.length; i++) lastAt = Math.max(lastAt, fireAtMs[i] + latenessMs[i]);
  const spanMs = Math.max(1, lastAt - fromAt);
  const bucketMs = Math.max(TIMELINE_BUCKET_MS_MIN, Math.ceil(spanMs / TIMELINE_BUCKETS_MAX / 100) * 100);
  const counts = new Array<number>(Math.floor(spanMs / bucketMs) + 1).fill(0);
  for (let i = 0; i < fireAtMs.length; i++) {
    const b = Math.floor((fireAtMs[i] + latenessMs[i] - fromAt) / bucketMs);
    if (b >= 0 && b < counts.length) counts[b]++;
  }
  return { cdf, timeline: { fromAt, bucketMs, perSecond: counts.map((c) => (c * 1000) / bucketMs) } };
}
