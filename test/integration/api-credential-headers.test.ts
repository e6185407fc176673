/**
 * Credentials in headers and inline URLs are never shown back, and still delivered: a real node
 * and a loopback receiver. A destination's and an event's headers that carry credentials
 * (authorization, proxy-authorization, cookie, x-api-key, and names with auth, token, secret,
 * passw, key, cookie, credential or session) show `***` in every response that shows them
 * (destinations, events, batches, edits, cancels, schedules, their occurrences); other headers
 * show as they are; the delivery carries the stored values. An inline event URL stored with
 * `user:pass@` before such URLs were refused shows `***` in their place, as a destination's does.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { headersForDisplay, isCredentialHeader } from '../../src/api/event-json.ts';
import { newEvent } from '../../src/store/conformance/fixtures.ts';
import { startTestNode, waitUntil, type TestNode } from '../support/node.ts';
import { startReceiver, type Receiver } from '../support/receiver.ts';

/** Every secret below contains this, so one search over a response finds any of them. */
const MARK = 'S3CR3T';
const secret = (what: string) => `${what}-${MARK}-${what}`;

describe('credential headers through a node', () => {
  let node: TestNode;
  let receiver: Receiver;
  /** The raw text of every response below: none may carry a secret. */
  const shown: string[] = [];

  before(async () => {
    receiver = await startReceiver();
    node = await startTestNode();
  });
  after(async () => {
    await node?.close();
    await receiver?.close();
  });

  async function call(method: string, path: string, body?: unknown) {
    const res = await fetch(`${node.url}${path}`, {
      method,
      headers: {
        authorization: `Bearer ${node.tenantKey}`,
        ...(body === undefined ? {} : { 'content-type': 'application/json' }),
      },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const raw = await res.text();
    shown.push(raw);
    return { status: res.status, body: raw ? JSON.parse(raw) : null, raw };
  }

  const destinationHeaders = {
    Authorization: `Bearer ${secret('dest-authorization')}`,
    'X-Api-Key': secret('dest-api-key'),
    'x-client-secret': secret('dest-client-secret'),
    Cookie: `session=${secret('dest-cookie')}`,
    'x-trace-tenant': 'acme',
  };

  it("masks a destination's credential headers in PUT and GET answers, and delivers them as stored", async () => {
    const put = await call('PUT', '/v1/destinations/secure', {
      url: `${receiver.url}/secure`,
      headers: destinationHeaders,
    });
    assert.equal(put.status, 201, put.raw);
    const expected = {
      Authorization: '***',
      'X-Api-Key': '***',
      'x-client-secret': '***',
      Cookie: '***',
      'x-trace-tenant': 'acme',
    };
    assert.deepEqual(put.body.headers, expected);
    assert.deepEqual((await call('GET', '/v1/destinations/secure')).body.headers, expected);
    const list = await call('GET', '/v1/destinations');
    assert.deepEqual(list.body.destinations.find((d: { name: string }) => d.name === 'secure').headers, expected);

    const eventHeaders = { 'x-upstream-token': secret('event-token'), 'x-request-id': 'r-1' };
    const created = await call('POST', '/v1/events', {
      id: 'to-secure',
      destination: 'secure',
      delay: '10ms',
      headers: eventHeaders,
      payload: { n: 1 },
    });
    assert.equal(created.status, 201, created.raw);
    assert.deepEqual(created.body.headers, { 'x-upstream-token': '***', 'x-request-id': 'r-1' });

    await receiver.waitFor((reqs) => reqs.some((r) => r.path === '/secure'), 30_000);
    const delivered = receiver.requests.find((r) => r.path === '/secure')!;
    assert.equal(delivered.headers.authorization, destinationHeaders.Authorization);
    assert.equal(delivered.headers['x-api-key'], destinationHeaders['X-Api-Key']);
    assert.equal(delivered.headers['x-client-secret'], destinationHeaders['x-client-secret']);
    assert.equal(delivered.headers.cookie, destinationHeaders.Cookie);
    assert.equal(delivered.headers['x-upstream-token'], eventHeaders['x-upstream-token']);
    assert.equal(delivered.headers['x-request-id'], 'r-1');

    // The delivered event as its reader sees it afterwards.
    await waitUntil(
      'the delivery recorded',
      async () => (await node.api('GET', '/v1/events/to-secure')).body.state === 'succeeded',
      30_000,
    );
    const got = await call('GET', '/v1/events/to-secure');
    assert.deepEqual(got.body.headers, { 'x-upstream-token': '***', 'x-request-id': 'r-1' });
  });

  it("masks an event's credential headers in every answer that shows the event: create, batch, get, list, edit, cancel", async () => {
    const inline = { url: `${receiver.url}/inline` };
    const created = await call('POST', '/v1/events', {
      id: 'inline-1',
      destination: inline,
      delay: '1h',
      headers: { authorization: `Basic ${secret('inline-basic')}`, 'x-kind': 'inline' },
    });
    assert.equal(created.status, 201, created.raw);
    assert.deepEqual(created.body.headers, { authorization: '***', 'x-kind': 'inline' });
    assert.deepEqual(created.body.destination, inline, 'an inline URL without credentials is shown as it is');

    const batch = await call('POST', '/v1/events/batch', {
      events: [
        {
          id: 'batch-1',
          destination: 'secure',
          delay: '1h',
          headers: { 'X-Access-Token': secret('access'), 'X-Session-Id': secret('session') },
        },
      ],
    });
    assert.equal(batch.status, 200, batch.raw);
    assert.equal(batch.body.results[0].status, 'created', batch.raw);
    assert.deepEqual(batch.body.results[0].event.headers, { 'X-Access-Token': '***', 'X-Session-Id': '***' });

    const patched = await call('PATCH', '/v1/events/inline-1', {
      headers: { 'x-db-password': secret('db-password'), 'x-kind': 'edited' },
    });
    assert.equal(patched.status, 200, patched.raw);
    assert.deepEqual(patched.body.headers, { 'x-db-password': '***', 'x-kind': 'edited' });
    assert.deepEqual((await call('GET', '/v1/events/inline-1')).body.headers, {
      'x-db-password': '***',
      'x-kind': 'edited',
    });
    const list = await call('GET', '/v1/events?limit=100');
    assert.ok(list.body.events.length >= 3);
    await call('GET', '/v1/events/inline-1/transitions');
    const canceled = await call('DELETE', '/v1/events/batch-1');
    assert.equal(canceled.status, 200, canceled.raw);
    assert.deepEqual(canceled.body.headers, { 'X-Access-Token': '***', 'X-Session-Id': '***' });
    // Stored as given: masking is in what is shown only.
    const stored = await node.node.store.eventGet({ tenantId: node.tenantId, id: 'inline-1' });
    assert.equal(stored!.headers['x-db-password'], secret('db-password'));
  });

  it("masks a schedule's template headers, and its occurrences'", async () => {
    const created = await call('POST', '/v1/schedules', {
      id: 'nightly',
      every: '1h',
      destination: 'secure',
      headers: { 'X-Auth-Token': secret('schedule-token'), 'x-job': 'nightly' },
    });
    assert.equal(created.status, 201, created.raw);
    assert.deepEqual(created.body.headers, { 'X-Auth-Token': '***', 'x-job': 'nightly' });
    assert.deepEqual((await call('GET', '/v1/schedules/nightly')).body.headers, {
      'X-Auth-Token': '***',
      'x-job': 'nightly',
    });
    await call('GET', '/v1/schedules');
    const occurrences = await call('GET', '/v1/events?schedule=nightly');
    assert.ok(occurrences.body.events.length >= 1, occurrences.raw);
    for (const e of occurrences.body.events) assert.equal(e.headers['X-Auth-Token'], '***');
    const patched = await call('PATCH', '/v1/schedules/nightly', { paused: true });
    assert.equal(patched.body.headers['X-Auth-Token'], '***');
  });

  it('shows an inline URL stored with credentials (before they were refused) with *** in their place', async () => {
    const url = `http://legacy-user:${secret('url-password')}@127.0.0.1:${receiver.port}/legacy`;
    const [result] = await node.node.store.eventInsertMany({
      events: [newEvent(node.tenantId, 'legacy-inline', { fireAt: Date.now() + 3_600_000, destination: { url } })],
      now: Date.now(),
    });
    assert.equal(result.kind, 'created');
    const got = await call('GET', '/v1/events/legacy-inline');
    assert.equal(got.status, 200, got.raw);
    assert.deepEqual(got.body.destination, { url: `http://legacy-user:***@127.0.0.1:${receiver.port}/legacy` });
    await call('GET', '/v1/events?limit=100');
  });

  it('showed no secret in any answer above', () => {
    assert.ok(shown.length >= 15, `${shown.length} answers`);
    for (const text of shown) assert.ok(!text.includes(MARK), `a secret was shown: ${text.slice(0, 500)}`);
  });
});

describe('which headers are credentials', () => {
  it('the named ones and those whose names say so, case-insensitively; no others', () => {
    for (const name of [
      'authorization',
      'Proxy-Authorization',
      'COOKIE',
      'set-cookie',
      'x-api-key',
      'X-Auth-Token',
      'x-client-secret',
      'x-db-password',
      'apikey',
      'x-session',
      'x-credentials',
      'private-key',
      'x-token',
    ]) {
      assert.ok(isCredentialHeader(name), name);
    }
    for (const name of ['x-request-id', 'content-language', 'x-trace-tenant', 'accept', 'x-kind'])
      assert.ok(!isCredentialHeader(name), name);
  });

  it('keeps the same object when nothing is masked, and never changes the one given', () => {
    const plain = { 'x-request-id': 'r' };
    assert.equal(headersForDisplay(plain), plain);
    const withSecret = { 'x-request-id': 'r', authorization: 'Bearer x' };
    assert.deepEqual(headersForDisplay(withSecret), { 'x-request-id': 'r', authorization: '***' });
    assert.equal(withSecret.authorization, 'Bearer x');
  });
});
