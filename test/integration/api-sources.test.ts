/**
 * /v1/sources in process (app.inject) over each store: the contract (create, replace, get with
 * state, lag and counts, list, delete), the write-only SASL password, bad bodies (400 naming the
 * field, nothing written), the private-address guard on broker hosts, the per-tenant bound, and
 * tenant isolation.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { SOURCES_PER_TENANT_MAX } from '../../src/sources/index.ts';
import type { Store } from '../../src/store/store.ts';
import { bearer, makeTestApp, TEST_BACKENDS, type TestApp } from '../support/app.ts';

const BODY = {
  kind: 'kafka',
  brokers: ['127.0.0.1:9092'],
  topic: 'schedule-requests',
  groupId: 'belfry',
  deadLetterTopic: 'schedule-rejects',
};

for (const [backend, make] of TEST_BACKENDS) {
  describe(`/v1/sources (${backend})`, () => {
    let t: TestApp<Store>;
    before(async () => {
      t = await make();
    });
    after(() => t.cleanup());

    async function call(method: 'GET' | 'PUT' | 'DELETE', url: string, payload?: unknown, key = t.tenantKey) {
      const res = await t.app.inject({
        method,
        url,
        headers: bearer(key),
        ...(payload === undefined ? {} : { payload: payload as object }),
      });
      return { status: res.statusCode, body: res.body ? res.json() : null, raw: res.body };
    }

    it('creates (201), replaces (200, version + 1), gets, lists and deletes; the password is never shown', async () => {
      // SASL PLAIN without ssl: allowed here explicitly (refused otherwise: api-credentials.test.ts).
      const created = await call('PUT', '/v1/sources/orders-timeouts', {
        ...BODY,
        sasl: { mechanism: 'plain', username: 'svc', password: 'hunter2-secret' },
        allowInsecureCredentials: true,
      });
      assert.equal(created.status, 201, created.raw);
      assert.deepEqual(
        { ...created.body, createdAt: undefined, updatedAt: undefined },
        {
          name: 'orders-timeouts',
          kind: 'kafka',
          brokers: ['127.0.0.1:9092'],
          topic: 'schedule-requests',
          groupId: 'belfry',
          deadLetterTopic: 'schedule-rejects',
          start: 'earliest',
          ssl: false,
          sasl: { mechanism: 'plain', username: 'svc' },
          allowInsecureCredentials: true,
          version: 1,
          state: 'starting',
          lag: null,
          accepted: 0,
          rejected: 0,
          lastErrors: [],
          createdAt: undefined,
          updatedAt: undefined,
        },
      );
      assert.ok(!created.raw.includes('hunter2-secret'));
      const stored = await t.store.sourceGet({ tenantId: t.tenantId, name: 'orders-timeouts' });
      assert.equal(stored?.spec.sasl?.password, 'hunter2-secret', 'kept for the reader');

      await t.store.sourceReport({
        tenantId: t.tenantId,
        name: 'orders-timeouts',
        acceptedAdd: 5,
        rejectedAdd: 2,
        errors: [{ at: t.clock.now(), message: 'payload: bad' }],
        state: 'running',
        lag: { 0: 3, 1: 4 },
        now: t.clock.now(),
      });
      const got = await call('GET', '/v1/sources/orders-timeouts');
      assert.equal(got.status, 200);
      assert.deepEqual(
        [
          got.body.state,
          got.body.lag,
          got.body.accepted,
          got.body.rejected,
          got.body.lastErrors.map((e: { message: string }) => e.message),
        ],
        ['running', 7, 5, 2, ['payload: bad']],
      );
      assert.ok(!got.raw.includes('hunter2-secret'));

      const replaced = await call('PUT', '/v1/sources/orders-timeouts', { ...BODY, start: 'latest' });
      assert.equal(replaced.status, 200);
      assert.deepEqual(
        [replaced.body.version, replaced.body.start, replaced.body.sasl, replaced.body.accepted],
        [2, 'latest', null, 5],
      );

      await call('PUT', '/v1/sources/another', { kind: 'kafka', brokers: ['127.0.0.1:9092'], topic: 'more' });
      const list = await call('GET', '/v1/sources?limit=1');
      assert.deepEqual(
        [list.body.sources.map((s: { name: string }) => s.name), list.body.nextCursor],
        [['another'], 'another'],
      );
      const rest = await call('GET', '/v1/sources?cursor=another');
      assert.deepEqual(
        rest.body.sources.map((s: { name: string }) => s.name),
        ['orders-timeouts'],
      );
      assert.equal(rest.body.sources[0].groupId, 'belfry');

      assert.equal((await call('DELETE', '/v1/sources/another')).status, 200);
      assert.equal((await call('GET', '/v1/sources/another')).status, 404);
      assert.equal((await call('DELETE', '/v1/sources/another')).status, 404);
    });

    it('refuses bad bodies with a 400 naming the field, and writes nothing', async () => {
      const cases: [unknown, string][] = [
        [{ ...BODY, kind: 'nats' }, 'kind'],
        [{ ...BODY, brokers: [] }, 'brokers'],
        [{ ...BODY, brokers: ['no-port'] }, 'brokers.0'],
        [{ ...BODY, brokers: ['127.0.0.1:9092', '[::1]:9092'] }, 'brokers.1'],
        [{ ...BODY, topic: 'bad topic' }, 'topic'],
        [{ ...BODY, deadLetterTopic: '' }, 'deadLetterTopic'],
        [{ ...BODY, start: 'middle' }, 'start'],
        [{ ...BODY, groupId: 'a/b' }, 'groupId'],
        [{ ...BODY, sasl: { mechanism: 'plain', username: 'u' } }, 'sasl.password'],
        [{ ...BODY, extra: 1 }, 'extra'],
        [{ brokers: ['127.0.0.1:9092'], topic: 't' }, 'kind'],
      ];
      for (const [body, field] of cases) {
        const res = await call('PUT', '/v1/sources/bad', body);
        assert.equal(res.status, 400, `${JSON.stringify(body)}: ${res.raw}`);
        assert.ok(
          res.body.error.details.some((d: { field?: string }) => d.field === field),
          `${JSON.stringify(body)} names ${field}: ${res.raw}`,
        );
      }
      assert.equal((await call('PUT', '/v1/sources/bad%20name', BODY)).status, 400);
      assert.equal(await t.store.sourceGet({ tenantId: t.tenantId, name: 'bad' }), null);
    });

    it('guards broker hosts as destinations are guarded (--allow-hosts opens them)', async () => {
      for (const host of ['10.0.0.8:9092', '169.254.169.254:9092', '127.0.0.2:9092']) {
        const res = await call('PUT', '/v1/sources/private', { ...BODY, brokers: [host] });
        assert.equal(res.status, 400, `${host}: ${res.raw}`);
        assert.equal(res.body.error.details[0].field, 'brokers.0');
      }
      assert.equal(await t.store.sourceGet({ tenantId: t.tenantId, name: 'private' }), null);
    });

    it('keeps each tenant to its own sources', async () => {
      await call('PUT', '/v1/sources/mine', { ...BODY, topic: 'a-private-topic' });
      const asB = (m: 'GET' | 'DELETE', url: string) => call(m, url, undefined, t.tenantKeyB);
      assert.equal((await asB('GET', '/v1/sources/mine')).status, 404);
      assert.equal((await asB('DELETE', '/v1/sources/mine')).status, 404);
      assert.ok(!(await asB('GET', '/v1/sources')).raw.includes('a-private-topic'));
      const putB = await call('PUT', '/v1/sources/mine', { ...BODY, topic: 'b-topic' }, t.tenantKeyB);
      assert.equal(putB.status, 201, 'names are per tenant');
      assert.equal((await t.store.sourceGet({ tenantId: t.tenantId, name: 'mine' }))?.spec.topic, 'a-private-topic');
    });
  });
}

describe('/v1/sources: the per-tenant bound', () => {
  let t: TestApp;
  before(async () => {
    t = await makeTestApp();
  });
  after(() => t.cleanup());

  it(`refuses source ${SOURCES_PER_TENANT_MAX + 1} with 403 naming the limit; a replace still passes`, async () => {
    for (let i = 0; i < SOURCES_PER_TENANT_MAX; i++) {
      await t.store.sourcePut({
        tenantId: t.tenantId,
        name: `s${i}`,
        spec: {
          kind: 'kafka',
          brokers: ['127.0.0.1:9092'],
          topic: 't',
          groupId: 'g',
          deadLetterTopic: null,
          start: 'earliest',
          sasl: null,
          ssl: false,
        },
        perTenantMax: SOURCES_PER_TENANT_MAX,
        now: 0,
      });
    }
    const res = await t.app.inject({
      method: 'PUT',
      url: '/v1/sources/one-more',
      headers: bearer(t.tenantKey),
      payload: BODY,
    });
    assert.equal(res.statusCode, 403, res.body);
    assert.equal(res.json().error.details[0].limit, 'sourcesPerTenantMax');
    const again = await t.app.inject({
      method: 'PUT',
      url: '/v1/sources/s0',
      headers: bearer(t.tenantKey),
      payload: BODY,
    });
    assert.equal(again.statusCode, 200);
  });
});
