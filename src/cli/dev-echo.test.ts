/**
 * The echo receiver of `belfry dev`: verifies signatures (401 when a delivery does not verify),
 * answers a status asked for, marks a repeat, waits for a delivery within its bound, and keeps a
 * bounded list.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { signPayload } from '../channels/http/signing.ts';
import { newWebhookSecret } from '../core/ids.ts';
import { waitUntil } from '../../test/support/node.ts';
import { BODY_BYTES_MAX, EchoReceiver, lineOf, RECENT_MAX } from './dev-echo.ts';

const SECRET = newWebhookSecret();

function signed(id: string, body: string, secret = SECRET): Record<string, string> {
  const timestampSec = Math.floor(Date.now() / 1000);
  return {
    'content-type': 'application/json',
    'webhook-id': id,
    'webhook-timestamp': String(timestampSec),
    'webhook-signature': signPayload({ msgId: id, timestampSec, body, secrets: [secret] }),
  };
}

describe('the dev echo receiver', () => {
  const printed: string[] = [];
  let echo: EchoReceiver;
  let url: string;
  const post = (path: string, headers: Record<string, string>, body: string) =>
    fetch(`${url}${path}`, { method: 'POST', headers, body });

  before(async () => {
    echo = new EchoReceiver({ host: '127.0.0.1', port: 0, secrets: () => [SECRET], print: (l) => printed.push(l) });
    url = await echo.start();
  });
  after(() => echo.close());

  it('answers a signed delivery 204, prints it as one line and lists it', async () => {
    const body = '{"hello":"belfry"}';
    const res = await post('/', { ...signed('e-1', body), 'belfry-type': 'greeting' }, body);
    assert.equal(res.status, 204);
    assert.match(
      printed.at(-1)!,
      /^echo \d\d:\d\d:\d\d\.\d{3} {2}e-1 {2}signature ok {2}type greeting {2}\{"hello":"belfry"\}$/,
    );
    const list = (await (await fetch(`${url}/`)).json()) as { deliveries: Array<Record<string, unknown>> };
    assert.deepEqual(
      { ...list.deliveries[0], receivedAt: 'x' },
      {
        id: 'e-1',
        receivedAt: 'x',
        path: '/',
        status: 204,
        verified: true,
        type: 'greeting',
        repeat: false,
        payload: { hello: 'belfry' },
      },
    );
  });

  it('refuses what does not verify with 401, saying why', async () => {
    const body = '{"n":1}';
    const other = await post('/', signed('e-2', body, newWebhookSecret()), body);
    assert.equal(other.status, 401);
    assert.match(printed.at(-1)!, /e-2 {2}NOT VERIFIED: /);
    assert.equal((await post('/', signed('e-3', body), '{"n":2}')).status, 401, 'a tampered body');
    assert.equal((await post('/', { 'content-type': 'application/json' }, body)).status, 401, 'unsigned');
  });

  it('answers the status asked for, and marks a repeat of a webhook-id', async () => {
    const body = '{}';
    assert.equal((await post('/hook?status=503', signed('e-4', body), body)).status, 503);
    assert.equal((await post('/hook', signed('e-4', body), body)).status, 204);
    assert.match(printed.at(-1)!, /e-4 {2}signature ok {2}again \(a retry or duplicate\)/);
    assert.equal((await post('/?status=99', signed('e-5', body), body)).status, 204, 'not a status: ignored');
  });

  it('waits for a delivery within the wait it is given, and bounds that wait', async () => {
    const waiting = fetch(`${url}/deliveries/e-6?wait=10s`);
    // Parked before the delivery comes, so the wait is what answers it.
    await waitUntil('the request to wait', () => echo.waiting === 1, 5_000);
    const body = '{"late":true}';
    assert.equal((await post('/', signed('e-6', body), body)).status, 204);
    const res = await waiting;
    assert.equal(res.status, 200);
    assert.deepEqual(((await res.json()) as { payload: unknown }).payload, { late: true });
    assert.equal((await fetch(`${url}/deliveries/none`)).status, 404);
    assert.equal((await fetch(`${url}/deliveries/none?wait=100ms`)).status, 404);
    assert.equal((await fetch(`${url}/deliveries/none?wait=2m`)).status, 400, 'over the longest wait');
  });

  it(`keeps the last ${RECENT_MAX} deliveries, and refuses a body over ${BODY_BYTES_MAX} bytes`, async () => {
    for (let i = 0; i < RECENT_MAX + 5; i++) {
      const body = `{"i":${i}}`;
      await post('/', signed(`many-${i}`, body), body);
    }
    const deliveries = echo.deliveries();
    assert.equal(deliveries.length, RECENT_MAX);
    assert.equal(deliveries[0].id, `many-${RECENT_MAX + 4}`, 'newest first');
    const big = 'x'.repeat(BODY_BYTES_MAX + 1);
    const res = await post('/', signed('big', big), big).catch(() => null);
    assert.ok(res === null || res.status === 413, `a body over the bound: ${res?.status}`);
  });

  it('cuts a long payload on its line', () => {
    const line = lineOf({
      id: 'x',
      receivedAt: new Date().toISOString(),
      path: '/',
      status: 204,
      verified: true,
      repeat: false,
      payload: { text: 'y'.repeat(1_000) },
    });
    assert.ok(line.length < 300, `${line.length} characters`);
    assert.ok(line.endsWith('…'));
  });
});
