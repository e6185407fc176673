/** Admin routes, authentication, operational routes and the OpenAPI document. */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { KEY_CACHE_TTL_MS } from '../../src/api/auth.ts';
import { countByState } from '../../src/store/conformance/fixtures.ts';
import { ADMIN_KEY, bearer, makeTestApp, type TestApp } from '../support/app.ts';
import { PACKAGE_VERSION } from '../support/package.ts';

let t: TestApp;
let ready = { ok: true, reasons: [] as string[] };

before(async () => {
  t = await makeTestApp({ ready: async () => ready });
});
after(() => t.cleanup());

const admin = () => bearer(ADMIN_KEY);

function assertError(res: { statusCode: number; json(): any }, status: number, code: string) {
  assert.equal(res.statusCode, status, JSON.stringify(res.json()));
  assert.equal(res.json().error.code, code);
  assert.equal(typeof res.json().error.message, 'string');
}

describe('authentication', () => {
  test('401 without a valid key, whatever the form', async () => {
    for (const headers of [
      {},
      { authorization: 'Basic abc' },
      { authorization: 'Bearer' },
      bearer('nope'),
      bearer('bk_unknownkey'),
      bearer(ADMIN_KEY + 'x'),
      bearer('x'.repeat(600)),
    ]) {
      assertError(await t.app.inject({ method: 'GET', url: '/v1/events', headers }), 401, 'unauthorized');
      assertError(await t.app.inject({ method: 'GET', url: '/v1/tenants', headers }), 401, 'unauthorized');
    }
  });

  test('admin routes refuse tenant keys (403); tenant routes refuse the admin key (403)', async () => {
    assertError(
      await t.app.inject({ method: 'GET', url: '/v1/tenants', headers: bearer(t.tenantKey) }),
      403,
      'forbidden',
    );
    assertError(
      await t.app.inject({ method: 'POST', url: '/v1/tenants', headers: bearer(t.tenantKey), payload: { name: 'x' } }),
      403,
      'forbidden',
    );
    assertError(await t.app.inject({ method: 'GET', url: '/v1/events', headers: admin() }), 403, 'forbidden');
    assertError(
      await t.app.inject({
        method: 'PUT',
        url: '/v1/destinations/x',
        headers: admin(),
        payload: { url: 'https://x.example' },
      }),
      403,
      'forbidden',
    );
  });

  test('auth runs before the body is read: an unauthenticated bad body is 401, not 400', async () => {
    assertError(
      await t.app.inject({
        method: 'POST',
        url: '/v1/events',
        payload: '{bad',
        headers: { 'content-type': 'application/json' },
      }),
      401,
      'unauthorized',
    );
  });
});

