/**
 * API keys: a tenant manages its own (list without secrets, create, revoke, rotate), the admin
 * rotates any; rotation with and without a grace period; a revoked key fails at once on the node
 * that revoked it and within KEY_CACHE_TTL_MS (≤ 1 s) on another node sharing the store.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { FastifyInstance } from 'fastify';
import { createApp } from '../../src/api/app.ts';
import { KEY_CACHE_TTL_MS } from '../../src/api/auth.ts';
import { KEYS_LIVE_MAX } from '../../src/api/routes/keys.ts';
import { ADMIN_KEY, bearer, makeTestApp, type TestApp } from '../support/app.ts';

let t: TestApp;

before(async () => {
  t = await makeTestApp();
});
after(() => t.cleanup());

const as = (key: string) => ({ headers: bearer(key) });
const listEvents = (key: string, app: FastifyInstance = t.app) =>
  app.inject({ method: 'GET', url: '/v1/events', ...as(key) }).then((r) => r.statusCode);

async function newKey(tenantId = t.tenantId): Promise<{ id: string; key: string }> {
  const res = await t.app.inject({ method: 'POST', url: `/v1/tenants/${tenantId}/keys`, ...as(ADMIN_KEY) });
  assert.equal(res.statusCode, 201);
  return res.json();
}

describe("a tenant's own keys (/v1/keys)", () => {
  test('lists its keys without any secret, creates one (shown once), revokes one at once', async () => {
    const mine = await t.app.inject({ method: 'GET', url: '/v1/keys', ...as(t.tenantKey) });
    assert.equal(mine.statusCode, 200);
    assert.ok(!mine.body.includes(t.tenantKey));
    for (const k of mine.json().keys)
      assert.deepEqual(Object.keys(k).sort(), ['createdAt', 'id', 'prefix', 'revokedAt']);
    const stored = await t.store.apiKeyList({ tenantId: t.tenantId });
    assert.ok(
      stored.every((k) => !mine.body.includes(k.hash)),
      'not even the hash',
    );

    const made = await t.app.inject({ method: 'POST', url: '/v1/keys', ...as(t.tenantKey) });
    assert.equal(made.statusCode, 201);
    const { id, key } = made.json();
    assert.equal(await listEvents(key), 200);
    assert.equal((await t.app.inject({ method: 'DELETE', url: `/v1/keys/${id}`, ...as(t.tenantKey) })).statusCode, 204);
    assert.equal(await listEvents(key), 401);
  });

  test("cannot see, revoke or rotate another tenant's keys", async () => {
    const b = await newKey(t.tenantIdB);
    const listA = (await t.app.inject({ method: 'GET', url: '/v1/keys', ...as(t.tenantKey) })).json().keys;
    assert.ok(!listA.some((k: { id: string }) => k.id === b.id));
    assert.equal(
      (await t.app.inject({ method: 'DELETE', url: `/v1/keys/${b.id}`, ...as(t.tenantKey) })).statusCode,
      404,
    );
    assert.equal(
      (await t.app.inject({ method: 'POST', url: `/v1/keys/${b.id}/rotate`, ...as(t.tenantKey) })).statusCode,
      404,
    );
    assert.equal(await listEvents(b.key), 200, "B's key untouched");
  });

  test(`at most ${KEYS_LIVE_MAX} live keys per tenant`, async () => {
    const { id: tenantId } = (
      await t.app.inject({ method: 'POST', url: '/v1/tenants', ...as(ADMIN_KEY), payload: { name: 'many-keys' } })
    ).json();
    const first = await newKey(tenantId);
    for (let i = 1; i < KEYS_LIVE_MAX; i++)
      assert.equal((await t.app.inject({ method: 'POST', url: '/v1/keys', ...as(first.key) })).statusCode, 201);
    const over = await t.app.inject({ method: 'POST', url: '/v1/keys', ...as(first.key) });
    assert.equal(over.statusCode, 403);
    assert.equal(over.json().error.code, 'quota_exceeded');
    assert.equal(over.json().error.details[0].limit, 'keysLiveMax');
    const rotated = await t.app.inject({ method: 'POST', url: `/v1/keys/${first.id}/rotate`, ...as(first.key) });
    assert.equal(rotated.statusCode, 201, 'a rotation at the cap still works: the old key is on its way out');
  });
});

describe('rotation', () => {
  test('the admin rotates a key: a new key works, the old one fails at once', async () => {
    const old = await newKey();
    assert.equal(await listEvents(old.key), 200);
    const res = await t.app.inject({
      method: 'POST',
      url: `/v1/tenants/${t.tenantId}/keys/${old.id}/rotate`,
      ...as(ADMIN_KEY),
    });
    assert.equal(res.statusCode, 201, res.body);
    const rotated = res.json();
    assert.equal(rotated.replaces, old.id);
    assert.match(rotated.key, /^bk_/);
    assert.equal(rotated.replacedKeyRevokedAt, new Date(t.clock.now()).toISOString());
    assert.equal(await listEvents(rotated.key), 200);
    assert.equal(await listEvents(old.key), 401);
    assert.equal(
      (await t.app.inject({ method: 'POST', url: `/v1/tenants/${t.tenantId}/keys/${old.id}/rotate`, ...as(ADMIN_KEY) }))
        .statusCode,
      404,
      'a revoked key cannot be rotated',
    );
    assert.equal(
      (
        await t.app.inject({
          method: 'POST',
          url: `/v1/tenants/${t.tenantIdB}/keys/${rotated.id}/rotate`,
          ...as(ADMIN_KEY),
        })
      ).statusCode,
      404,
      'only under its own tenant',
    );
  });

  test('with a grace period the old key keeps working until it ends', async () => {
    const old = await newKey();
    const res = await t.app.inject({
      method: 'POST',
      url: `/v1/keys/${old.id}/rotate`,
      ...as(old.key),
      payload: { gracePeriod: '1h' },
    });
    assert.equal(res.statusCode, 201, res.body);
    const rotated = res.json();
    assert.equal(rotated.replacedKeyRevokedAt, new Date(t.clock.now() + 3_600_000).toISOString());
    assert.equal(await listEvents(old.key), 200, 'still in its grace period');
    assert.equal(await listEvents(rotated.key), 200);
    await t.clock.advance(3_600_000);
    assert.equal(await listEvents(old.key), 401, 'grace period over');
    assert.equal(await listEvents(rotated.key), 200);
  });

  test('revoking a key in its grace period ends the grace at once', async () => {
    const old = await newKey();
    const res = await t.app.inject({
      method: 'POST',
      url: `/v1/tenants/${t.tenantId}/keys/${old.id}/rotate`,
      ...as(ADMIN_KEY),
      payload: { gracePeriod: '1d' },
    });
    assert.equal(res.statusCode, 201);
    assert.equal(await listEvents(old.key), 200);
    assert.equal(
      (await t.app.inject({ method: 'DELETE', url: `/v1/tenants/${t.tenantId}/keys/${old.id}`, ...as(ADMIN_KEY) }))
        .statusCode,
      204,
    );
    assert.equal(await listEvents(old.key), 401);
    assert.equal(await listEvents(res.json().key), 200);
  });

  test('refuses a grace period over 7 days and unknown fields', async () => {
    const old = await newKey();
    for (const payload of [{ gracePeriod: '8d' }, { gracePeriod: -1 }, { grace: '1h' }]) {
      const res = await t.app.inject({ method: 'POST', url: `/v1/keys/${old.id}/rotate`, ...as(old.key), payload });
      assert.equal(res.statusCode, 400, JSON.stringify(payload));
    }
    assert.equal(await listEvents(old.key), 200, 'nothing changed');
  });
});

describe('revocation on another node', () => {
  test(`KEY_CACHE_TTL_MS is at most 1 s, and bounds how long another node accepts a revoked key`, async () => {
    assert.ok(KEY_CACHE_TTL_MS <= 1_000);
    // A second API over the same store stands for another node.
    const other = await createApp(t.deps);
    try {
      const k = await newKey();
      assert.equal(await listEvents(k.key, other), 200, 'cached on the other node');
      assert.equal(
        (await t.app.inject({ method: 'DELETE', url: `/v1/tenants/${t.tenantId}/keys/${k.id}`, ...as(ADMIN_KEY) }))
          .statusCode,
        204,
      );
      assert.equal(await listEvents(k.key), 401, 'at once on the node that revoked it');
      await t.clock.advance(KEY_CACHE_TTL_MS);
      assert.equal(await listEvents(k.key, other), 401, 'within the TTL on the other');
    } finally {
      await other.close();
    }
  });
});
