/**
 * queues: many destinations at once, against one. On one node (Belfry only, per store):
 *
 * 1. one queue: N events (default 100,000) due at one instant to one destination;
 * 2. many queues: 1,000 tenants with 10 destinations each (10,000 queues), every one a webhook to
 *    the same receiver, and N events due at one instant spread evenly over them (N / 10,000 each).
 *
 * Each destination takes up to 256 deliveries at once (`maxConcurrency`, as `fire`). Reported: the
 * delivery rate of each (first delivery → last), their ratio (target ≥ 0.8), and the memory an
 * idle queue costs: the node's V8 heap in use once the many-queue stream is delivered and the node
 * is idle, minus the same before the 10,000 destinations existed, per queue (the lowest of several
 * readings each, as the heap is not collected on demand).
 */
import { runConcurrently } from '../lib/http.ts';
import { cpuMetrics, CpuWindow } from '../lib/machine.ts';
import { createBelfryStore, makeTenant, startBenchNode, type BenchNode, type StoreKind } from '../lib/node.ts';
import { startReceiverProcess, type ReceiverProcess } from '../lib/receiver-process.ts';
import type { ScenarioOptions, ScenarioResult } from '../lib/report.ts';
import { postBatch, type BatchTally } from '../lib/schedule.ts';
import { perSecond, sleep } from '../lib/stats.ts';
import { belfryEventBody } from '../systems/belfry.ts';
import { DATABASE_SERVER } from '../systems/system.ts';
import { waitForDeliveries } from './wait.ts';

const N_DEFAULT = 100_000;
const TENANTS = 1_000;
const DESTINATIONS_PER_TENANT = 10;
const MAX_CONCURRENCY = 256;
const LEAD_MS = 5_000;
const WAIT_MS_MAX = 180_000;
const STALL_MS = 20_000;
const SETUP_CONCURRENCY = 16;
const HEAP_READINGS = 5;
const HEAP_READING_GAP_MS = 500;

/** The node's V8 heap in use (bytes), the lowest of a few readings of its metrics. */
async function heapUsedBytes(node: BenchNode): Promise<number> {
  let low = Infinity;
  for (let i = 0; i < HEAP_READINGS; i++) {
    const text = await (await fetch(`${node.url}/metrics`)).text();
    const m = /^belfry_nodejs_heap_size_used_bytes\s+(\d+(?:\.\d+)?)/m.exec(text);
    if (!m) throw new Error('queues: the node reports no belfry_nodejs_heap_size_used_bytes');
    low = Math.min(low, Number(m[1]));
    await sleep(HEAP_READING_GAP_MS);
  }
  return low;
}

interface Fired {
  perSecond: number;
  dueToLastMs: number;
  undelivered: number;
  cpu: ReturnType<CpuWindow['spent']>;
}

/** Schedules `plan` (per tenant key: its events' destinations) due at one instant, then waits for all of them. */
async function fireAll(
  node: BenchNode,
  rx: ReceiverProcess,
  plan: { key: string; destinations: string[] }[],
  perDestination: number,
  kind: StoreKind,
  idPrefix: string,
): Promise<Fired> {
  const before = (await rx.count()).distinct;
  const total = plan.length * plan[0].destinations.length * perDestination;
  const dueAt = Date.now() + LEAD_MS + Math.ceil(total / 20);
  const tally: BatchTally = { acknowledged: 0, failed: 0 };
  let seq = 0;
  const bodies = plan.flatMap(({ key, destinations }) => {
    const events = destinations.flatMap((d) =>
      Array.from({ length: perDestination }, () => belfryEventBody({ id: `${idPrefix}${seq++}`, fireAt: dueAt }, d)),
    );
    const out: { key: string; body: string }[] = [];
    for (let i = 0; i < events.length; i += 1_000)
      out.push({ key, body: JSON.stringify({ events: events.slice(i, i + 1_000) }) });
    return out;
  });
  const clients = new Map(plan.map(({ key }) => [key, node.clientFor(key, 1)]));
  try {
    await runConcurrently(bodies.length, 4, (i) => postBatch(clients.get(bodies[i].key)!, bodies[i].body, tally));
  } finally {
    await Promise.all([...clients.values()].map((c) => c.close()));
  }
  if (tally.failed > 0) throw new Error(`queues: ${tally.failed} events not scheduled: ${tally.error}`);
  if (Date.now() > dueAt)
    console.error(`[bench] queues: scheduling ended ${Date.now() - dueAt} ms after the due instant`);
  await sleep(Math.max(0, dueAt - 200 - Date.now()));
  const cpu = new CpuWindow(() => node.cpuSeconds(), DATABASE_SERVER[`belfry-${kind}`]);
  const firstBefore = Date.now();
  await waitForDeliveries(rx, before + total, dueAt + WAIT_MS_MAX, STALL_MS);
  const stats = await rx.count();
  const delivered = stats.distinct - before;
  // The receiver's first arrival is the run's; the due instant starts this round.
  const spanMs = (stats.lastAt ?? Date.now()) - Math.max(dueAt, stats.firstAt ?? dueAt);
  return {
    perSecond: perSecond(delivered, spanMs),
    dueToLastMs: (stats.lastAt ?? NaN) - dueAt,
    undelivered: total - delivered,
    cpu: cpu.spent(delivered, (stats.lastAt ?? Date.now()) - firstBefore),
  };
}