describe('tenants and keys', () => {
  test('creates and lists tenants', async () => {
    const res = await t.app.inject({ method: 'POST', url: '/v1/tenants', headers: admin(), payload: { name: 'acme' } });
    assert.equal(res.statusCode, 201);
    const tenant = res.json();
    assert.equal(tenant.name, 'acme');
    assert.match(tenant.id, /^t_[0-9a-z]{26}$/);
    assert.match(tenant.createdAt, /Z$/);
    const list = (await t.app.inject({ method: 'GET', url: '/v1/tenants', headers: admin() })).json().tenants;
    assert.ok(list.some((x: any) => x.id === tenant.id && x.name === 'acme'));
    assert.ok(list.some((x: any) => x.id === t.tenantId));
  });

  test('a new tenant comes with its signing secret, shown once and never again', async () => {
    const res = await t.app.inject({
      method: 'POST',
      url: '/v1/tenants',
      headers: admin(),
      payload: { name: 'signs' },
    });
    assert.equal(res.statusCode, 201);
    const { id, signingSecret } = res.json();
    assert.match(signingSecret, /^whsec_[A-Za-z0-9+/]{32,}={0,2}$/);
    assert.deepEqual(await t.store.tenantSecretsGet({ id }), [{ secret: signingSecret, expiresAt: null }]);
    const material = signingSecret.slice('whsec_'.length);
    for (const url of ['/v1/tenants', `/v1/tenants/${id}`]) {
      const body = (await t.app.inject({ method: 'GET', url, headers: admin() })).body;
      assert.ok(!body.includes(material) && !body.includes('whsec_'), `GET ${url} shows no secret`);
    }
    const patched = await t.app.inject({
      method: 'PATCH',
      url: `/v1/tenants/${id}`,
      headers: admin(),
      payload: { durability: 'relaxed' },
    });
    assert.equal(patched.statusCode, 200);
    assert.ok(!patched.body.includes('whsec_'));
    assert.deepEqual(
      await t.store.tenantSecretsGet({ id }),
      [{ secret: signingSecret, expiresAt: null }],
      'a PATCH keeps the secret',
    );
  });

  test("the operator rotates a tenant's signing secret; 404 for no such tenant, 400 for bad bodies", async () => {
    const { id, signingSecret } = (
      await t.app.inject({ method: 'POST', url: '/v1/tenants', headers: admin(), payload: { name: 'rotates' } })
    ).json();
    const url = `/v1/tenants/${id}/signing-secret/rotate`;
    const res = await t.app.inject({ method: 'POST', url, headers: admin(), payload: { gracePeriod: '1h' } });
    assert.equal(res.statusCode, 200, res.body);
    assert.deepEqual(Object.keys(res.json()).sort(), ['previousSecretsExpireAt', 'secret']);
    assert.equal(Date.parse(res.json().previousSecretsExpireAt), t.clock.now() + 3_600_000);
    assert.deepEqual(await t.store.tenantSecretsGet({ id }), [
      { secret: res.json().secret, expiresAt: null },
      { secret: signingSecret, expiresAt: t.clock.now() + 3_600_000 },
    ]);
    assert.deepEqual(t.tenantSecretsChanged.at(-1), id, 'the dispatcher is told');
    assertError(
      await t.app.inject({ method: 'POST', url: '/v1/tenants/t_nosuchtenant/signing-secret/rotate', headers: admin() }),
      404,
      'not_found',
    );
    for (const payload of [{ gracePeriod: '8d' }, { secret: 'nope' }, { grace: '1h' }, { gracePeriod: -1 }]) {
      assertError(await t.app.inject({ method: 'POST', url, headers: admin(), payload }), 400, 'invalid_request');
    }
    for (let i = 0; i < 10; i++)
      assert.equal((await t.app.inject({ method: 'POST', url, headers: admin() })).statusCode, 200);
    assert.ok((await t.store.tenantSecretsGet({ id }))!.length <= 5, 'a bounded set of secrets');
  });

  test('a tenant rotates its own signing secret, and only its own', async () => {
    const before = await t.store.tenantSecretsGet({ id: t.tenantIdB });
    const res = await t.app.inject({
      method: 'POST',
      url: '/v1/signing-secret/rotate',
      headers: bearer(t.tenantKey),
      payload: { gracePeriod: 0 },
    });
    assert.equal(res.statusCode, 200, res.body);
    assert.deepEqual(
      await t.store.tenantSecretsGet({ id: t.tenantId }),
      [{ secret: res.json().secret, expiresAt: null }],
      'no grace: the old one is gone',
    );
    assert.deepEqual(await t.store.tenantSecretsGet({ id: t.tenantIdB }), before);
    assertError(
      await t.app.inject({ method: 'POST', url: '/v1/signing-secret/rotate', headers: admin() }),
      403,
      'forbidden',
    );
  });

  test('400 for a bad tenant body', async () => {
    for (const payload of [{}, { name: '' }, { name: 'x'.repeat(201) }, { name: 'a\nb' }, { name: 'ok', extra: 1 }]) {
      assertError(
        await t.app.inject({ method: 'POST', url: '/v1/tenants', headers: admin(), payload }),
        400,
        'invalid_request',
      );
    }
  });

  test('makes a key shown once, lists keys without secrets, revokes at once (even when cached)', async () => {
    const made = await t.app.inject({ method: 'POST', url: `/v1/tenants/${t.tenantIdB}/keys`, headers: admin() });
    assert.equal(made.statusCode, 201);
    const key = made.json();
    assert.match(key.key, /^bk_[A-Za-z0-9_-]{43}$/);
    assert.equal(key.prefix, key.key.slice(0, key.prefix.length));
    assert.ok(key.prefix.length < 16);

    const stored = await t.store.apiKeyList({ tenantId: t.tenantIdB });
    assert.ok(
      stored.every((k) => k.hash !== key.key && !JSON.stringify(k).includes(key.key)),
      'only the hash is stored',
    );

    const listed = await t.app.inject({ method: 'GET', url: `/v1/tenants/${t.tenantIdB}/keys`, headers: admin() });
    assert.equal(listed.statusCode, 200);
    assert.ok(!listed.body.includes(key.key));
    const entry = listed.json().keys.find((k: any) => k.id === key.id);
    assert.deepEqual(Object.keys(entry).sort(), ['createdAt', 'id', 'prefix', 'revokedAt']);
    assert.equal(entry.revokedAt, null);

    // Use it, so the lookup is cached, then revoke: the next request must fail.
    assert.equal((await t.app.inject({ method: 'GET', url: '/v1/events', headers: bearer(key.key) })).statusCode, 200);
    const revoked = await t.app.inject({
      method: 'DELETE',
      url: `/v1/tenants/${t.tenantIdB}/keys/${key.id}`,
      headers: admin(),
    });
    assert.equal(revoked.statusCode, 204);
    assertError(
      await t.app.inject({ method: 'GET', url: '/v1/events', headers: bearer(key.key) }),
      401,
      'unauthorized',
    );
    assertError(
      await t.app.inject({ method: 'DELETE', url: `/v1/tenants/${t.tenantIdB}/keys/${key.id}`, headers: admin() }),
      404,
      'not_found',
    );
    const after = (
      await t.app.inject({ method: 'GET', url: `/v1/tenants/${t.tenantIdB}/keys`, headers: admin() })
    ).json();
    assert.notEqual(after.keys.find((k: any) => k.id === key.id).revokedAt, null);
    // The tenant's other key still works.
    assert.equal(
      (await t.app.inject({ method: 'GET', url: '/v1/events', headers: bearer(t.tenantKeyB) })).statusCode,
      200,
    );
  });

  test('a key revoked elsewhere (another node) stops working once the cache entry ages out', async () => {
    const key = (
      await t.app.inject({ method: 'POST', url: `/v1/tenants/${t.tenantId}/keys`, headers: admin() })
    ).json();
    assert.equal((await t.app.inject({ method: 'GET', url: '/v1/events', headers: bearer(key.key) })).statusCode, 200);
    assert.equal(await t.store.apiKeyRevoke({ tenantId: t.tenantId, id: key.id, now: t.clock.now() }), true);
    assert.equal(
      (await t.app.inject({ method: 'GET', url: '/v1/events', headers: bearer(key.key) })).statusCode,
      200,
      'cached',
    );
    await t.clock.advance(KEY_CACHE_TTL_MS + 1);
    assertError(
      await t.app.inject({ method: 'GET', url: '/v1/events', headers: bearer(key.key) }),
      401,
      'unauthorized',
    );
  });

  test('404 for keys of a tenant that does not exist; a key is revoked only through its own tenant', async () => {
    assertError(
      await t.app.inject({ method: 'POST', url: '/v1/tenants/t_missing/keys', headers: admin() }),
      404,
      'not_found',
    );
    assertError(
      await t.app.inject({ method: 'GET', url: '/v1/tenants/t_missing/keys', headers: admin() }),
      404,
      'not_found',
    );
    const key = (
      await t.app.inject({ method: 'POST', url: `/v1/tenants/${t.tenantId}/keys`, headers: admin() })
    ).json();
    assertError(
      await t.app.inject({ method: 'DELETE', url: `/v1/tenants/${t.tenantIdB}/keys/${key.id}`, headers: admin() }),
      404,
      'not_found',
    );
    assert.equal((await t.app.inject({ method: 'GET', url: '/v1/events', headers: bearer(key.key) })).statusCode, 200);
  });
});

