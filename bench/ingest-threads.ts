/**
 * The batch step of the ingest scenario alone, on a fresh Belfry node, with each of the node's
 * threads' busy share over the step (belfry_thread_busy_seconds_total): which thread bounds ingest.
 * N events in batches of 1,000, 4 in flight, as `npm run bench -- ingest` sends them. Prints one JSON line.
 *
 *   node --import tsx bench/ingest-threads.ts [sqlite|postgres] [--n 200000] [--minimal]
 *
 * --minimal: the batches ask for `Prefer: return=minimal` (no echo of the events).
 * --single: the single step instead: N events one per `POST /v1/events`, from 64 concurrent clients.
 */
import { parseArgs } from 'node:util';
import { createBelfryStore, startBenchNode } from './lib/node.ts';
import { runConcurrently } from './lib/http.ts';
import { batchBodies, postBatches } from './lib/schedule.ts';
import { belfryEventBody, NOWHERE_URL } from './systems/belfry.ts';
import { scrapeMetrics } from '../test/support/metrics.ts';

const { values, positionals } = parseArgs({
  allowPositionals: true,
  options: {
    n: { type: 'string', default: '200000' },
    minimal: { type: 'boolean', default: false },
    single: { type: 'boolean', default: false },
  },
});
const kind = (positionals[0] ?? 'sqlite') as 'sqlite' | 'postgres';
if (kind !== 'sqlite' && kind !== 'postgres') throw new Error('the store is sqlite or postgres');
const n = Number(values.n);
const BATCH_CONCURRENCY = 4;
const SINGLE_CONCURRENCY = 64;

const store = await createBelfryStore(kind);
const node = await startBenchNode(store);
try {
  await node.putDestination('d', NOWHERE_URL, 256);
  const client = node.client(values.single ? SINGLE_CONCURRENCY : BATCH_CONCURRENCY * 2);
  const headers = values.minimal ? { prefer: 'return=minimal' } : undefined;
  const dueAt = Date.now() + 86_400_000;
  const make = (prefix: string) => (i: number) => belfryEventBody({ id: `${prefix}${i}`, fireAt: dueAt + i }, 'd');
  const postSingles = async (bodies: string[]) => {
    const tally = { acknowledged: 0, failed: 0 };
    await runConcurrently(bodies.length, SINGLE_CONCURRENCY, async (i) => {
      const res = await client.call('POST', '/v1/events', bodies[i]);
      if (res.status === 201) tally.acknowledged++;
      else tally.failed++;
    });
    return tally;
  };
  const singleBodies = (count: number, prefix: string) =>
    Array.from({ length: count }, (_, i) => JSON.stringify(make(prefix)(i)));
  const post = (bodies: string[]) =>
    values.single ? postSingles(bodies) : postBatches(client, bodies, BATCH_CONCURRENCY, headers);
  const busy = async (): Promise<Record<string, number>> => {
    const samples = await scrapeMetrics(node.url);
    return Object.fromEntries(
      [...samples].flatMap(([name, v]) => {
        const m = /^belfry_thread_busy_seconds_total\{thread="([^"]+)"\}$/.exec(name);
        return m ? [[m[1], v]] : [];
      }),
    );
  };
  await post(values.single ? singleBodies(2_000, 'w') : batchBodies(5_000, make('w'))); // warm-up: JIT, connections
  const bodies = values.single ? singleBodies(n, 'b') : batchBodies(n, make('b'));
  const [busy0, cpu0, t0, client0] = [await busy(), node.cpuSeconds(), performance.now(), process.cpuUsage()];
  const tally = await post(bodies);
  const [ms, cpu1, clientCpu] = [performance.now() - t0, node.cpuSeconds(), process.cpuUsage(client0)];
  const busy1 = await busy();
  const threads = Object.fromEntries(
    Object.keys(busy1).map((k) => [k, `${Math.round(((busy1[k] - (busy0[k] ?? 0)) / (ms / 1_000)) * 100)}%`]),
  );
  console.log(
    JSON.stringify({
      store: kind,
      n,
      minimal: values.minimal,
      single: values.single,
      eventsPerSecond: Math.round((tally.acknowledged / ms) * 1_000),
      failed: tally.failed,
      nodeCpuUsPerEvent: +(((cpu1 - cpu0) / tally.acknowledged) * 1e6).toFixed(1),
      clientCpuUsPerEvent: +((clientCpu.user + clientCpu.system) / tally.acknowledged).toFixed(1),
      threadsBusy: threads,
    }),
  );
} finally {
  await node.stop();
  await store.dispose();
}
