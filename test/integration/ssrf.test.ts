/**
 * The private-address guard through a whole node: a node started without --allow-hosts refuses
 * internal URLs when they are registered, and refuses to connect when a name that passed
 * registration resolves to an internal address when the event fires (DNS rebinding).
 */
import assert from 'node:assert/strict';
import type { LookupAddress } from 'node:dns';
import { after, before, describe, it } from 'node:test';
import { HttpChannel } from '../../src/channels/http/http-channel.ts';
import { startTestNode, waitUntil, type TestNode } from '../support/node.ts';
import { startReceiver, type Receiver } from '../support/receiver.ts';

describe('webhooks cannot reach internal addresses', () => {
  let t: TestNode;
  let rx: Receiver;

  before(async () => {
    rx = await startReceiver();
    // Every name resolves to the loopback receiver, as a hostile DNS server would answer.
    const resolve = (_host: string, _opts: unknown, cb: (err: null, list: LookupAddress[]) => void) =>
      queueMicrotask(() => cb(null, [{ address: '127.0.0.1', family: 4 }]));
    t = await startTestNode({ allowHosts: [] }, { channel: new HttpChannel({ allowHosts: [], resolve }) });
  });
  after(async () => {
    await t.close();
    await rx.close();
  });

  it('refuses internal URLs at registration, for destinations and inline events, writing nothing', async () => {
    const urls = [
      rx.url,
      `http://2130706433:${rx.port}/`,
      `http://[::ffff:127.0.0.1]:${rx.port}/`,
      'http://169.254.169.254/latest/meta-data/',
      'http://[fd00:ec2::254]/',
      'http://localhost/',
      'http://10.0.0.8/',
    ];
    for (const url of urls) {
      const put = await t.api('PUT', '/v1/destinations/internal', { url });
      assert.equal(put.status, 400, url);
      assert.equal(put.body.error.details[0].field, 'url');
      assert.match(put.body.error.message, /host not allowed/);
      const ev = await t.api('POST', '/v1/events', { destination: { url }, payload: {} });
      assert.equal(ev.status, 400, url);
      assert.equal(ev.body.error.details[0].field, 'destination.url');
    }
    assert.equal((await t.api('GET', '/v1/destinations')).body.destinations.length, 0);
    assert.equal((await t.api('GET', '/v1/events')).body.events.length, 0);
  });

  it('discards an event whose host name resolves to an internal address when it fires, without sending it', async () => {
    const put = await t.api('PUT', '/v1/destinations/rebind', { url: `http://hooks.rebind.example:${rx.port}/hook` });
    assert.equal(put.status, 201, JSON.stringify(put.body));
    const ev = await t.api('POST', '/v1/events', {
      id: 'rebind-1',
      destination: 'rebind',
      payload: { secret: 'internal' },
    });
    assert.equal(ev.status, 201);
    await waitUntil(
      'the event to be discarded',
      async () => (await t.api('GET', '/v1/events/rebind-1')).body.state === 'discarded',
      10_000,
    );
    const trace = (await t.api('GET', '/v1/events/rebind-1/transitions')).body.transitions;
    assert.match(trace.at(-1).error, /address denied: host hooks\.rebind\.example resolves to a loopback address/);
    assert.equal(rx.count, 0);
  });
});
