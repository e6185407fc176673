/**
 * Restart and shutdown with real processes:
 * - SIGKILL during delivery, then a restart on the same data dir: every acknowledged event is
 *   delivered at least once, none before its due time, nothing lost; also under a fixed --node-id.
 * - SIGTERM: stops accepting, finishes deliveries in flight, exits 0; nothing is sent twice.
 */
import { after, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { callApi as api } from '../support/http.ts';
import { startReceiver, type Receiver } from '../support/receiver.ts';
import { killNodeProcess, startNodeProcess, stopNodeProcess, type NodeProcess } from '../support/process.ts';
import { waitUntil } from '../support/node.ts';

const ADMIN_KEY = 'e2e-admin-key-0123456789abcdef';

async function setUp(node: NodeProcess, receiverUrl: string, timeout: string): Promise<string> {
  const tenant = await api(node.url, ADMIN_KEY, 'POST', '/v1/tenants', { name: 'e2e' });
  assert.equal(tenant.status, 201);
  const key = await api(node.url, ADMIN_KEY, 'POST', `/v1/tenants/${tenant.body.id}/keys`, {});
  assert.equal(key.status, 201);
  const dest = await api(node.url, key.body.key, 'PUT', '/v1/destinations/rx', {
    url: receiverUrl,
    timeout,
    maxConcurrency: 20,
    retry: { maxAttempts: 20, minBackoff: '100ms', maxBackoff: '500ms' },
  });
  assert.equal(dest.status, 201);
  return key.body.key;
}

function nodeArgs(dataDir: string): string[] {
  return ['--data', dataDir, '--admin-key', ADMIN_KEY, '--allow-hosts', '127.0.0.1', '--shutdown-timeout', '10s'];
}

// Twice: a random node id per run (the default), and a fixed --node-id shared by both runs, whose
// previous run's claims must not pass for the new run's own.
for (const nodeId of [null, 'e2e-fixed-node']) {
  describe(`restart after SIGKILL${nodeId ? ' under a fixed --node-id' : ''}`, () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'belfry-e2e-'));
    let rx: Receiver;
    let node: NodeProcess | undefined;
    after(async () => {
      if (node) await killNodeProcess(node);
      await rx?.close();
      rmSync(dataDir, { recursive: true, force: true });
    });

    it('delivers every acknowledged event at least once, none early', async () => {
      rx = await startReceiver({ behavior: () => ({ status: 200, delayMs: 50 }) });
      node = await startNodeProcess([...nodeArgs(dataDir), ...(nodeId ? ['--node-id', nodeId] : [])]);
      const key = await setUp(node, rx.url, '5s');
      const start = Date.now() + 1_500;
      const events = [];
      for (let i = 0; i < 600; i++)
        events.push({ id: `k-${i}`, fireAt: start + i * 5, destination: 'rx', payload: { fireAt: start + i * 5 } });
      // Some far enough ahead that they are due only after the restart: they must not fire early.
      for (let i = 0; i < 100; i++)
        events.push({
          id: `later-${i}`,
          fireAt: start + 8_000 + i * 10,
          destination: 'rx',
          payload: { fireAt: start + 8_000 + i * 10 },
        });
      const res = await api(node.url, key, 'POST', '/v1/events/batch', { events });
      assert.equal(res.status, 200);
      // The last acknowledged single event, right before the kill, must survive too.
      await rx.waitFor((reqs) => reqs.length >= 150, 15_000);
      const last = await api(node.url, key, 'POST', '/v1/events', {
        id: 'acked-last',
        destination: 'rx',
        payload: { fireAt: Date.now() },
      });
      assert.equal(last.status, 201);
      await killNodeProcess(node);
      const receivedBeforeKill = rx.count;

      node = await startNodeProcess([...nodeArgs(dataDir), ...(nodeId ? ['--node-id', nodeId] : [])]);
      const ids = new Set([...events.map((e) => e.id), 'acked-last']);
      await rx.waitFor((reqs) => new Set(reqs.map((r) => String(r.headers['webhook-id']))).size >= ids.size, 30_000);
      const byId = new Map<string, number>();
      for (const r of rx.requests)
        byId.set(String(r.headers['webhook-id']), (byId.get(String(r.headers['webhook-id'])) ?? 0) + 1);
      const early = rx.requests.filter((r) => r.receivedAt < (r.json as { fireAt: number }).fireAt);
      const duplicates = rx.count - byId.size;
      console.log(
        `SIGKILL restart${nodeId ? ' (fixed node id)' : ''}: ${ids.size} events, ${receivedBeforeKill} received before the kill, ${duplicates} duplicates after restart`,
      );
      for (const id of ids) assert.ok(byId.has(id), `event ${id} was never delivered`);
      assert.equal(early.length, 0, `${early.length} events delivered before their due time`);
      assert.ok(duplicates <= 20 * 2, `more duplicates (${duplicates}) than deliveries that could have been in flight`);
    });
  });
}

describe('graceful shutdown on SIGTERM', () => {
  const dataDir = mkdtempSync(join(tmpdir(), 'belfry-e2e-'));
  let rx: Receiver;
  let node: NodeProcess | undefined;
  after(async () => {
    if (node) await killNodeProcess(node);
    await rx?.close();
    rmSync(dataDir, { recursive: true, force: true });
  });

  it('finishes deliveries in flight, exits 0, and sends nothing twice after a restart', async () => {
    rx = await startReceiver({ behavior: () => ({ status: 200, delayMs: 400 }) });
    node = await startNodeProcess(nodeArgs(dataDir));
    const key = await setUp(node, rx.url, '5s');
    const events = [];
    for (let i = 0; i < 200; i++) events.push({ id: `s-${i}`, destination: 'rx', payload: { fireAt: 0 } });
    assert.equal((await api(node.url, key, 'POST', '/v1/events/batch', { events })).status, 200);
    await rx.waitFor((reqs) => reqs.length >= 20, 10_000);
    const { code, signal } = await stopNodeProcess(node);
    assert.equal(signal, null);
    assert.equal(code, 0, node.output.join('').slice(-2000));
    const sentBeforeStop = rx.count;
    // Every request the node sent was answered before it exited (it waited for them).
    assert.ok(node.output.join('').includes('"msg":"stopped"'));

    const restarted = await startNodeProcess(nodeArgs(dataDir));
    node = restarted;
    await rx.waitFor((reqs) => new Set(reqs.map((r) => r.headers['webhook-id'])).size >= 200, 30_000);
    const duplicates = rx.count - new Set(rx.requests.map((r) => r.headers['webhook-id'])).size;
    console.log(`SIGTERM: ${sentBeforeStop} sent before the stop, ${duplicates} duplicates after restart`);
    assert.equal(duplicates, 0);
    await waitUntil(
      's-0 succeeded',
      async () => (await api(restarted.url, key, 'GET', '/v1/events/s-0')).body.state === 'succeeded',
      10_000,
    );
  });
});