describe('operations', () => {
  test('healthz (with the version of package.json), readyz (200, then 503 with reasons)', async () => {
    const h = await t.app.inject({ method: 'GET', url: '/healthz' });
    assert.equal(h.statusCode, 200);
    assert.deepEqual(h.json(), { status: 'ok', version: PACKAGE_VERSION });
    assert.deepEqual((await t.app.inject({ method: 'GET', url: '/readyz' })).json(), { status: 'ready', reasons: [] });
    ready = { ok: false, reasons: ['store unreachable: boom'] };
    const r = await t.app.inject({ method: 'GET', url: '/readyz' });
    assert.equal(r.statusCode, 503);
    assert.deepEqual(r.json(), { status: 'not_ready', reasons: ['store unreachable: boom'] });
    ready = { ok: true, reasons: [] };
  });

  test('metrics: Prometheus text with per-state event counts from the latest background sample, and its age', async () => {
    const created = await t.app.inject({
      method: 'POST',
      url: '/v1/events',
      headers: bearer(t.tenantKey),
      payload: { destination: { url: 'https://x.example' }, delay: '1h' },
    });
    assert.equal(created.statusCode, 201);
    const before = await t.app.inject({ method: 'GET', url: '/metrics' });
    assert.doesNotMatch(
      before.body,
      /belfry_events\{state="scheduled"\} [1-9]/,
      'a scrape does not count: the sample predates the event',
    );
    await t.deps.counts.runOnce();
    await t.clock.advance(2_500);
    const m = await t.app.inject({ method: 'GET', url: '/metrics' });
    assert.equal(m.statusCode, 200);
    assert.match(String(m.headers['content-type']), /^text\/plain/);
    const counts = await countByState(t.store);
    assert.match(m.body, new RegExp(`belfry_events\\{state="scheduled"\\} ${counts.scheduled}\\n`));
    assert.match(m.body, /belfry_events_scheduled_total [1-9]/);
    assert.match(m.body, /\nbelfry_events_sample_age_seconds 2\.5\n/);
    assert.match(m.body, /\nbelfry_events_sample_duration_seconds 0\n/, 'the SimClock did not move during the count');
  });

  test('unknown routes answer 404 in the error shape', async () => {
    const res = await t.app.inject({ method: 'GET', url: '/v2/nothing?x=1' });
    assertError(res, 404, 'not_found');
    assertError(await t.app.inject({ method: 'PUT', url: '/v1/events' }), 404, 'not_found');
  });
});

