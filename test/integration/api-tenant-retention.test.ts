/** A tenant's own retention periods (PATCH /v1/tenants/{id}, admin) over the node's defaults. */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { InjectOptions } from 'fastify';
import { ADMIN_KEY, bearer, makeTestApp, type TestApp } from '../support/app.ts';

let t: TestApp;

before(async () => {
  t = await makeTestApp();
});
after(() => t.cleanup());

function req(method: InjectOptions['method'], url: string, payload?: unknown, key = ADMIN_KEY) {
  return t.app.inject({
    method,
    url,
    headers: bearer(key),
    ...(payload === undefined ? {} : { payload: payload as object }),
  });
}
const patch = (tenantId: string, retention: unknown) => req('PATCH', `/v1/tenants/${tenantId}`, { retention });
const DEFAULTS = { succeeded: '7d', canceled: '7d', discarded: '30d', archived: '30d' };

describe("a tenant's own retention", () => {
  test("GET shows the node's defaults until the tenant has its own", async () => {
    const res = await req('GET', `/v1/tenants/${t.tenantId}`);
    assert.equal(res.statusCode, 200, res.body);
    assert.deepEqual(res.json().retention, DEFAULTS);
    assert.deepEqual(res.json().retentionOverrides, {});
  });

  test('PATCH sets periods down to seconds for one tenant only; null goes back to the default', async () => {
    const res = await patch(t.tenantId, { succeeded: '90s', canceled: 3_600_000, archived: '365d' });
    assert.equal(res.statusCode, 200, res.body);
    assert.deepEqual(res.json().retention, { succeeded: '90s', canceled: '1h', discarded: '30d', archived: '365d' });
    assert.deepEqual(res.json().retentionOverrides, { succeeded: '90s', canceled: '1h', archived: '365d' });
    assert.deepEqual((await t.store.tenantGet({ id: t.tenantId }))!.settings.retention, {
      succeeded: 90_000,
      canceled: 3_600_000,
      archived: 365 * 86_400_000,
    });
    assert.deepEqual(
      (await req('GET', `/v1/tenants/${t.tenantIdB}`)).json().retention,
      DEFAULTS,
      'tenant B keeps the defaults',
    );

    const again = await patch(t.tenantId, { discarded: '1s', succeeded: null });
    assert.deepEqual(
      again.json().retentionOverrides,
      { canceled: '1h', discarded: '1s', archived: '365d' },
      'periods not named stay as they were',
    );
    const reset = await patch(t.tenantId, { canceled: null, discarded: null, archived: null });
    assert.deepEqual(reset.json().retention, DEFAULTS);
    assert.equal(
      (await t.store.tenantGet({ id: t.tenantId }))!.settings.retention,
      undefined,
      'no empty retention left behind',
    );
  });

  test('keeps the limits and policy of the tenant, and they keep its retention', async () => {
    assert.equal(
      (await req('PATCH', `/v1/tenants/${t.tenantIdB}`, { durability: 'relaxed', limits: { destinationsMax: 5 } }))
        .statusCode,
      200,
    );
    assert.equal((await patch(t.tenantIdB, { succeeded: '2d' })).statusCode, 200);
    assert.equal(
      (await req('PATCH', `/v1/tenants/${t.tenantIdB}`, { limits: { destinationsMax: 6 } })).statusCode,
      200,
    );
    assert.deepEqual((await t.store.tenantGet({ id: t.tenantIdB }))!.settings, {
      durability: 'relaxed',
      limits: { destinationsMax: 6 },
      retention: { succeeded: 2 * 86_400_000 },
    });
  });

  test('refuses a period that is not a duration from 1s to 3650d, an unknown state, a missing tenant and tenant keys, changing nothing', async () => {
    const before = (await t.store.tenantGet({ id: t.tenantId }))!.settings;
    const bad: [unknown, RegExp][] = [
      [{ succeeded: '0s' }, /retention\.succeeded.*from 1s to 3650d/],
      [{ succeeded: '500ms' }, /retention\.succeeded.*from 1s/],
      [{ succeeded: 999 }, /retention\.succeeded/],
      [{ canceled: '3651d' }, /retention\.canceled/],
      [{ archived: 'a week' }, /retention\.archived/],
      [{ discarded: '7 d' }, /retention\.discarded/],
      [{ discarded: -5 }, /retention/],
      [{ discarded: 1.5 }, /retention/],
      [{ discarded: true }, /retention\/discarded/],
      [{ scheduled: '1d' }, /retention\/scheduled.*not allowed/],
      [{ executing: '1d' }, /retention\/executing.*not allowed/],
      [{ succeeded: '1d', failed: '1d' }, /retention\/failed.*not allowed/],
      ['7d', /retention must be object/],
      [null, /retention/],
      [['7d'], /retention/],
    ];
    for (const [retention, message] of bad) {
      const res = await patch(t.tenantId, retention);
      assert.equal(res.statusCode, 400, `${JSON.stringify(retention)}: ${res.body}`);
      assert.equal(res.json().error.code, 'invalid_request');
      assert.match(res.json().error.message, message, JSON.stringify(retention));
    }
    assert.equal((await patch('t_missing', { succeeded: '1d' })).statusCode, 404);
    assert.equal(
      (await req('PATCH', `/v1/tenants/${t.tenantId}`, { retention: { succeeded: '1s' } }, t.tenantKey)).statusCode,
      403,
      'a tenant cannot set its own retention',
    );
    assert.deepEqual((await t.store.tenantGet({ id: t.tenantId }))!.settings, before);
  });

  test('the OpenAPI document lists the retention of a tenant', async () => {
    const doc = (await req('GET', '/openapi.json')).json();
    const body = doc.paths['/v1/tenants/{tenantId}'].patch.requestBody.content['application/json'].schema;
    assert.deepEqual(Object.keys(body.properties.retention.properties), [
      'succeeded',
      'canceled',
      'discarded',
      'archived',
    ]);
  });
});
