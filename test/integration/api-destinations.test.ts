/** /v1/destinations over a real SQLite store: put (create/replace), get, list, delete; secrets stay write-only. */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { InjectOptions } from 'fastify';
import { bearer, makeTestApp, type TestApp } from '../support/app.ts';

let t: TestApp;

before(async () => {
  t = await makeTestApp();
});
after(() => t.cleanup());

function req(method: InjectOptions['method'], url: string, payload?: object, key = t.tenantKey) {
  return t.app.inject({ method, url, headers: bearer(key), ...(payload === undefined ? {} : { payload }) });
}

function assertError(res: { statusCode: number; json(): any }, status: number, code: string, field?: string) {
  assert.equal(res.statusCode, status, JSON.stringify(res.json()));
  assert.equal(res.json().error.code, code);
  if (field !== undefined) assert.equal(res.json().error.details?.[0]?.field, field, JSON.stringify(res.json()));
}

describe('PUT /v1/destinations/{name}', () => {
  test('creates (201) with defaults and a generated secret shown once', async () => {
    const res = await req('PUT', '/v1/destinations/orders-webhook', { url: 'https://orders.example.com/hooks/belfry' });
    assert.equal(res.statusCode, 201, res.body);
    const d = res.json();
    assert.match(d.secret, /^whsec_[A-Za-z0-9+/]{32}$/);
    assert.deepEqual(
      { ...d, secret: undefined, createdAt: undefined, updatedAt: undefined },
      {
        name: 'orders-webhook',
        kind: 'http',
        url: 'https://orders.example.com/hooks/belfry',
        headers: {},
        timeout: '10s',
        retry: null,
        rateLimit: null,
        maxConcurrency: 20,
        secret: undefined,
        createdAt: undefined,
        updatedAt: undefined,
      },
    );
    const stored = await t.store.destinationGet({ tenantId: t.tenantId, name: 'orders-webhook' });
    assert.deepEqual(stored!.secrets, [{ secret: d.secret, expiresAt: null }]);
    assert.deepEqual(t.destinationsChanged.at(-1), [t.tenantId, 'orders-webhook']);

    const got = await req('GET', '/v1/destinations/orders-webhook');
    assert.equal(got.statusCode, 200);
    assert.equal(got.json().secret, undefined);
    assert.ok(!got.body.includes('whsec_'));
  });

  test('replaces (200); without a secret keeps the stored one; with one, stores it and never returns it', async () => {
    const created = (await req('PUT', '/v1/destinations/billing', { url: 'https://billing.example/h' })).json();
    const full = {
      url: 'https://billing.example/v2',
      headers: { 'x-team': 'checkout' },
      timeout: '30s',
      retry: { maxAttempts: 12, minBackoff: '1s', maxBackoff: '1h', coefficient: 2 },
      rateLimit: { perSecond: 200 },
      maxConcurrency: 50,
    };
    const replaced = await req('PUT', '/v1/destinations/billing', full);
    assert.equal(replaced.statusCode, 200, replaced.body);
    const d = replaced.json();
    assert.equal(d.secret, undefined);
    assert.deepEqual(
      {
        url: d.url,
        headers: d.headers,
        timeout: d.timeout,
        retry: d.retry,
        rateLimit: d.rateLimit,
        maxConcurrency: d.maxConcurrency,
      },
      full,
    );
    assert.equal(d.createdAt, created.createdAt);
    assert.deepEqual((await t.store.destinationGet({ tenantId: t.tenantId, name: 'billing' }))!.secrets, [
      { secret: created.secret, expiresAt: null },
    ]);

    const secret = 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw';
    const withSecret = await req('PUT', '/v1/destinations/billing', { url: 'https://billing.example/v2', secret });
    assert.equal(withSecret.statusCode, 200);
    assert.ok(!withSecret.body.includes('whsec_'));
    assert.deepEqual((await t.store.destinationGet({ tenantId: t.tenantId, name: 'billing' }))!.secrets, [
      { secret, expiresAt: null },
    ]);

    const createdWithSecret = await req('PUT', '/v1/destinations/given-secret', { url: 'https://x.example', secret });
    assert.equal(createdWithSecret.statusCode, 201);
    assert.ok(!createdWithSecret.body.includes('whsec_'), 'a secret the client sent is not echoed');
  });

  const invalid: [string, object, string][] = [
    ['missing url', { timeout: '5s' }, 'url'],
    ['non-http url', { url: 'file:///etc/passwd' }, 'url'],
    ['not a url', { url: 'orders' }, 'url'],
    ['timeout over 5m', { url: 'https://x.example', timeout: '6m' }, 'timeout'],
    ['timeout zero', { url: 'https://x.example', timeout: 0 }, 'timeout'],
    ['timeout not a duration', { url: 'https://x.example', timeout: 'soon' }, 'timeout'],
    ['maxConcurrency over 1000', { url: 'https://x.example', maxConcurrency: 1001 }, 'maxConcurrency'],
    ['maxConcurrency zero', { url: 'https://x.example', maxConcurrency: 0 }, 'maxConcurrency'],
    ['rateLimit zero', { url: 'https://x.example', rateLimit: { perSecond: 0 } }, 'rateLimit.perSecond'],
    ['rateLimit huge', { url: 'https://x.example', rateLimit: { perSecond: 1e308 } }, 'rateLimit.perSecond'],
    ['secret not whsec_', { url: 'https://x.example', secret: 'hunter2' }, 'secret'],
    ['secret too short', { url: 'https://x.example', secret: 'whsec_abc' }, 'secret'],
    ['bad retry', { url: 'https://x.example', retry: { maxAttempts: 101 } }, 'retry.maxAttempts'],
    ['reserved header', { url: 'https://x.example', headers: { host: 'evil' } }, 'headers.host'],
    ['unknown field', { url: 'https://x.example', color: 'red' }, 'color'],
    ['a kind without its fields', { url: 'https://x.example', kind: 'nats' }, 'servers'],
    ['unknown kind', { url: 'https://x.example', kind: 'sqs' }, 'kind'],
  ];
  for (const [name, body, field] of invalid) {
    test(`400 for ${name}, nothing written`, async () => {
      assertError(await req('PUT', '/v1/destinations/invalid-one', body), 400, 'invalid_request', field);
      assertError(await req('GET', '/v1/destinations/invalid-one'), 404, 'not_found');
    });
  }

  test('400 for an invalid name', async () => {
    assertError(
      await req('PUT', '/v1/destinations/has%20space', { url: 'https://x.example' }),
      400,
      'invalid_request',
      'name',
    );
    assertError(
      await req('PUT', `/v1/destinations/${'n'.repeat(101)}`, { url: 'https://x.example' }),
      400,
      'invalid_request',
      'name',
    );
  });
});

