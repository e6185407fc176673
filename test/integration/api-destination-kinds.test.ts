/**
 * Destination kinds through the API: each broker kind registers with its typed target, shows it
 * back without credentials, is refused with a 400 naming the field when invalid or when a host
 * is private without --allow-hosts, and `kind` defaults to http.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { startTestNode, type TestNode } from '../support/node.ts';

const common = { headers: { 'x-team': 'checkout' }, timeout: '5s', maxConcurrency: 4 };
const BODIES: Record<string, Record<string, unknown>> = {
  kafka: {
    kind: 'kafka',
    brokers: ['127.0.0.1:9092'],
    topic: 'due-events',
    sasl: { mechanism: 'scram-sha-512', username: 'belfry', password: 'kafka-pw-77' },
    ...common,
  },
  // Credentials without TLS: allowed here explicitly (docs/channels.md, "Credentials and TLS").
  nats: {
    kind: 'nats',
    servers: ['nats://natsuser:nats-pw-77@127.0.0.1:4222'],
    subject: 'belfry.due',
    token: 'nats-token-77',
    allowInsecureCredentials: true,
    ...common,
  },
  amqp: {
    kind: 'amqp',
    url: 'amqp://guest:amqp-pw-77@127.0.0.1:5672',
    exchange: 'belfry',
    routingKey: 'due',
    allowInsecureCredentials: true,
    ...common,
  },
  redis: {
    kind: 'redis',
    url: 'redis://:redis-pw-77@127.0.0.1:6379/0',
    stream: 'belfry:due',
    maxLen: 1000000,
    allowInsecureCredentials: true,
    ...common,
  },
};

describe('destination kinds', () => {
  let t: TestNode;
  before(async () => {
    t = await startTestNode();
  });
  after(async () => {
    await t?.close();
  });

  it('registers each broker kind, shows its target back without any credential, and generates no signing secret', async () => {
    for (const [kind, body] of Object.entries(BODIES)) {
      const put = await t.api('PUT', `/v1/destinations/to-${kind}`, body);
      assert.equal(put.status, 201, `${kind}: ${JSON.stringify(put.body)}`);
      const got = await t.api('GET', `/v1/destinations/to-${kind}`);
      assert.equal(got.status, 200);
      assert.equal(got.body.kind, kind);
      assert.equal(got.body.secret, undefined, 'no signing secret for a broker');
      assert.deepEqual(got.body.headers, { 'x-team': 'checkout' });
      assert.equal(got.body.timeout, '5s');
      const text = JSON.stringify([put.body, got.body, (await t.api('GET', '/v1/destinations')).body]);
      assert.doesNotMatch(text, /-pw-77|token-77/, `${kind}: a credential was shown: ${text}`);
    }
    assert.deepEqual((await t.api('GET', '/v1/destinations/to-kafka')).body.sasl, {
      mechanism: 'scram-sha-512',
      username: 'belfry',
    });
    assert.equal((await t.api('GET', '/v1/destinations/to-amqp')).body.url, 'amqp://guest:***@127.0.0.1:5672');
    assert.equal((await t.api('GET', '/v1/destinations/to-redis')).body.url, 'redis://:***@127.0.0.1:6379/0');
    assert.deepEqual((await t.api('GET', '/v1/destinations/to-nats')).body.servers, [
      'nats://natsuser:***@127.0.0.1:4222',
    ]);
    const stored = await t.node.store.destinationGet({ tenantId: t.tenantId, name: 'to-amqp' });
    assert.equal(
      (stored!.config as { url: string }).url,
      'amqp://guest:amqp-pw-77@127.0.0.1:5672',
      'the credential is kept to connect with',
    );
  });

  it('defaults kind to http: a webhook, as before, with a generated secret', async () => {
    const put = await t.api('PUT', '/v1/destinations/plain', { url: 'https://orders.example.com/hooks' });
    assert.equal(put.status, 201);
    assert.equal(put.body.kind, 'http');
    assert.match(put.body.secret, /^whsec_/);
  });

  it('changes a webhook into a broker destination and back, signing again with a new secret', async () => {
    assert.equal((await t.api('PUT', '/v1/destinations/flip', { url: 'https://a.example.com/h' })).status, 201);
    const toRedis = await t.api('PUT', '/v1/destinations/flip', BODIES.redis);
    assert.equal(toRedis.status, 200);
    assert.deepEqual((await t.node.store.destinationGet({ tenantId: t.tenantId, name: 'flip' }))?.secrets, []);
    const back = await t.api('PUT', '/v1/destinations/flip', { url: 'https://a.example.com/h' });
    assert.equal(back.status, 200);
    assert.match(back.body.secret, /^whsec_/, 'a webhook is always signed');
  });

  const invalid: [string, Record<string, unknown>, string][] = [
    ['kafka without a topic', { kind: 'kafka', brokers: ['127.0.0.1:9092'] }, 'topic'],
    ['a kafka broker that is not host:port', { kind: 'kafka', brokers: ['127.0.0.1'], topic: 't' }, 'brokers.0'],
    ['a kafka topic with a space', { kind: 'kafka', brokers: ['127.0.0.1:9092'], topic: 'a b' }, 'topic'],
    [
      'an unknown SASL mechanism',
      {
        kind: 'kafka',
        brokers: ['127.0.0.1:9092'],
        topic: 't',
        sasl: { mechanism: 'gssapi', username: 'u', password: 'p' },
      },
      'sasl.mechanism',
    ],
    [
      'a nats server that is not a nats URL',
      { kind: 'nats', servers: ['http://127.0.0.1:4222'], subject: 's' },
      'servers.0',
    ],
    ['a nats subject with a wildcard', { kind: 'nats', servers: ['nats://127.0.0.1:4222'], subject: 'a.>' }, 'subject'],
    ['an amqp URL of another scheme', { kind: 'amqp', url: 'redis://127.0.0.1', exchange: 'x' }, 'url'],
    ['amqp without an exchange', { kind: 'amqp', url: 'amqp://127.0.0.1' }, 'exchange'],
    ['a redis maxLen of 0', { kind: 'redis', url: 'redis://127.0.0.1', stream: 's', maxLen: 0 }, 'maxLen'],
    [
      'a signing secret on a broker',
      { kind: 'redis', url: 'redis://127.0.0.1', stream: 's', secret: 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw' },
      'secret',
    ],
    [
      'a kafka broker given as an IPv6 literal',
      { kind: 'kafka', brokers: ['[2001:db8::1]:9092'], topic: 't' },
      'brokers.0',
    ],
    ['a url on kafka', { kind: 'kafka', brokers: ['127.0.0.1:9092'], topic: 't', url: 'https://x.example' }, 'url'],
  ];
  for (const [name, body, field] of invalid) {
    it(`400 for ${name}, naming ${field}, nothing written`, async () => {
      const res = await t.api('PUT', '/v1/destinations/invalid-kind', body);
      assert.equal(res.status, 400, JSON.stringify(res.body));
      assert.equal(res.body.error.details[0].field, field, JSON.stringify(res.body));
      assert.equal((await t.api('GET', '/v1/destinations/invalid-kind')).status, 404);
    });
  }
});

describe('destination kinds: the private-address guard at registration', () => {
  let t: TestNode;
  before(async () => {
    t = await startTestNode({ allowHosts: [] });
  });
  after(async () => {
    await t?.close();
  });

  const refused: [string, Record<string, unknown>, string][] = [
    [
      'a kafka broker on loopback',
      { kind: 'kafka', brokers: ['kafka.example.com:9092', '127.0.0.1:9092'], topic: 't' },
      'brokers.1',
    ],
    ['a kafka broker named localhost', { kind: 'kafka', brokers: ['localhost:9092'], topic: 't' }, 'brokers.0'],
    [
      'a nats server on a private network',
      { kind: 'nats', servers: ['nats://10.1.2.3:4222'], subject: 's' },
      'servers.0',
    ],
    ['an amqp broker on the metadata address', { kind: 'amqp', url: 'amqp://169.254.169.254', exchange: 'x' }, 'url'],
    ['a redis server on IPv6 loopback', { kind: 'redis', url: 'redis://[::1]:6379', stream: 's' }, 'url'],
  ];
  for (const [name, body, field] of refused) {
    it(`refuses ${name} (400 naming ${field}) unless --allow-hosts opens it`, async () => {
      const res = await t.api('PUT', '/v1/destinations/private', body);
      assert.equal(res.status, 400, JSON.stringify(res.body));
      assert.equal(res.body.error.details[0].field, field);
      assert.match(res.body.error.message, /not allowed/);
    });
  }

  it('accepts public broker hosts', async () => {
    const res = await t.api('PUT', '/v1/destinations/public', {
      kind: 'kafka',
      brokers: ['kafka.example.com:9092'],
      topic: 't',
    });
    assert.equal(res.status, 201, JSON.stringify(res.body));
  });
});

describe('destination kinds: signing secrets are for webhooks only', () => {
  let t: TestNode;
  before(async () => {
    t = await startTestNode();
  });
  after(async () => {
    await t?.close();
  });

  it('refuses to rotate the secret of a broker destination (400), and changes nothing', async () => {
    assert.equal((await t.api('PUT', '/v1/destinations/stream', BODIES.redis)).status, 201);
    const res = await t.api('POST', '/v1/destinations/stream/rotate-secret', {});
    assert.equal(res.status, 400, JSON.stringify(res.body));
    assert.match(res.body.error.message, /not signed/);
    assert.deepEqual((await t.node.store.destinationGet({ tenantId: t.tenantId, name: 'stream' }))?.secrets, []);
  });
});
