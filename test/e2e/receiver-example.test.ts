/**
 * The receiver example of the docs (docs/examples/verify-webhook.mjs) runs as documented, in its
 * own process, against a real node: it verifies Belfry's deliveries, keeps verifying through a
 * secret rotation, and refuses forged, tampered and replayed requests.
 */
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { createHmac } from 'node:crypto';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { after, before, describe, it } from 'node:test';
import { startTestNode, waitUntil, type TestNode } from '../support/node.ts';

const EXAMPLE = fileURLToPath(new URL('../../docs/examples/verify-webhook.mjs', import.meta.url));

interface Example {
  child: ChildProcess;
  url: string;
  lines: Record<string, unknown>[];
}

function startExample(secret: string): Promise<Example> {
  const child = spawn(process.execPath, [EXAMPLE], {
    env: { ...process.env, WEBHOOK_SECRET: secret, PORT: '0' },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const lines: Record<string, unknown>[] = [];
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error('the example did not start')), 10_000);
    createInterface({ input: child.stdout! }).on('line', (line) => {
      const record = JSON.parse(line) as Record<string, unknown>;
      lines.push(record);
      if (typeof record.listening === 'number') {
        clearTimeout(timer);
        resolve({ child, url: `http://127.0.0.1:${record.listening}`, lines });
      }
    });
  });
}

function sign(secret: string, id: string, timestamp: number, body: string): string {
  return (
    'v1,' +
    createHmac('sha256', Buffer.from(secret.slice(6), 'base64'))
      .update(`${id}.${timestamp}.${body}`)
      .digest('base64')
  );
}

describe('the documented receiver example', { timeout: 60_000 }, () => {
  let t: TestNode;
  let rx: Example | undefined;

  before(async () => {
    t = await startTestNode();
  });
  after(async () => {
    rx?.child.kill();
    await t.close();
  });

  it('verifies real deliveries, through a rotation, and refuses forgeries', async () => {
    // The destination's secret is only known once it exists; the receiver then starts with it.
    const put = await t.api('PUT', '/v1/destinations/example', { url: 'http://127.0.0.1:9/' });
    const secret: string = put.body.secret;
    rx = await startExample(secret);
    assert.equal((await t.api('PUT', '/v1/destinations/example', { url: `${rx.url}/hooks` })).status, 200);

    const delivered = (id: string) => rx!.lines.some((l) => l.verified === true && l.id === id && !l.duplicate);
    assert.equal(
      (await t.api('POST', '/v1/events', { id: 'ex-1', destination: 'example', payload: { orderId: 1 } })).status,
      201,
    );
    await waitUntil('the example to verify ex-1', () => delivered('ex-1'), 10_000);
    assert.deepEqual(rx.lines.find((l) => l.id === 'ex-1')!.payload, { orderId: 1 });

    // A rotation: the receiver still knows only the old secret, and keeps verifying in the grace period.
    assert.equal((await t.api('POST', '/v1/destinations/example/rotate-secret', { gracePeriod: '1h' })).status, 200);
    assert.equal(
      (await t.api('POST', '/v1/events', { id: 'ex-2', destination: 'example', payload: { orderId: 2 } })).status,
      201,
    );
    await waitUntil('the example to verify ex-2', () => delivered('ex-2'), 10_000);
    assert.equal((await t.api('GET', '/v1/events/ex-2')).body.state !== 'discarded', true);

    // Forged, tampered, replayed: all 401; a duplicate is acknowledged once more, not processed again.
    const now = Math.floor(Date.now() / 1000);
    const body = '{"orderId":3}';
    const post = (headers: Record<string, string>, payload = body) =>
      fetch(`${rx!.url}/hooks`, { method: 'POST', headers, body: payload }).then((r) => r.status);
    const good = {
      'webhook-id': 'ex-3',
      'webhook-timestamp': String(now),
      'webhook-signature': sign(secret, 'ex-3', now, body),
    };
    assert.equal(
      await post({
        ...good,
        'webhook-signature': sign('whsec_' + Buffer.alloc(32, 7).toString('base64'), 'ex-3', now, body),
      }),
      401,
      'wrong secret',
    );
    assert.equal(await post(good, '{"orderId":4}'), 401, 'tampered body');
    const old = now - 3_600;
    assert.equal(
      await post({ ...good, 'webhook-timestamp': String(old), 'webhook-signature': sign(secret, 'ex-3', old, body) }),
      401,
      'replayed an hour later',
    );
    assert.equal(await post({ 'webhook-id': 'ex-3' }), 401, 'unsigned');
    assert.equal(await post(good), 204);
    assert.equal(await post(good), 200, 'a duplicate webhook-id is not processed twice');
  });
});
