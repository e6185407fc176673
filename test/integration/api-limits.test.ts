/**
 * Per-tenant limits: each one refuses a request over it with a 4xx that names the limit, and
 * writes nothing. Tenant A runs on tight node defaults; overrides are in api-tenant-limits.test.ts.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { InjectOptions } from 'fastify';
import { LIMIT_SPECS } from '../../src/core/tenant-limits.ts';
import { bearer, makeTestApp, type TestApp } from '../support/app.ts';

let t: TestApp;

const LIMITS = {
  payloadBytesMax: 100,
  batchEventsMax: 3,
  scheduleRequestsPerSecond: 1_000_000,
  scheduleAheadMsMax: 7 * 86_400_000,
  idLengthMax: 20,
  headerValueLengthMax: 10,
  destinationsMax: 2,
};

before(async () => {
  t = await makeTestApp({ limits: LIMITS });
});
after(() => t.cleanup());

function req(method: InjectOptions['method'], url: string, payload?: unknown, key = t.tenantKey) {
  return t.app.inject({
    method,
    url,
    headers: bearer(key),
    ...(payload === undefined ? {} : { payload: payload as object }),
  });
}

async function eventCount(tenantId = t.tenantId): Promise<number> {
  return (await t.store.eventList({ tenantId, limit: 1000 })).events.length;
}

/** Asserts a refusal that names `limit`, and returns the error. */
function assertOverLimit(
  res: { statusCode: number; json(): any },
  status: number,
  code: string,
  limit: string,
  field?: string,
) {
  assert.equal(res.statusCode, status, res.json && JSON.stringify(res.json()));
  const { error } = res.json();
  assert.equal(error.code, code);
  assert.match(error.message, new RegExp(`over the limit ${limit} = `));
  assert.equal(error.details[0].limit, limit);
  assert.notEqual(error.details[0].max, undefined);
  if (field !== undefined) assert.equal(error.details[0].field, field);
  return error;
}

const inline = { url: 'https://hooks.example.com/x' };

describe('per-tenant limits, each refused with its name and nothing written', () => {
  test('payloadBytesMax → 413 (create and edit)', async () => {
    const before = await eventCount();
    assertOverLimit(
      await req('POST', '/v1/events', { destination: inline, payload: 'x'.repeat(200) }),
      413,
      'payload_too_large',
      'payloadBytesMax',
      'payload',
    );
    assert.equal(await eventCount(), before);
    const ok = await req('POST', '/v1/events', {
      id: 'small',
      destination: inline,
      delay: '1h',
      payload: 'x'.repeat(50),
    });
    assert.equal(ok.statusCode, 201);
    assertOverLimit(
      await req('PATCH', '/v1/events/small', { payload: 'y'.repeat(200) }),
      413,
      'payload_too_large',
      'payloadBytesMax',
      'payload',
    );
    assert.equal((await t.store.eventGet({ tenantId: t.tenantId, id: 'small' }))!.version, 1);
  });

  test('batchEventsMax → 400, the whole batch refused', async () => {
    const before = await eventCount();
    const events = Array.from({ length: 4 }, (_, i) => ({ id: `b-${i}`, destination: inline, delay: '1h' }));
    assertOverLimit(
      await req('POST', '/v1/events/batch', { events }),
      400,
      'invalid_request',
      'batchEventsMax',
      'events',
    );
    assert.equal(await eventCount(), before);
    assert.equal((await req('POST', '/v1/events/batch', { events: events.slice(0, 3) })).statusCode, 200);
    assert.equal(await eventCount(), before + 3);
  });

  test('scheduleAheadMax → 400 for fireAt, delay and an edit', async () => {
    const before = await eventCount();
    const far = t.clock.now() + 8 * 86_400_000;
    assertOverLimit(
      await req('POST', '/v1/events', { destination: inline, fireAt: far }),
      400,
      'invalid_request',
      'scheduleAheadMax',
      'fireAt',
    );
    assertOverLimit(
      await req('POST', '/v1/events', { destination: inline, delay: '8d' }),
      400,
      'invalid_request',
      'scheduleAheadMax',
      'delay',
    );
    const batch = await req('POST', '/v1/events/batch', { events: [{ destination: inline, delay: '30d' }] });
    assert.equal(batch.json().results[0].error.details[0].limit, 'scheduleAheadMax');
    assert.equal(await eventCount(), before);
    assert.equal((await req('POST', '/v1/events', { id: 'ahead', destination: inline, delay: '7d' })).statusCode, 201);
    assertOverLimit(
      await req('PATCH', '/v1/events/ahead', { delay: '8d' }),
      400,
      'invalid_request',
      'scheduleAheadMax',
      'delay',
    );
  });

  test('idLengthMax → 400 for ids and groups', async () => {
    const before = await eventCount();
    assertOverLimit(
      await req('POST', '/v1/events', { id: 'i'.repeat(21), destination: inline }),
      400,
      'invalid_request',
      'idLengthMax',
      'id',
    );
    assertOverLimit(
      await req('POST', '/v1/events', { group: 'g'.repeat(21), destination: inline }),
      400,
      'invalid_request',
      'idLengthMax',
      'group',
    );
    assert.equal(await eventCount(), before);
  });

  test('headerValueLengthMax → 400 for event and destination headers', async () => {
    const before = await eventCount();
    const long = { 'x-long': 'v'.repeat(11) };
    assertOverLimit(
      await req('POST', '/v1/events', { destination: inline, headers: long }),
      400,
      'invalid_request',
      'headerValueLengthMax',
      'headers.x-long',
    );
    assertOverLimit(
      await req('PUT', '/v1/destinations/h', { url: inline.url, headers: long }),
      400,
      'invalid_request',
      'headerValueLengthMax',
      'headers.x-long',
    );
    assert.equal(await eventCount(), before);
    assert.equal((await req('GET', '/v1/destinations/h')).statusCode, 404);
  });

  test('destinationsMax → 403 quota_exceeded for a new one; replacing an existing one still works', async () => {
    assert.equal((await req('PUT', '/v1/destinations/d1', { url: inline.url })).statusCode, 201);
    assert.equal((await req('PUT', '/v1/destinations/d2', { url: inline.url })).statusCode, 201);
    assertOverLimit(
      await req('PUT', '/v1/destinations/d3', { url: inline.url }),
      403,
      'quota_exceeded',
      'destinationsMax',
    );
    assert.equal((await req('GET', '/v1/destinations/d3')).statusCode, 404);
    assert.equal((await req('PUT', '/v1/destinations/d1', { url: 'https://other.example.com/' })).statusCode, 200);
    // Tenant B has its own count.
    assert.equal((await req('PUT', '/v1/destinations/d3', { url: inline.url }, t.tenantKeyB)).statusCode, 201);
  });

  test('GET /v1/limits shows the limits in effect', async () => {
    const res = await req('GET', '/v1/limits');
    assert.equal(res.statusCode, 200);
    const body = res.json();
    assert.equal(body.payloadBytesMax, 100);
    assert.equal(body.scheduleAheadMax, '7d');
    assert.deepEqual(Object.keys(body).sort(), LIMIT_SPECS.map((s) => s.name).sort());
  });
});

