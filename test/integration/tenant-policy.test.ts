/** Per-tenant policy: missedAfter archives a first fire that comes too late; durability is stored and shown. */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { startReceiver, type Receiver } from '../support/receiver.ts';
import { ADMIN_KEY, startTestNode, waitUntil, type TestNode } from '../support/node.ts';

describe('tenant policy', () => {
  let t: TestNode;
  let rx: Receiver;
  let key: string;
  let tenantId: string;
  before(async () => {
    t = await startTestNode();
    rx = await startReceiver({ behavior: () => ({ status: 200 }) });
    const tenant = await t.api(
      'POST',
      '/v1/tenants',
      { name: 'strict-timing', missedAfter: '2s', durability: 'relaxed' },
      ADMIN_KEY,
    );
    assert.equal(tenant.status, 201, JSON.stringify(tenant.body));
    assert.equal(tenant.body.missedAfter, '2s');
    assert.equal(tenant.body.durability, 'relaxed');
    tenantId = tenant.body.id;
    key = (await t.api('POST', `/v1/tenants/${tenantId}/keys`, {}, ADMIN_KEY)).body.key;
  });
  after(async () => {
    await t.close();
    await rx.close();
  });

  it('archives an event first fired later than missedAfter, and delivers one within it', async () => {
    const now = Date.now();
    assert.equal(
      (
        await t.api(
          'POST',
          '/v1/events',
          { id: 'too-late', fireAt: now - 60_000, destination: { url: rx.url }, payload: {} },
          key,
        )
      ).status,
      201,
    );
    assert.equal(
      (
        await t.api(
          'POST',
          '/v1/events',
          { id: 'in-time', fireAt: now - 500, destination: { url: rx.url }, payload: {} },
          key,
        )
      ).status,
      201,
    );
    await waitUntil(
      'both settled',
      async () => {
        const a = (await t.api('GET', '/v1/events/too-late', undefined, key)).body.state;
        const b = (await t.api('GET', '/v1/events/in-time', undefined, key)).body.state;
        return a === 'archived' && b === 'succeeded';
      },
      5_000,
    );
    const late = (await t.api('GET', '/v1/events/too-late', undefined, key)).body;
    assert.match(late.lastError, /^missed: fired \d+ ms late, beyond the tenant's missedAfter of 2000 ms$/);
    assert.deepEqual(
      rx.requests.map((r) => r.headers['webhook-id']),
      ['in-time'],
    );
    // Replay is the way to deliver it anyway: missedAfter applies to the first fire only.
    assert.equal((await t.api('POST', '/v1/events/too-late/replay', undefined, key)).status, 200);
    await rx.waitFor((reqs) => reqs.some((r) => r.headers['webhook-id'] === 'too-late'), 5_000);
  });

  it('changes or clears the policy through PATCH, and rejects a bad one naming the field', async () => {
    const bad = await t.api('PATCH', `/v1/tenants/${tenantId}`, { missedAfter: 'soon' }, ADMIN_KEY);
    assert.equal(bad.status, 400);
    assert.match(JSON.stringify(bad.body.error), /missedAfter/);
    const cleared = await t.api(
      'PATCH',
      `/v1/tenants/${tenantId}`,
      { missedAfter: null, durability: 'strict' },
      ADMIN_KEY,
    );
    assert.equal(cleared.status, 200, JSON.stringify(cleared.body));
    assert.equal(cleared.body.missedAfter, null);
    assert.equal(cleared.body.durability, 'strict');
    const listed = (await t.api('GET', '/v1/tenants', undefined, ADMIN_KEY)).body.tenants.find(
      (x: { id: string }) => x.id === tenantId,
    );
    assert.equal(listed.durability, 'strict');
  });
});
