/** Conformance: store basics, tenants, API keys and destinations. */
import assert from 'node:assert/strict';
import { it } from 'node:test';
import type { ApiKeyRecord, DestinationConfig, DestinationRecord } from '../store.ts';
import { newTenant, T0, twoTenants, unique, type SuiteContext } from './fixtures.ts';

export function basicsCases(ctx: SuiteContext): void {
  it('answers ping', async () => {
    await ctx.store().ping();
  });

  it('names its capabilities as booleans', () => {
    const caps = ctx.store().capabilities;
    assert.equal(typeof caps.skipLocked, 'boolean');
    assert.equal(typeof caps.multiNode, 'boolean');
    assert.equal(typeof caps.dueWakeups, 'boolean');
    assert.equal(caps.dueWakeups, ctx.store().dueWakeups !== undefined, 'dueWakeups is there exactly when the capability says so');
  });

  it('migrates again without harm', async () => {
    const store = ctx.store();
    const tenantId = await newTenant(store);
    await store.migrate();
    await store.migrate();
    assert.equal((await store.tenantGet({ id: tenantId }))?.id, tenantId);
  });
}

function key(tenantId: string, o: Partial<ApiKeyRecord> = {}): ApiKeyRecord {
  const id = unique('key');
  return { id, tenantId, hash: `sha-${id}`, prefix: `bk_${id}`, createdAt: T0, revokedAt: null, ...o };
}

