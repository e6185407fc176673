/**
 * The shard count is fixed for the life of a store: events are placed in shards by a hash mod the
 * count, so a node started on the same store with another count would leave the events of shards
 * past it unfired. The first node to start records the count; a node with another is refused at
 * start, with the count to use, and leaves the data dir free for a node with the right one.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { pino } from 'pino';
import { ConfigError, DEFAULT_CONFIG } from '../../src/node/config.ts';
import { startNode } from '../../src/node/node.ts';
import { ADMIN_KEY, startTestNode } from '../support/node.ts';

describe('the shard count of a store', () => {
  const dataDir = mkdtempSync(join(tmpdir(), 'belfry-it-shards-'));
  after(() => rmSync(dataDir, { recursive: true, force: true }));

  it('is recorded by the first start; a start with another count is refused, naming the recorded one', async () => {
    const first = await startTestNode({ dataDir, shardCount: 16 });
    const created = await first.api('POST', '/v1/events', {
      id: 'kept',
      delay: '1h',
      destination: { url: 'http://127.0.0.1:9/hook' },
      payload: {},
    });
    assert.equal(created.status, 201);
    await first.close();

    await assert.rejects(
      startNode(
        { ...DEFAULT_CONFIG, port: 0, dataDir, adminKey: ADMIN_KEY, shardCount: 32 },
        { logger: pino({ level: 'silent' }) },
      ),
      (err: Error) =>
        err instanceof ConfigError && /placed in 16 shards/.test(err.message) && /--shard-count 16/.test(err.message),
    );

    // The refused start closed what it opened: the right count starts, and the event is there.
    const again = await startTestNode({ dataDir, shardCount: 16 });
    try {
      const got = await again.api('GET', '/v1/events/kept', undefined, first.tenantKey);
      assert.equal(got.status, 200);
      assert.equal(got.body.state, 'scheduled');
    } finally {
      await again.close();
    }
  });
});