describe('scheduleRequestsPerSecond', () => {
  let r: TestApp;
  before(async () => {
    r = await makeTestApp({ limits: { scheduleRequestsPerSecond: 5 } });
  });
  after(() => r.cleanup());

  const post = (key: string, id: string) =>
    r.app.inject({
      method: 'POST',
      url: '/v1/events',
      headers: bearer(key),
      payload: { id, destination: inline, delay: '1h' },
    });

  test('429 with Retry-After past the rate, per tenant; reads are not limited; the bucket refills', async () => {
    for (let i = 0; i < 5; i++) assert.equal((await post(r.tenantKey, `r-${i}`)).statusCode, 201);
    const limited = await post(r.tenantKey, 'r-5');
    assertOverLimit(limited, 429, 'rate_limited', 'scheduleRequestsPerSecond');
    assert.equal(limited.headers['retry-after'], '1');
    assert.equal(await r.store.eventGet({ tenantId: r.tenantId, id: 'r-5' }), null, 'nothing written');
    const batch = await r.app.inject({
      method: 'POST',
      url: '/v1/events/batch',
      headers: bearer(r.tenantKey),
      payload: { events: [{ destination: inline }] },
    });
    assert.equal(batch.statusCode, 429);
    assert.equal(
      (await r.app.inject({ method: 'GET', url: '/v1/events', headers: bearer(r.tenantKey) })).statusCode,
      200,
    );
    assert.equal((await post(r.tenantKeyB, 'other-tenant')).statusCode, 201, "another tenant's rate is its own");
    await r.clock.advance(200);
    assert.equal((await post(r.tenantKey, 'r-6')).statusCode, 201, 'one token back after 200 ms at 5/s');
    assert.equal((await post(r.tenantKey, 'r-7')).statusCode, 429);
  });
});

describe('the OpenAPI document lists every limit', () => {
  test('each per-tenant limit with its default, and the fixed bounds', async () => {
    const doc = (await t.app.inject({ method: 'GET', url: '/openapi.json' })).json();
    const limits = doc.paths['/v1/limits'].get.responses['200'].content['application/json'].schema.properties;
    for (const spec of LIMIT_SPECS) {
      assert.ok(limits[spec.name], `${spec.name} is documented`);
      assert.match(limits[spec.name].description, /Default /);
    }
    for (const name of [...LIMIT_SPECS.map((s) => s.name), 'request body', 'nesting'])
      assert.ok(doc.info.description.includes(name), `info lists ${name}`);
  });
});
