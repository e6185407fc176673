/**
 * Credentials through the API: a credential that would cross the network without TLS is refused
 * (400 naming the field, nothing written) unless the destination or source says
 * `allowInsecureCredentials: true`; TLS URLs and SCRAM need no opt-in; no response ever shows a
 * credential (a NATS user name given alone is a token, shown as ***); a webhook URL with
 * credentials is refused, inline or registered; a Kafka source's default consumer group is its
 * own (tenant and name), an explicit groupId winning.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { defaultSourceGroupId } from '../../src/sources/index.ts';
import { bearer, makeTestApp, type TestApp } from '../support/app.ts';

const SECRET = 'pw-7hx2-secret';

describe('credentials and TLS through the API', () => {
  let t: TestApp;
  before(async () => {
    t = await makeTestApp();
  });
  after(() => t.cleanup());

  async function call(method: 'GET' | 'PUT' | 'POST', url: string, payload?: unknown, key = t.tenantKey) {
    const res = await t.app.inject({
      method,
      url,
      headers: bearer(key),
      ...(payload === undefined ? {} : { payload: payload as object }),
    });
    return { status: res.statusCode, body: res.body ? res.json() : null, raw: res.body };
  }

  /** Every response of these routes, listed afterwards: none may carry a credential. */
  const shown: string[] = [];

  const PLAINTEXT: [string, Record<string, unknown>, string][] = [
    ['redis password', { kind: 'redis', url: `redis://:${SECRET}@127.0.0.1:6379`, stream: 's' }, 'url'],
    ['redis user and password', { kind: 'redis', url: `redis://belfry:${SECRET}@127.0.0.1:6379`, stream: 's' }, 'url'],
    ['amqp user and password', { kind: 'amqp', url: `amqp://belfry:${SECRET}@127.0.0.1:5672`, exchange: 'x' }, 'url'],
    [
      'nats user and password',
      { kind: 'nats', servers: [`nats://belfry:${SECRET}@127.0.0.1:4222`], subject: 's' },
      'servers.0',
    ],
    [
      'nats lone user name (a token)',
      { kind: 'nats', servers: ['nats://127.0.0.1:4222', `nats://${SECRET}@127.0.0.1:4223`], subject: 's' },
      'servers.1',
    ],
    ['nats token', { kind: 'nats', servers: ['nats://127.0.0.1:4222'], subject: 's', token: SECRET }, 'token'],
    [
      'kafka SASL PLAIN without ssl',
      {
        kind: 'kafka',
        brokers: ['127.0.0.1:9092'],
        topic: 't',
        sasl: { mechanism: 'plain', username: 'u', password: SECRET },
      },
      'sasl.mechanism',
    ],
  ];

  it('refuses a credential over plaintext with a 400 naming the field and the opt-in, and writes nothing', async () => {
    for (const [what, body, field] of PLAINTEXT) {
      const res = await call('PUT', '/v1/destinations/plain', body);
      shown.push(res.raw);
      assert.equal(res.status, 400, `${what}: ${res.raw}`);
      assert.equal(res.body.error.details[0].field, field, what);
      assert.match(res.body.error.message, /without TLS.*allowInsecureCredentials/, what);
      assert.equal((await call('GET', '/v1/destinations/plain')).status, 404, `${what}: nothing written`);
    }
  });

  it('accepts it with "allowInsecureCredentials": true, shows the opt-in back, and never the credential', async () => {
    for (const [what, body] of PLAINTEXT) {
      const put = await call('PUT', '/v1/destinations/opted-in', { ...body, allowInsecureCredentials: true });
      assert.ok(put.status === 201 || put.status === 200, `${what}: ${put.raw}`);
      assert.equal(put.body.allowInsecureCredentials, true, what);
      const got = await call('GET', '/v1/destinations/opted-in');
      assert.equal(got.body.allowInsecureCredentials, true, what);
      shown.push(put.raw, got.raw, (await call('GET', '/v1/destinations')).raw);
    }
    const nats = await call('PUT', '/v1/destinations/nats-token-url', {
      ...PLAINTEXT[4][1],
      allowInsecureCredentials: true,
    });
    assert.deepEqual(
      nats.body.servers,
      ['nats://127.0.0.1:4222', 'nats://***@127.0.0.1:4223'],
      'a lone user name is a token: hidden whole',
    );
    shown.push(nats.raw);
  });

  it('needs no opt-in over TLS (rediss, amqps, tls://, Kafka ssl), nor for SCRAM, and shows no credential', async () => {
    const bodies: Record<string, unknown>[] = [
      { kind: 'redis', url: `rediss://belfry:${SECRET}@127.0.0.1:6380`, stream: 's' },
      { kind: 'amqp', url: `amqps://belfry:${SECRET}@127.0.0.1:5671`, exchange: 'x' },
      {
        kind: 'nats',
        servers: [`tls://belfry:${SECRET}@127.0.0.1:4222`, 'tls://127.0.0.1:4223'],
        subject: 's',
        token: SECRET,
      },
      { kind: 'nats', servers: [`tls://${SECRET}@127.0.0.1:4222`], subject: 's' },
      {
        kind: 'kafka',
        brokers: ['127.0.0.1:9093'],
        topic: 't',
        ssl: true,
        sasl: { mechanism: 'plain', username: 'u', password: SECRET },
      },
      {
        kind: 'kafka',
        brokers: ['127.0.0.1:9092'],
        topic: 't',
        sasl: { mechanism: 'scram-sha-512', username: 'u', password: SECRET },
      },
    ];
    for (const body of bodies) {
      const put = await call('PUT', '/v1/destinations/tls', body);
      assert.ok(put.status === 201 || put.status === 200, put.raw);
      assert.equal(put.body.allowInsecureCredentials, undefined, 'no opt-in shown when not given');
      shown.push(put.raw, (await call('GET', '/v1/destinations/tls')).raw);
    }
    const tokenUrl = await call('PUT', '/v1/destinations/tls-token', bodies[3]);
    assert.deepEqual(tokenUrl.body.servers, ['tls://***@127.0.0.1:4222']);
    const passwordUrl = await call('PUT', '/v1/destinations/tls-user', bodies[0]);
    assert.equal(passwordUrl.body.url, 'rediss://belfry:***@127.0.0.1:6380');
    shown.push(tokenUrl.raw, passwordUrl.raw);
  });

  it('refuses NATS servers that mix tls:// and nats:// (TLS would hold for some only)', async () => {
    const res = await call('PUT', '/v1/destinations/mixed', {
      kind: 'nats',
      servers: ['tls://127.0.0.1:4222', 'nats://127.0.0.1:4223'],
      subject: 's',
    });
    assert.equal(res.status, 400, res.raw);
    assert.equal(res.body.error.details[0].field, 'servers.1');
  });

  it('refuses a webhook URL with credentials, registered or inline, and writes nothing', async () => {
    for (const url of [
      `https://user:${SECRET}@hooks.example.com/h`,
      `https://${SECRET}@hooks.example.com/h`,
      `http://user:@hooks.example.com/h`,
    ]) {
      const put = await call('PUT', '/v1/destinations/hook', { url });
      shown.push(put.raw);
      assert.equal(put.status, 400, put.raw);
      assert.equal(put.body.error.details[0].field, 'url');
      assert.match(put.body.error.message, /must not carry credentials/);
      const inline = await call('POST', '/v1/events', {
        id: 'inline-cred',
        delay: '1h',
        destination: { url },
        payload: {},
      });
      shown.push(inline.raw);
      assert.equal(inline.status, 400, inline.raw);
      assert.match(inline.body.error.message, /must not carry credentials/);
    }
    assert.equal((await call('GET', '/v1/destinations/hook')).status, 404);
    assert.equal((await call('GET', '/v1/events/inline-cred')).status, 404);
  });

  it('shows a webhook URL stored with credentials before they were refused with *** in their place', async () => {
    await t.store.destinationPut({
      destination: {
        tenantId: t.tenantId,
        name: 'legacy-hook',
        config: {
          kind: 'http',
          url: `https://user:${SECRET}@hooks.example.com/h`,
          headers: {},
          timeoutMs: 10_000,
          retry: null,
          rateLimitPerSecond: null,
          maxConcurrency: 20,
        },
        secrets: [],
        createdAt: t.clock.now(),
        updatedAt: t.clock.now(),
      },
    });
    const got = await call('GET', '/v1/destinations/legacy-hook');
    assert.equal(got.body.url, 'https://user:***@hooks.example.com/h');
    shown.push(got.raw, (await call('GET', '/v1/destinations')).raw);
  });

  it('sources: SASL PLAIN without ssl is refused unless opted in; with ssl or the opt-in it is kept, never shown', async () => {
    const body = {
      kind: 'kafka',
      brokers: ['127.0.0.1:9092'],
      topic: 'requests',
      sasl: { mechanism: 'plain', username: 'svc', password: SECRET },
    };
    const refused = await call('PUT', '/v1/sources/plain', body);
    shown.push(refused.raw);
    assert.equal(refused.status, 400, refused.raw);
    assert.equal(refused.body.error.details[0].field, 'sasl.mechanism');
    assert.match(refused.body.error.message, /allowInsecureCredentials/);
    assert.equal((await call('GET', '/v1/sources/plain')).status, 404);
    const opted = await call('PUT', '/v1/sources/plain', { ...body, allowInsecureCredentials: true });
    assert.equal(opted.status, 201, opted.raw);
    assert.equal(opted.body.allowInsecureCredentials, true);
    const tls = await call('PUT', '/v1/sources/tls', { ...body, ssl: true });
    assert.equal(tls.status, 201, tls.raw);
    assert.equal(tls.body.allowInsecureCredentials, undefined);
    shown.push(opted.raw, tls.raw, (await call('GET', '/v1/sources')).raw);
  });

  it("sources: the default consumer group is the source's own, the same on a replace; an explicit groupId wins", async () => {
    const body = { kind: 'kafka', brokers: ['127.0.0.1:9092'], topic: 'requests' };
    const a = await call('PUT', '/v1/sources/orders', body);
    const b = await call('PUT', '/v1/sources/orders', body, t.tenantKeyB);
    const other = await call('PUT', '/v1/sources/refunds', body);
    assert.equal(a.body.groupId, defaultSourceGroupId(t.tenantId, 'orders'));
    assert.equal(a.body.groupId, `belfry/${t.tenantId}/orders`);
    assert.equal(
      b.body.groupId,
      `belfry/${t.tenantIdB}/orders`,
      "another tenant's source of the same name has its own group",
    );
    assert.equal(other.body.groupId, `belfry/${t.tenantId}/refunds`);
    const replaced = await call('PUT', '/v1/sources/orders', { ...body, start: 'latest' });
    assert.equal(replaced.body.groupId, a.body.groupId, 'a replace keeps the group, and so its offsets');
    const named = await call('PUT', '/v1/sources/orders', { ...body, groupId: 'orders-readers' });
    assert.equal(named.body.groupId, 'orders-readers');
    const taken = await call('PUT', '/v1/sources/thief', { ...body, groupId: a.body.groupId });
    assert.equal(taken.status, 400, 'a derived group cannot be named by a body');
  });

  it('showed no credential in any response above', () => {
    assert.ok(shown.length > 40);
    for (const text of shown) assert.ok(!text.includes(SECRET), `a credential was shown: ${text}`);
  });
});
