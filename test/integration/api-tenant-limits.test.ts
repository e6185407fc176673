/**
 * A tenant's own limits (PATCH /v1/tenants/{id}, admin) over the node's defaults, and the
 * pending-events quota.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { InjectOptions } from 'fastify';
import { PENDING_RECOUNT_MS_MIN } from '../../src/api/tenant-quotas.ts';
import { ADMIN_KEY, bearer, makeTestApp, moveEvent, type TestApp } from '../support/app.ts';

let t: TestApp;

before(async () => {
  t = await makeTestApp();
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
const patch = (tenantId: string, limits: Record<string, unknown>) =>
  req('PATCH', `/v1/tenants/${tenantId}`, { limits }, ADMIN_KEY);
const inline = { url: 'https://hooks.example.com/x' };

describe("a tenant's own limits", () => {
  test('PATCH sets limits for one tenant only; GET shows them; null goes back to the default', async () => {
    const res = await patch(t.tenantId, { payloadBytesMax: 64, scheduleAheadMax: '2d' });
    assert.equal(res.statusCode, 200, res.body);
    assert.equal(res.json().limits.payloadBytesMax, 64);
    assert.equal(res.json().limits.scheduleAheadMax, '2d');
    assert.deepEqual(res.json().overrides, { payloadBytesMax: 64, scheduleAheadMax: '2d' });

    const big = { destination: inline, payload: 'x'.repeat(100) };
    const refused = await req('POST', '/v1/events', big);
    assert.equal(refused.statusCode, 413);
    assert.equal(refused.json().error.details[0].limit, 'payloadBytesMax');
    assert.equal(refused.json().error.details[0].max, 64);
    assert.equal((await req('POST', '/v1/events', big, t.tenantKeyB)).statusCode, 201, 'tenant B keeps the defaults');
    assert.equal((await req('POST', '/v1/events', { destination: inline, delay: '3d' })).statusCode, 400);
    assert.equal((await req('GET', '/v1/limits')).json().payloadBytesMax, 64);
    assert.equal(
      (await req('GET', `/v1/tenants/${t.tenantId}`, undefined, ADMIN_KEY)).json().limits.payloadBytesMax,
      64,
    );

    const reset = await patch(t.tenantId, { payloadBytesMax: null, scheduleAheadMax: null });
    assert.deepEqual(reset.json().overrides, {});
    assert.equal((await req('POST', '/v1/events', big)).statusCode, 201);
  });

  test('keeps the other settings (durability) of the tenant', async () => {
    await t.store.tenantUpdate({ id: t.tenantIdB, settings: { durability: 'relaxed' } });
    assert.equal((await patch(t.tenantIdB, { destinationsMax: 5 })).statusCode, 200);
    assert.deepEqual((await t.store.tenantGet({ id: t.tenantIdB }))!.settings, {
      durability: 'relaxed',
      limits: { destinationsMax: 5 },
    });
  });

  test('refuses unknown limits, values out of bounds, a missing tenant and tenant keys, changing nothing', async () => {
    const before = (await t.store.tenantGet({ id: t.tenantId }))!.settings;
    for (const limits of [
      { payloadBytes: 5 },
      { payloadBytesMax: 0 },
      { payloadBytesMax: 1e12 },
      { payloadBytesMax: '5' },
      { scheduleAheadMax: 'soon' },
      { scheduleAheadMax: '99999d' },
      { idLengthMax: 201 },
    ]) {
      const res = await patch(t.tenantId, limits);
      assert.equal(res.statusCode, 400, JSON.stringify(limits));
      assert.match(res.json().error.message, /limits/);
    }
    assert.equal(
      (await req('PATCH', `/v1/tenants/${t.tenantId}`, { limits: {}, name: 'x' }, ADMIN_KEY)).statusCode,
      400,
    );
    assert.equal((await patch('t_missing', { batchEventsMax: 5 })).statusCode, 404);
    assert.equal(
      (await req('PATCH', `/v1/tenants/${t.tenantId}`, { limits: { batchEventsMax: 5000 } })).statusCode,
      403,
      'a tenant cannot raise its own limits',
    );
    assert.deepEqual((await t.store.tenantGet({ id: t.tenantId }))!.settings, before);
  });

  test('a new scheduling rate applies at once', async () => {
    assert.equal((await patch(t.tenantId, { scheduleRequestsPerSecond: 2 })).statusCode, 200);
    const post = () => req('POST', '/v1/events', { destination: inline, delay: '1h' });
    assert.equal((await post()).statusCode, 201);
    assert.equal((await post()).statusCode, 201);
    const limited = await post();
    assert.equal(limited.statusCode, 429);
    assert.ok(Number(limited.headers['retry-after']) >= 1);
    await patch(t.tenantId, { scheduleRequestsPerSecond: null });
    assert.equal((await post()).statusCode, 201);
  });
});

describe('pendingEventsMax', () => {
  test('refuses events past the quota (one, a batch, a replay), writing nothing; finished events free room', async () => {
    const { id: tenantId } = (await req('POST', '/v1/tenants', { name: 'quota' }, ADMIN_KEY)).json();
    const { key } = (await req('POST', `/v1/tenants/${tenantId}/keys`, undefined, ADMIN_KEY)).json();
    assert.equal((await patch(tenantId, { pendingEventsMax: 3 })).statusCode, 200);
    const create = (id: string) => req('POST', '/v1/events', { id, destination: inline, delay: '1h' }, key);
    for (const id of ['p1', 'p2', 'p3']) assert.equal((await create(id)).statusCode, 201);

    const over = await create('p4');
    assert.equal(over.statusCode, 403);
    assert.equal(over.json().error.code, 'quota_exceeded');
    assert.equal(over.json().error.details[0].limit, 'pendingEventsMax');
    assert.match(over.json().error.message, /over the limit pendingEventsMax = 3/);
    assert.equal(await t.store.eventGet({ tenantId, id: 'p4' }), null);
    assert.equal((await create('p1')).statusCode, 200, 'repeating a stored event still answers as before');

    // Two events finish: room for two, once the estimate is recounted.
    await moveEvent(t.store, tenantId, 'p1', 'archived', t.clock.now());
    await req('DELETE', '/v1/events/p2', undefined, key);
    await t.clock.advance(PENDING_RECOUNT_MS_MIN);
    const batch = await req(
      'POST',
      '/v1/events/batch',
      { events: ['b1', 'b2', 'b3'].map((id) => ({ id, destination: inline, delay: '1h' })) },
      key,
    );
    assert.equal(batch.statusCode, 403, 'three do not fit in two');
    assert.equal(await t.store.eventCountPending({ tenantId }), 1);
    assert.equal((await create('p5')).statusCode, 201);
    assert.equal((await create('p6')).statusCode, 201);
    assert.equal(
      (await req('POST', '/v1/events/p1/replay', undefined, key)).statusCode,
      403,
      'a replay makes an event pending again',
    );
    assert.equal((await t.store.eventGet({ tenantId, id: 'p1' }))!.state, 'archived');
    assert.equal(await t.store.eventCountPending({ tenantId }), 3);
  });
});
