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

/** Nearest-rank percentiles; all zero for no samples. */
export function distribution(samples: ArrayLike<number>): Distribution {
  const sorted = Float64Array.from(samples).sort();
  const n = sorted.length;
  if (n === 0) return { count: 0, p50: 0, p90: 0, p99: 0, p999: 0, max: 0, mean: 0 };
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