function destination(tenantId: string, name: string, o: Partial<DestinationRecord> = {}): DestinationRecord {
  return {
    tenantId,
    name,
    config: {
      kind: 'http',
      url: `https://example.com/${name}`,
      headers: { 'x-team': 'checkout' },
      timeoutMs: 10_000,
      retry: { maxAttempts: 5, minBackoffMs: 1_000, maxBackoffMs: 60_000, coefficient: 2 },
      rateLimitPerSecond: 200,
      maxConcurrency: 20,
    },
    secrets: [{ secret: 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw', expiresAt: null }],
    createdAt: T0,
    updatedAt: T0,
    ...o,
  };
}

export function tenantKeyDestinationCases(ctx: SuiteContext): void {
  it('creates, gets and lists tenants', async () => {
    const store = ctx.store();
    const id = unique('t');
    await store.tenantCreate({ id, name: 'Acme', settings: { durability: 'relaxed', limits: { perSecond: 5 } }, createdAt: T0 });
    assert.deepEqual(await store.tenantGet({ id }), {
      id,
      name: 'Acme',
      settings: { durability: 'relaxed', limits: { perSecond: 5 } },
      createdAt: T0,
    });
    assert.equal(await store.tenantGet({ id: unique('missing') }), null);
    assert.ok((await store.tenantList()).some((t) => t.id === id));
  });

  it('refuses a second tenant with the same id', async () => {
    const store = ctx.store();
    const id = await newTenant(store);
    await assert.rejects(store.tenantCreate({ id, name: 'again', settings: {}, createdAt: T0 }));
    assert.equal((await store.tenantGet({ id }))?.name, 'tenant');
  });

  it('keeps a tenant\'s signing secrets apart from its record, and swaps them only from what they were', async () => {
    const store = ctx.store();
    const [a, b] = await twoTenants(store);
    const first = [{ secret: 'whsec_Zmlyc3Q=', expiresAt: null }];
    const id = unique('t');
    await store.tenantCreate({ id, name: 'signed', settings: {}, createdAt: T0, signingSecrets: first });
    assert.deepEqual(await store.tenantSecretsGet({ id }), first);
    assert.deepEqual(await store.tenantGet({ id }), { id, name: 'signed', settings: {}, createdAt: T0 }, 'the record carries no secret');
    assert.ok(!JSON.stringify(await store.tenantList()).includes('whsec_'), 'nor does the list');
    assert.deepEqual(await store.tenantSecretsGet({ id: a }), [], 'a tenant made without secrets has none');
    assert.equal(await store.tenantSecretsGet({ id: unique('missing') }), null);

    const rotated = [{ secret: 'whsec_bmV3', expiresAt: null }, { secret: 'whsec_Zmlyc3Q=', expiresAt: T0 + 60_000 }];
    assert.equal(await store.tenantSecretsSwap({ id, expected: [], secrets: rotated }), false, 'not from a stale view');
    assert.equal(await store.tenantSecretsSwap({ id, expected: first, secrets: rotated }), true);
    assert.deepEqual(await store.tenantSecretsGet({ id }), rotated);
    assert.equal(await store.tenantSecretsSwap({ id, expected: first, secrets: [] }), false, 'the second of two swaps from one view loses');

    assert.equal(await store.tenantSecretsSwap({ id: a, expected: [], secrets: first }), true, 'a first secret, lazily');
    assert.deepEqual(await store.tenantSecretsGet({ id: b }), [], 'another tenant is untouched');
    assert.equal(await store.tenantSecretsSwap({ id: unique('missing'), expected: [], secrets: first }), false);
  });

  it('finds a key by hash, revoked or not', async () => {
    const store = ctx.store();
    const tenantId = await newTenant(store);
    const k = key(tenantId);
    await store.apiKeyCreate(k);
    assert.deepEqual(await store.apiKeyFindByHash({ hash: k.hash }), k);
    assert.equal(await store.apiKeyFindByHash({ hash: 'sha-nobody' }), null);
    assert.equal(await store.apiKeyRevoke({ tenantId, id: k.id, now: T0 + 5 }), true);
    assert.deepEqual(await store.apiKeyFindByHash({ hash: k.hash }), { ...k, revokedAt: T0 + 5 });
  });

  it('refuses two keys with the same hash', async () => {
    const store = ctx.store();
    const tenantId = await newTenant(store);
    const k = key(tenantId);
    await store.apiKeyCreate(k);
    await assert.rejects(store.apiKeyCreate(key(tenantId, { hash: k.hash })));
  });

  it('lists and revokes keys of one tenant only', async () => {
    const store = ctx.store();
    const [a, b] = await twoTenants(store);
    const a1 = key(a);
    const a2 = key(a, { createdAt: T0 + 1 });
    const b1 = key(b);
    for (const k of [a1, a2, b1]) await store.apiKeyCreate(k);
    const listed = await store.apiKeyList({ tenantId: a });
    assert.deepEqual(listed.map((k) => k.id).sort(), [a1.id, a2.id].sort());

    assert.equal(await store.apiKeyRevoke({ tenantId: b, id: a1.id, now: T0 }), false, 'tenant b cannot revoke a key of a');
    assert.equal((await store.apiKeyFindByHash({ hash: a1.hash }))?.revokedAt, null);
    assert.equal(await store.apiKeyRevoke({ tenantId: a, id: a1.id, now: T0 + 9 }), true);
    assert.equal(await store.apiKeyRevoke({ tenantId: a, id: a1.id, now: T0 + 10 }), false, 'already revoked');
    assert.equal(await store.apiKeyRevoke({ tenantId: a, id: 'no-such-key', now: T0 }), false);
    const after = await store.apiKeyList({ tenantId: a });
    assert.equal(after.find((k) => k.id === a1.id)?.revokedAt, T0 + 9, 'a revoke keeps its first time');
    assert.equal(after.find((k) => k.id === a2.id)?.revokedAt, null);
    assert.deepEqual((await store.apiKeyList({ tenantId: b })).map((k) => k.id), [b1.id]);
  });

  it('puts, replaces, gets, lists and deletes destinations', async () => {
    const store = ctx.store();
    const tenantId = await newTenant(store);
    const d = destination(tenantId, 'orders');
    assert.deepEqual(await store.destinationPut({ destination: d }), { created: true, destination: d });
    assert.deepEqual(await store.destinationGet({ tenantId, name: 'orders' }), d);

    const replaced = destination(tenantId, 'orders', {
      config: { ...d.config, url: 'https://example.com/v2', rateLimitPerSecond: null, retry: null } as DestinationConfig,
      secrets: [
        { secret: 'whsec_bmV3', expiresAt: null },
        { secret: 'whsec_b2xk', expiresAt: T0 + 60 * 60_000 },
      ],
      createdAt: T0 + 50,
      updatedAt: T0 + 50,
    });
    const put2 = await store.destinationPut({ destination: replaced });
    assert.equal(put2.created, false);
    const expected = { ...replaced, createdAt: T0 };
    assert.deepEqual(put2.destination, expected, 'a replace keeps the creation time');
    assert.deepEqual(await store.destinationGet({ tenantId, name: 'orders' }), expected);

    await store.destinationPut({ destination: destination(tenantId, 'billing') });
    assert.deepEqual((await store.destinationList({ tenantId })).map((x) => x.name).sort(), ['billing', 'orders']);
    assert.equal(await store.destinationDelete({ tenantId, name: 'orders' }), true);
    assert.equal(await store.destinationDelete({ tenantId, name: 'orders' }), false);
    assert.equal(await store.destinationGet({ tenantId, name: 'orders' }), null);
    assert.deepEqual((await store.destinationList({ tenantId })).map((x) => x.name), ['billing']);
  });

  it('stores every destination kind with its typed target, credentials included', async () => {
    const store = ctx.store();
    const tenantId = await newTenant(store);
    const common = { headers: { 'x-team': 'checkout' }, timeoutMs: 5_000, retry: null, rateLimitPerSecond: null, maxConcurrency: 4 };
    const configs: DestinationConfig[] = [
      { kind: 'kafka', brokers: ['10.0.0.1:9092', 'kafka-2.example.com:9092'], topic: 'due-events', sasl: { mechanism: 'scram-sha-512', username: 'belfry', password: 'pw-k' }, ssl: true, ...common },
      { kind: 'nats', servers: ['nats://u:pw-n@nats.example.com:4222'], subject: 'belfry.due', token: null, ...common },
      { kind: 'amqp', url: 'amqp://guest:pw-a@rabbit.example.com:5672/%2F', exchange: 'belfry', routingKey: 'due', ...common },
      { kind: 'redis', url: 'redis://:pw-r@redis.example.com:6379/2', stream: 'belfry:due', maxLen: 1_000_000, ...common },
    ];
    for (const config of configs) {
      const d = destination(tenantId, `d-${config.kind}`, { config, secrets: [] });
      await store.destinationPut({ destination: d });
      assert.deepEqual(await store.destinationGet({ tenantId, name: d.name }), d, `${config.kind} reads back as written`);
    }
    const kinds = (await store.destinationList({ tenantId })).map((x) => x.config.kind).sort();
    assert.deepEqual(kinds, ['amqp', 'kafka', 'nats', 'redis']);
  });

  it('keeps destinations apart per tenant', async () => {
    const store = ctx.store();
    const [a, b] = await twoTenants(store);
    const da = destination(a, 'hooks');
    await store.destinationPut({ destination: da });
    assert.equal(await store.destinationGet({ tenantId: b, name: 'hooks' }), null);
    assert.deepEqual(await store.destinationList({ tenantId: b }), []);
    assert.equal(await store.destinationDelete({ tenantId: b, name: 'hooks' }), false);

    const db = destination(b, 'hooks', { config: { ...da.config, url: 'https://b.example.com' } as DestinationConfig });
    assert.equal((await store.destinationPut({ destination: db })).created, true, 'same name in another tenant is new');
    assert.deepEqual(await store.destinationGet({ tenantId: a, name: 'hooks' }), da);
    assert.equal(((await store.destinationGet({ tenantId: b, name: 'hooks' }))?.config as { url?: string } | undefined)?.url, 'https://b.example.com');
  });
}