describe('GET /openapi.json', () => {
  test('is an OpenAPI 3.1 document listing every route with its schemas', async () => {
    const res = await t.app.inject({ method: 'GET', url: '/openapi.json' });
    assert.equal(res.statusCode, 200);
    const doc = res.json();
    assert.equal(doc.openapi, '3.1.0');
    const expected: [string, string][] = [
      ['post', '/v1/events'],
      ['get', '/v1/events'],
      ['post', '/v1/events/batch'],
      ['get', '/v1/events/{id}'],
      ['patch', '/v1/events/{id}'],
      ['delete', '/v1/events/{id}'],
      ['get', '/v1/events/{id}/transitions'],
      ['post', '/v1/events/{id}/replay'],
      ['post', '/v1/events/bulk'],
      ['get', '/v1/bulk/{id}'],
      ['get', '/v1/forecast'],
      ['put', '/v1/destinations/{name}'],
      ['get', '/v1/destinations/{name}'],
      ['get', '/v1/destinations/{name}/health'],
      ['post', '/v1/destinations/{name}/claim'],
      ['post', '/v1/events/settle'],
      ['post', '/v1/events/{id}/ack'],
      ['post', '/v1/events/{id}/nack'],
      ['post', '/v1/events/{id}/extend'],
      ['delete', '/v1/destinations/{name}'],
      ['get', '/v1/destinations'],
      ['post', '/v1/tenants'],
      ['get', '/v1/tenants'],
      ['post', '/v1/tenants/{tenantId}/keys'],
      ['get', '/v1/tenants/{tenantId}/keys'],
      ['delete', '/v1/tenants/{tenantId}/keys/{keyId}'],
      ['post', '/v1/tenants/{tenantId}/keys/{keyId}/rotate'],
      ['get', '/v1/tenants/{tenantId}'],
      ['patch', '/v1/tenants/{tenantId}'],
      ['post', '/v1/destinations/{name}/rotate-secret'],
      ['post', '/v1/tenants/{tenantId}/signing-secret/rotate'],
      ['post', '/v1/signing-secret/rotate'],
      ['get', '/v1/limits'],
      ['get', '/v1/cluster'],
      ['post', '/v1/keys'],
      ['get', '/v1/keys'],
      ['delete', '/v1/keys/{keyId}'],
      ['post', '/v1/keys/{keyId}/rotate'],
      ['post', '/v1/schedules'],
      ['get', '/v1/schedules'],
      ['post', '/v1/schedules/preview'],
      ['get', '/v1/schedules/{id}'],
      ['patch', '/v1/schedules/{id}'],
      ['delete', '/v1/schedules/{id}'],
      ['post', '/v1/schedules/{id}/trigger'],
      ['put', '/v1/sources/{name}'],
      ['get', '/v1/sources'],
      ['get', '/v1/sources/{name}'],
      ['delete', '/v1/sources/{name}'],
      ['get', '/healthz'],
      ['get', '/readyz'],
      ['get', '/metrics'],
      ['get', '/openapi.json'],
    ];
    for (const [method, path] of expected)
      assert.ok(doc.paths[path]?.[method], `${method.toUpperCase()} ${path} is documented`);
    const documented = Object.entries(doc.paths).flatMap(([path, ops]) =>
      Object.keys(ops as object).map((m) => `${m} ${path}`),
    );
    assert.deepEqual(documented.sort(), expected.map(([m, p]) => `${m} ${p}`).sort(), 'and nothing else');

    const create = doc.paths['/v1/events'].post;
    const body = create.requestBody.content['application/json'].schema;
    assert.equal(body.additionalProperties, false);
    assert.ok(body.properties.fireAt && body.properties.delay && body.properties.destination);
    assert.ok(create.responses['201'] && create.responses['409']);
    assert.deepEqual(create.security, [{ bearer: [] }]);
    assert.equal(doc.components.securitySchemes.bearer.scheme, 'bearer');
    const list = doc.paths['/v1/events'].get;
    assert.ok(list.parameters.some((p: any) => p.in === 'query' && p.name === 'cursor'));
  });
});
