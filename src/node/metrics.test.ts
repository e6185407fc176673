import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { Metrics } from './metrics.ts';
import type { BusyThread } from '../core/thread-busy.ts';

async function busySeconds(metrics: Metrics): Promise<Record<string, number>> {
  const { values } = (await metrics.threadBusySeconds.get()) as {
    values: { labels: { thread?: string }; value: number }[];
  };
  return Object.fromEntries(values.map((v) => [String(v.labels.thread), Math.round(v.value * 1_000) / 1_000]));
}

describe('belfry_thread_busy_seconds_total', () => {
  it("adds each thread's busy time since the last scrape, and a thread replaced under the same name from its own start", async () => {
    const metrics = new Metrics();
    let threads: BusyThread[] = [];
    const thread = (name: string, ms: number): BusyThread => ({ name, key: {}, activeMs: () => ms });
    const store = { name: 'sqlite-store', key: {}, ms: 100, activeMs: () => store.ms };
    metrics.watchThreads(() => threads);
    threads = [store, thread('delivery-0', 40)];
    assert.deepEqual(await busySeconds(metrics), { 'sqlite-store': 0.1, 'delivery-0': 0.04 });
    store.ms = 250;
    // delivery-0 died and was replaced: the new thread has been busy 10 ms.
    threads = [store, thread('delivery-0', 10)];
    assert.deepEqual(await busySeconds(metrics), { 'sqlite-store': 0.25, 'delivery-0': 0.05 });
  });
});

describe('belfry_build_info', () => {
  it('is 1 with the version, Node.js and store labels, one series only after a second set', async () => {
    const metrics = new Metrics();
    metrics.setBuildInfo({ version: '9.9.9', node: 'v0.0.1', store: 'sqlite' });
    metrics.setBuildInfo({ version: '1.2.3', node: 'v22.1.0', store: 'postgres' });
    const text = await metrics.registry.metrics();
    const lines = text.split('\n').filter((l) => l.startsWith('belfry_build_info'));
    assert.deepEqual(lines, ['belfry_build_info{version="1.2.3",node="v22.1.0",store="postgres"} 1']);
  });
});
