/** The receiver's dedup helper: the bounded LRU with TTL, and Deduplicator over any store. */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { Deduplicator, deliveryId, MemoryDedupStore, type DedupStore } from './dedup.ts';

describe('MemoryDedupStore', () => {
  test('the first claim of a key wins; the next ones within the TTL are duplicates; after the TTL it is new again', () => {
    let now = 1_000;
    const store = new MemoryDedupStore(10, () => now);
    assert.equal(store.claim('a', 100), true);
    assert.equal(store.claim('a', 100), false);
    now += 99;
    assert.equal(store.claim('a', 100), false);
    now += 1;
    assert.equal(store.claim('a', 100), true, 'expired at first claim + ttl');
  });

  test('holds at most entriesMax keys, dropping the least recently seen first', () => {
    const store = new MemoryDedupStore(3, () => 0);
    for (const k of ['a', 'b', 'c']) assert.equal(store.claim(k, 1_000), true);
    assert.equal(store.claim('a', 1_000), false, 'a seen again: now the most recent');
    assert.equal(store.claim('d', 1_000), true, 'full: b, the least recently seen, goes');
    assert.equal(store.size, 3);
    assert.equal(store.claim('c', 1_000), false);
    assert.equal(store.claim('a', 1_000), false);
    assert.equal(store.claim('b', 1_000), true, 'b was evicted');
    assert.equal(store.size, 3);
  });

  test('release forgets a key', () => {
    const store = new MemoryDedupStore(3, () => 0);
    store.claim('a', 1_000);
    store.release('a');
    assert.equal(store.claim('a', 1_000), true);
  });
});

describe('Deduplicator', () => {
  test('takes the id from webhook-id or belfry-event-id, in any header case or a Headers object', () => {
    assert.equal(deliveryId({ 'webhook-id': 'w1' }), 'w1');
    assert.equal(deliveryId({ 'Belfry-Event-Id': 'b1' }), 'b1');
    assert.equal(deliveryId(new Headers({ 'belfry-event-id': 'b2' })), 'b2');
    assert.equal(deliveryId({ 'x-other': '1' }), undefined);
  });

  test('runs the handler once per id; a duplicate is skipped', async () => {
    const dedup = new Deduplicator();
    let runs = 0;
    const first = await dedup.run({ 'webhook-id': 'evt-1' }, () => ++runs);
    const second = await dedup.run({ 'webhook-id': 'evt-1' }, () => ++runs);
    assert.deepEqual(first, { duplicate: false, result: 1 });
    assert.deepEqual(second, { duplicate: true });
    assert.equal(runs, 1);
  });

  test('a handler that throws leaves the id unclaimed, so the retry is handled', async () => {
    const dedup = new Deduplicator();
    await assert.rejects(
      dedup.run('evt-2', () => Promise.reject(new Error('db down'))),
      /db down/,
    );
    assert.deepEqual(await dedup.run('evt-2', () => 'ok'), { duplicate: false, result: 'ok' });
  });

  test('works over a pluggable async store (as a Redis SET NX PX would be), with the key prefix and TTL passed on', async () => {
    const calls: string[] = [];
    const kept = new Set<string>();
    const store: DedupStore = {
      async claim(key, ttlMs) {
        calls.push(`claim ${key} ${ttlMs}`);
        if (kept.has(key)) return false;
        kept.add(key);
        return true;
      },
      async release(key) {
        calls.push(`release ${key}`);
        kept.delete(key);
      },
    };
    const dedup = new Deduplicator({ store, ttlMs: 60_000, keyPrefix: 'svc:' });
    assert.equal(await dedup.firstTime('e1'), true);
    assert.equal(await dedup.firstTime('e1'), false);
    await dedup.forget('e1');
    assert.deepEqual(calls, ['claim svc:e1 60000', 'claim svc:e1 60000', 'release svc:e1']);
  });
});
