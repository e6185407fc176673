/**
 * Broker clients are loaded on first use: a node that serves the API and delivers webhooks never
 * loads kafkajs, amqplib, ioredis or the NATS client; the first delivery to a broker destination
 * loads that kind's client (and only that one). Each test file runs in a process of its own, so
 * the module cache tells what this node loaded.
 */
import assert from 'node:assert/strict';
import { createRequire } from 'node:module';
import { describe, it } from 'node:test';
import { ChannelRegistry, LazyChannel } from '../../src/channels/registry.ts';
import { startTestNode } from '../support/node.ts';

const require = createRequire(import.meta.url);
const CLIENTS = ['kafkajs', 'amqplib', 'ioredis'];

function loadedClients(): string[] {
  const paths = Object.keys(require.cache);
  return CLIENTS.filter((name) => paths.some((p) => p.includes(`/node_modules/${name}/`)));
}

describe('broker clients loaded on first use', () => {
  it('a node that delivers webhooks loads no broker client', async () => {
    const t = await startTestNode();
    try {
      const dest = await t.api('PUT', '/v1/destinations/orders', { url: 'http://127.0.0.1:9/hook' });
      assert.equal(dest.status, 201);
      const kafka = await t.api('PUT', '/v1/destinations/stream', {
        kind: 'kafka',
        brokers: ['127.0.0.1:9092'],
        topic: 'due',
      });
      assert.equal(kafka.status, 201, 'a broker destination is registered by its spec alone');
      assert.deepEqual(loadedClients(), []);
    } finally {
      await t.close();
    }
  });

  it('the first delivery to a redis destination loads ioredis, and no other client', async () => {
    const registry = new ChannelRegistry({
      http: { deliver: async () => ({ kind: 'delivered', durationMs: 0 }), close: async () => {} },
      policy: { allowHosts: ['127.0.0.1'] } as never,
    });
    const redis = (registry as unknown as { channels: Record<string, LazyChannel> }).channels.redis;
    assert.equal(redis.isLoaded, false);
    const ctl = new AbortController();
    const outcome = await registry.deliver(
      {
        tenantId: 't',
        id: 'e1',
        attempt: 1,
        payload: '{}',
        headers: {},
        timeoutMs: 2_000,
        dueAt: 0,
        fireAt: 0,
        kind: 'redis',
        target: { kind: 'redis', url: 'redis://127.0.0.1:1', stream: 'belfry-lazy-test', maxLen: null },
        poolKey: 'lazy',
      },
      ctl.signal,
    );
    assert.equal(redis.isLoaded, true);
    assert.equal(outcome.kind, 'retry', 'nothing listens on port 1: a transient failure');
    assert.deepEqual(loadedClients(), ['ioredis']);
    await registry.close();
  });
});
