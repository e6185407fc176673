import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { SimClock } from '../core/clock.ts';
import type { DestinationRecord } from '../store/store.ts';
import { DESTINATION_CACHE_MS, DestinationResolver } from './destinations.ts';

function storeWithOneDestination() {
  const reads: string[] = [];
  const release: (() => void)[] = [];
  const row = (maxConcurrency: number) =>
    ({
      tenantId: 't1',
      name: 'orders',
      config: {
        kind: 'http',
        url: 'https://orders.example/hook',
        headers: {},
        timeoutMs: 5_000,
        retry: null,
        rateLimitPerSecond: null,
        maxConcurrency,
      },
      secrets: [],
      createdAt: 0,
      updatedAt: 0,
    }) as unknown as DestinationRecord;
  let concurrency = 20;
  const store = {
    destinationGet: ({ name }: { tenantId: string; name: string }) => {
      reads.push(name);
      const answer = row(concurrency);
      return new Promise<DestinationRecord>((resolve) => release.push(() => resolve(answer)));
    },
    tenantSecretsGet: async () => [],
    tenantSecretsSwap: async () => true,
  };
  return { store, reads, release, setConcurrency: (n: number) => (concurrency = n) };
}

describe('DestinationResolver', () => {
  it('reads a destination once however many deliveries ask at once, and again after invalidate', async () => {
    const { store, reads, release, setConcurrency } = storeWithOneDestination();
    const clock = new SimClock();
    const resolver = new DestinationResolver(store as never, clock);
    const asks = Array.from({ length: 250 }, () => resolver.resolve('t1', { name: 'orders' }));
    assert.equal(reads.length, 1, 'one store read for 250 concurrent asks');
    release.shift()!();
    for (const s of await Promise.all(asks)) assert.equal(s.maxConcurrency, 20);

    setConcurrency(5);
    resolver.invalidate('t1', 'orders');
    const after = resolver.resolve('t1', { name: 'orders' });
    assert.equal(reads.length, 2);
    release.shift()!();
    assert.equal((await after).maxConcurrency, 5, 'the settings as they are now');

    await clock.advance(DESTINATION_CACHE_MS + 1);
    const expired = resolver.resolve('t1', { name: 'orders' });
    assert.equal(reads.length, 3, 'read again past the cache time');
    release.shift()!();
    await expired;
  });
});
