/**
 * Start order with real processes: a node listens before any loop fires or delivers. One that
 * cannot listen (its port is taken) exits non-zero at once, having fired nothing, though an event
 * is due in its data dir; it released the data-dir lock, so a correct restart on the same dir
 * starts and delivers that event.
 */
import { after, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { callApi as api } from '../support/http.ts';
import { startReceiver, type Receiver } from '../support/receiver.ts';
import {
  killNodeProcess,
  NODE_START_MS_MAX,
  REFUSAL_MS_MAX,
  runRefusedStart,
  startNodeProcess,
  stopNodeProcess,
  type NodeProcess,
} from '../support/process.ts';
import { waitUntil } from '../support/node.ts';

const ADMIN_KEY = 'e2e-admin-key-0123456789abcdef';
/** "At once": node and tsx starting, the store opening, the bind failing; no wait on anything. */

function nodeArgs(dataDir: string): string[] {
  return ['--data', dataDir, '--admin-key', ADMIN_KEY, '--allow-hosts', '127.0.0.1', '--shutdown-timeout', '5s'];
}

/** A plain TCP server holding a loopback port, as another program would. */
async function holdPort(): Promise<{ server: Server; port: number }> {
  const server = createServer((socket) => socket.destroy());
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  const address = server.address();
  assert.ok(address && typeof address === 'object');
  return { server, port: address.port };
}

/** Runs `belfry start` on `port`, expecting it to fail; its exit code, output and duration. */
function startOnTakenPort(dataDir: string, port: number) {
  return runRefusedStart([...nodeArgs(dataDir), '--port', String(port)]);
}

describe('start order with real processes', () => {
  const dataDir = mkdtempSync(join(tmpdir(), 'belfry-e2e-start-'));
  let rx: Receiver;
  let node: NodeProcess | undefined;
  let held: Server | undefined;
  after(async () => {
    if (node) await killNodeProcess(node);
    await rx?.close();
    held?.close();
    rmSync(dataDir, { recursive: true, force: true });
  });

  it('a node whose port is taken exits non-zero at once and fires nothing; a restart on the same data dir works', async () => {
    rx = await startReceiver();
    // An event in the data dir, due by the time the next node starts.
    node = await startNodeProcess(nodeArgs(dataDir));
    const tenant = await api(node.url, ADMIN_KEY, 'POST', '/v1/tenants', { name: 'start' });
    const key = (await api(node.url, ADMIN_KEY, 'POST', `/v1/tenants/${tenant.body.id}/keys`, {})).body.key as string;
    assert.equal((await api(node.url, key, 'PUT', '/v1/destinations/rx', { url: rx.url })).status, 201);
    const fireAt = Date.now() + 1_000;
    assert.equal(
      (await api(node.url, key, 'POST', '/v1/events', { id: 'due', destination: 'rx', fireAt })).status,
      201,
    );
    assert.equal((await stopNodeProcess(node)).code, 0);
    node = undefined;
    assert.equal(rx.count, 0, 'the event was not due before the first node stopped');
    await waitUntil('the event is due', () => Date.now() > fireAt, 5_000);

    const taken = await holdPort();
    held = taken.server;
    const refused = await startOnTakenPort(dataDir, taken.port);
    assert.equal(
      refused.signal,
      null,
      `killed after ${REFUSAL_MS_MAX} ms: it kept running\n${refused.output.slice(-2000)}`,
    );
    assert.notEqual(refused.code, 0, refused.output.slice(-2000));
    assert.ok(refused.output.includes(`cannot listen on 127.0.0.1:${taken.port}`), refused.output.slice(-2000));
    assert.ok(refused.output.includes('EADDRINUSE'), refused.output.slice(-2000));
    assert.equal(rx.count, 0, 'the node that could not listen delivered the due event');

    // The lock was released: a correct start on the same dir works, and delivers the event.
    const startedMs = performance.now();
    node = await startNodeProcess(nodeArgs(dataDir));
    assert.ok(performance.now() - startedMs < NODE_START_MS_MAX);
    await rx.waitFor((reqs) => reqs.length >= 1, 10_000);
    assert.equal(rx.requests[0].headers['webhook-id'], 'due');
    console.log(
      `start order: the node on a taken port exited with code ${refused.code} after ${Math.round(refused.elapsedMs)} ms, fired nothing; the restart delivered the due event`,
    );
  });
});