export async function queues(kind: StoreKind, opts: ScenarioOptions): Promise<ScenarioResult> {
  const n = opts.n ?? N_DEFAULT;
  const queueCount = TENANTS * DESTINATIONS_PER_TENANT;
  const perDestination = Math.max(1, Math.floor(n / queueCount));
  const store = await createBelfryStore(kind);
  const rx = await startReceiverProcess();
  const node = await startBenchNode(store);
  try {
    await node.putDestination('rx', rx.url, MAX_CONCURRENCY);
    const one = await fireAll(
      node,
      rx,
      [{ key: node.key, destinations: ['rx'] }],
      perDestination * queueCount,
      kind,
      'one-',
    );
    const heapBefore = await heapUsedBytes(node);
    // 1,000 tenants (the node's own and 999 more), 10 destinations each.
    const keys = [node.key];
    await runConcurrently(TENANTS - 1, SETUP_CONCURRENCY, async () => {
      keys.push((await makeTenant(node.url)).key);
    });
    const destinations = Array.from({ length: DESTINATIONS_PER_TENANT }, (_, i) => `q${i}`);
    await runConcurrently(queueCount, SETUP_CONCURRENCY, async (i) => {
      const key = keys[Math.floor(i / DESTINATIONS_PER_TENANT)];
      await node.putDestinationFor(key, destinations[i % DESTINATIONS_PER_TENANT], rx.url, MAX_CONCURRENCY);
    });
    const many = await fireAll(
      node,
      rx,
      keys.map((key) => ({ key, destinations })),
      perDestination,
      kind,
      'many-',
    );
    const heapAfter = await heapUsedBytes(node);
    const ratio = many.perSecond / one.perSecond;
    return {
      label: `queues · Belfry · ${kind === 'sqlite' ? 'SQLite' : 'PostgreSQL'}`,
      scenario: 'queues',
      system: `belfry-${kind}`,
      options: { n: perDestination * queueCount, tenants: TENANTS, destinationsPerTenant: DESTINATIONS_PER_TENANT },
      metrics: [
        { name: 'one queue: deliveries/s', value: one.perSecond, unit: '/s' },
        { name: `${queueCount.toLocaleString('en-US')} queues: deliveries/s`, value: many.perSecond, unit: '/s' },
        { name: 'many ÷ one', value: ratio, unit: '×', target: '≥ 0.8' },
        { name: 'one queue: due → last delivery', value: one.dueToLastMs, unit: 'ms' },
        { name: 'many queues: due → last delivery', value: many.dueToLastMs, unit: 'ms' },
        { name: 'undelivered', value: one.undelivered + many.undelivered, unit: '' },
        { name: 'heap per idle queue', value: (heapAfter - heapBefore) / queueCount, unit: 'bytes' },
        ...cpuMetrics(one.cpu, 'one queue: '),
        ...cpuMetrics(many.cpu, 'many queues: '),
      ],
      details: { one, many, heapBefore, heapAfter, queueCount, perDestination },
    };
  } finally {
    await node.stop();
    await rx.close();
    await store.dispose();
  }
}
