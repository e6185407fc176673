/** Scheduling through POST /v1/events/batch: bodies built ahead, posted by concurrent clients. */
import { runConcurrently, type BenchClient } from './http.ts';

/** The API's bound on events per batch request. */
export const BATCH_SIZE_MAX = 1_000;

export interface BatchTally {
  /** Items answered "created" or "existing": on disk. */
  acknowledged: number;
  failed: number;
  /** The first error seen, for the report. */
  error?: string;
}

/** Serialises events [0, n) into batch request bodies of at most `batchSize` events. */
export function batchBodies(n: number, make: (i: number) => object, batchSize = BATCH_SIZE_MAX): string[] {
  const bodies: string[] = [];
  for (let start = 0; start < n; start += batchSize) {
    const events = [];
    for (let i = start; i < Math.min(n, start + batchSize); i++) events.push(make(i));
    bodies.push(JSON.stringify({ events }));
  }
  return bodies;
}

/** Posts one batch body (with `headers` added, such as Prefer) and adds its per-item outcome to `tally`. */
export async function postBatch(
  client: BenchClient,
  body: string,
  tally: BatchTally,
  headers?: Record<string, string>,
): Promise<void> {
  try {
    const res = await client.call('POST', '/v1/events/batch', body, headers);
    if (res.status !== 200) throw new Error(`batch: HTTP ${res.status} ${JSON.stringify(res.body).slice(0, 300)}`);
    for (const item of res.body.results as { status: string; error?: unknown }[]) {
      if (item.status === 'created' || item.status === 'existing') tally.acknowledged++;
      else {
        tally.failed++;
        tally.error ??= JSON.stringify(item.error).slice(0, 300);
      }
    }
  } catch (err) {
    tally.failed += (JSON.parse(body) as { events: unknown[] }).events.length;
    tally.error ??= String(err);
  }
}

/** Posts every body, `concurrency` requests at a time (with `headers` added). */
export async function postBatches(
  client: BenchClient,
  bodies: string[],
  concurrency: number,
  headers?: Record<string, string>,
): Promise<BatchTally> {
  const tally: BatchTally = { acknowledged: 0, failed: 0 };
  await runConcurrently(bodies.length, concurrency, (i) => postBatch(client, bodies[i], tally, headers));
  return tally;
}