describe('GET /v1/destinations, DELETE /v1/destinations/{name}', () => {
  test('lists without secrets; deletes (204), then 404', async () => {
    await req('PUT', '/v1/destinations/to-delete', { url: 'https://d.example' });
    const list = await req('GET', '/v1/destinations');
    assert.equal(list.statusCode, 200);
    const names = list.json().destinations.map((d: any) => d.name);
    assert.ok(names.includes('to-delete'));
    assert.ok(!list.body.includes('whsec_'));

    const del = await req('DELETE', '/v1/destinations/to-delete');
    assert.equal(del.statusCode, 204);
    assert.equal(del.body, '');
    assert.deepEqual(t.destinationsChanged.at(-1), [t.tenantId, 'to-delete']);
    assertError(await req('DELETE', '/v1/destinations/to-delete'), 404, 'not_found');
    assertError(await req('GET', '/v1/destinations/to-delete'), 404, 'not_found');
  });

  test("tenant B never sees tenant A's destinations", async () => {
    await req('PUT', '/v1/destinations/private-a', { url: 'https://a.example' });
    const b = t.tenantKeyB;
    assertError(await req('GET', '/v1/destinations/private-a', undefined, b), 404, 'not_found');
    assertError(await req('DELETE', '/v1/destinations/private-a', undefined, b), 404, 'not_found');
    assert.deepEqual((await req('GET', '/v1/destinations', undefined, b)).json().destinations, []);
    const own = await req('PUT', '/v1/destinations/private-a', { url: 'https://b.example' }, b);
    assert.equal(own.statusCode, 201, 'the same name is a new destination for B');
    assert.equal((await req('GET', '/v1/destinations/private-a')).json().url, 'https://a.example');
  });
});

describe('scheduling to a destination (the event routes cache which destinations exist)', () => {
  test('a destination deleted through this node is refused at once; one created is accepted at once', async () => {
    const event = (id: string) => ({ id, delay: '1h', destination: 'short-lived', payload: {} });
    assertError(await req('POST', '/v1/events', event('e0')), 400, 'invalid_request', 'destination');
    assert.equal(
      (await req('PUT', '/v1/destinations/short-lived', { url: 'https://short.example/h' })).statusCode,
      201,
    );
    assert.equal(
      (await req('POST', '/v1/events', event('e1'))).statusCode,
      201,
      'created just before: accepted (only found destinations are cached)',
    );
    assert.equal((await req('POST', '/v1/events', event('e2'))).statusCode, 201);
    assert.equal((await req('DELETE', '/v1/destinations/short-lived')).statusCode, 204);
    assertError(await req('POST', '/v1/events', event('e3')), 400, 'invalid_request', 'destination');
  });
});
