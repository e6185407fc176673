/** The dedup helper over the real Redis on :6379, shared by two receivers (redisDedupStore with ioredis). */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, test } from 'node:test';
import { Redis } from 'ioredis';
import { Deduplicator, redisDedupStore } from '@belfry/client';
import { waitUntil } from '../support/node.ts';

const prefix = `belfry-test:dedup:${randomBytes(4).toString('hex')}:`;
let redis: Redis;

before(() => {
  redis = new Redis({ host: '127.0.0.1', port: 6379, lazyConnect: true, maxRetriesPerRequest: 1 });
  return redis.connect();
});
after(async () => {
  await redis.del(...['evt-1', 'evt-2', 'evt-3'].map((id) => prefix + id));
  await redis.quit();
});

test('two receivers sharing one Redis store handle each id once; a failed handler releases it; the TTL expires it', async () => {
  const a = new Deduplicator({ store: redisDedupStore(redis), keyPrefix: prefix, ttlMs: 60_000 });
  const b = new Deduplicator({ store: redisDedupStore(redis), keyPrefix: prefix, ttlMs: 60_000 });
  let handled = 0;
  const first = await a.run({ 'webhook-id': 'evt-1' }, () => ++handled);
  const second = await b.run({ 'belfry-event-id': 'evt-1' }, () => ++handled);
  assert.deepEqual([first, second], [{ duplicate: false, result: 1 }, { duplicate: true }]);
  const ttlMs = await redis.pttl(`${prefix}evt-1`);
  assert.ok(ttlMs > 0 && ttlMs <= 60_000, `expires (${ttlMs} ms left)`);

  await assert.rejects(a.run('evt-2', () => Promise.reject(new Error('handler failed'))));
  assert.equal(await redis.exists(`${prefix}evt-2`), 0, 'released');
  assert.deepEqual(await b.run('evt-2', () => 'ok'), { duplicate: false, result: 'ok' });

  const short = new Deduplicator({ store: redisDedupStore(redis), keyPrefix: prefix, ttlMs: 50 });
  assert.equal(await short.firstTime('evt-3'), true);
  assert.equal(await short.firstTime('evt-3'), false);
  await waitUntil('evt-3 expired in Redis', async () => (await redis.exists(`${prefix}evt-3`)) === 0, 5_000);
  assert.equal(await short.firstTime('evt-3'), true);
});
