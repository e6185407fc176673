/** Conformance: store basics, tenants, API keys and destinations. */
import assert from 'node:assert/strict';
import { it } from 'node:test';
import type { ApiKeyRecord, DestinationConfig, DestinationRecord, DueRef, NewEvent, Store } from '../store.ts';
import {
  insertAll,
  newEvent,
  newTenant,
  SEC,
  T0,
  twoTenants,
  unique,
  withFreshStore,
  type SuiteContext,
} from './fixtures.ts';

/** Bound on a wake-up's trip between two handles (PostgreSQL: a NOTIFY, milliseconds). */
const WAKEUP_MS_MAX = 5_000;

/** A ref announced through one handle reaches a subscriber of the other. */
async function checkWakeupHeard(from: Store, to: Store): Promise<void> {
  const ref: DueRef = {
    tenantId: unique('t'),
    id: unique('wake'),
    version: 1,
    dueAt: T0,
    shard: 0,
    group: null,
    queue: 'name:orders',
  };
  let heard!: (refs: DueRef[]) => void;
  const got = new Promise<DueRef[]>((resolve) => (heard = resolve));
  const sub = await to.dueWakeups!.subscribe(
    (refs) => {
      if (refs.some((r) => r.id === ref.id)) heard(refs);
    },
    () => {},
  );
  let timer: NodeJS.Timeout | undefined;
  try {
    await from.dueWakeups!.announce([ref]);
    const deadline = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`no wake-up heard within ${WAKEUP_MS_MAX} ms`)), WAKEUP_MS_MAX);
    });
    assert.deepEqual(
      (await Promise.race([got, deadline])).filter((r) => r.id === ref.id),
      [ref],
    );
  } finally {
    clearTimeout(timer);
    await sub.close();
  }
}

/** Two handles claiming the same due events at once, in opposite orders: both answer, each event is claimed once. */
async function checkClaimsSplit(a: Store, b: Store): Promise<void> {
  const tenantId = await newTenant(a);
  const events: NewEvent[] = Array.from({ length: 200 }, (_, i) => newEvent(tenantId, `race-${i}`, { shard: i % 8 }));
  const refs = (await insertAll(a, events)).map((e) => ({ tenantId, id: e.id, version: e.version }));
  const now = T0 + 20 * SEC;
  const claim = (s: Store, owner: string, order: typeof refs) =>
    Promise.all(
      [0, 50, 100, 150].map((i) =>
        s.eventClaim({ refs: order.slice(i, i + 50), now, owner, leaseUntil: now + 60 * SEC }),
      ),
    ).then((b) => b.flat());
  const [byA, byB] = await Promise.all([claim(a, 'node-a', refs), claim(b, 'node-b', [...refs].reverse())]);
  const idsA = new Set(byA.map((e) => e.id));
  assert.deepEqual(
    byB.filter((e) => idsA.has(e.id)).map((e) => e.id),
    [],
    'no event claimed by both',
  );
  assert.equal(byA.length + byB.length, refs.length, 'every event claimed once');
}

export function basicsCases(ctx: SuiteContext): void {
  it('answers ping', async () => {
    await ctx.store().ping();
  });

  // Each capability is checked by what it promises, on a second handle of the same data (a second
  // node), not by restating its value: the node decides on them (multiNode runs the cluster roles,
  // Store.dueWakeups the announcements between nodes).
  it('holds what it names: multiNode (claims split between nodes), dueWakeups', async (t) => {
    await withFreshStore(ctx.make, async (store, h) => {
      const caps = store.capabilities;
      assert.deepEqual(
        Object.keys(caps).filter((k) => k !== 'readAheadPollMs' && k !== 'claimsInFlight'),
        ['multiNode'],
      );
      if (caps.readAheadPollMs !== undefined)
        assert.ok(
          Number.isInteger(caps.readAheadPollMs) && caps.readAheadPollMs > 0,
          `readAheadPollMs is a number of ms: ${caps.readAheadPollMs}`,
        );
      if (caps.claimsInFlight !== undefined)
        assert.ok(
          Number.isInteger(caps.claimsInFlight) && caps.claimsInFlight >= 1 && caps.claimsInFlight <= 64,
          `claimsInFlight is a count of claims: ${caps.claimsInFlight}`,
        );
      if (!h.reopen) return t.skip('the backend gave no reopen(): a second handle of its data cannot be opened');
      const second = await h.reopen().then(
        (s) => s,
        (err: Error) => err,
      );
      if (!caps.multiNode) {
        assert.ok(second instanceof Error, 'a single-node store refuses a second handle of its data while open');
        assert.equal(store.dueWakeups, undefined, 'a single-node store has no other node to wake');
        return;
      }
      assert.ok(!(second instanceof Error), `a multi-node store opens its data again while open: ${String(second)}`);
      try {
        if (store.dueWakeups) await checkWakeupHeard(store, second);
        await checkClaimsSplit(store, second);
      } finally {
        await second.close();
      }
    });
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
    await store.tenantCreate({
      id,
      name: 'Acme',
      settings: { durability: 'relaxed', limits: { perSecond: 5 } },
      createdAt: T0,
    });
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

  it("keeps a tenant's signing secrets apart from its record, and swaps them only from what they were", async () => {
    const store = ctx.store();
    const [a, b] = await twoTenants(store);
    const first = [{ secret: 'whsec_Zmlyc3Q=', expiresAt: null }];
    const id = unique('t');
    await store.tenantCreate({ id, name: 'signed', settings: {}, createdAt: T0, signingSecrets: first });
    assert.deepEqual(await store.tenantSecretsGet({ id }), first);
    assert.deepEqual(
      await store.tenantGet({ id }),
      { id, name: 'signed', settings: {}, createdAt: T0 },
      'the record carries no secret',
    );
    assert.ok(!JSON.stringify(await store.tenantList()).includes('whsec_'), 'nor does the list');
    assert.deepEqual(await store.tenantSecretsGet({ id: a }), [], 'a tenant made without secrets has none');
    assert.equal(await store.tenantSecretsGet({ id: unique('missing') }), null);

    const rotated = [
      { secret: 'whsec_bmV3', expiresAt: null },
      { secret: 'whsec_Zmlyc3Q=', expiresAt: T0 + 60_000 },
    ];
    assert.equal(await store.tenantSecretsSwap({ id, expected: [], secrets: rotated }), false, 'not from a stale view');
    assert.equal(await store.tenantSecretsSwap({ id, expected: first, secrets: rotated }), true);
    assert.deepEqual(await store.tenantSecretsGet({ id }), rotated);
    assert.equal(
      await store.tenantSecretsSwap({ id, expected: first, secrets: [] }),
      false,
      'the second of two swaps from one view loses',
    );

    assert.equal(
      await store.tenantSecretsSwap({ id: a, expected: [], secrets: first }),
      true,
      'a first secret, lazily',
    );
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

    assert.equal(
      await store.apiKeyRevoke({ tenantId: b, id: a1.id, now: T0 }),
      false,
      'tenant b cannot revoke a key of a',
    );
    assert.equal((await store.apiKeyFindByHash({ hash: a1.hash }))?.revokedAt, null);
    assert.equal(await store.apiKeyRevoke({ tenantId: a, id: a1.id, now: T0 + 9 }), true);
    assert.equal(await store.apiKeyRevoke({ tenantId: a, id: a1.id, now: T0 + 10 }), false, 'already revoked');
    assert.equal(await store.apiKeyRevoke({ tenantId: a, id: 'no-such-key', now: T0 }), false);
    const after = await store.apiKeyList({ tenantId: a });
    assert.equal(after.find((k) => k.id === a1.id)?.revokedAt, T0 + 9, 'a revoke keeps its first time');
    assert.equal(after.find((k) => k.id === a2.id)?.revokedAt, null);
    assert.deepEqual(
      (await store.apiKeyList({ tenantId: b })).map((k) => k.id),
      [b1.id],
    );
  });

  it('puts, replaces, gets, lists and deletes destinations', async () => {
    const store = ctx.store();
    const tenantId = await newTenant(store);
    const d = destination(tenantId, 'orders');
    assert.deepEqual(await store.destinationPut({ destination: d }), { created: true, destination: d });
    assert.deepEqual(await store.destinationGet({ tenantId, name: 'orders' }), d);

    const replaced = destination(tenantId, 'orders', {
      config: {
        ...d.config,
        url: 'https://example.com/v2',
        rateLimitPerSecond: null,
        retry: null,
      } as DestinationConfig,
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
    assert.deepEqual(
      (await store.destinationList({ tenantId })).map((x) => x.name),
      ['billing'],
    );
  });

  it('stores every destination kind with its typed target, credentials included', async () => {
    const store = ctx.store();
    const tenantId = await newTenant(store);
    const common = {
      headers: { 'x-team': 'checkout' },
      timeoutMs: 5_000,
      retry: null,
      rateLimitPerSecond: null,
      maxConcurrency: 4,
    };
    const configs: DestinationConfig[] = [
      {
        kind: 'kafka',
        brokers: ['10.0.0.1:9092', 'kafka-2.example.com:9092'],
        topic: 'due-events',
        sasl: { mechanism: 'scram-sha-512', username: 'belfry', password: 'pw-k' },
        ssl: true,
        ...common,
      },
      { kind: 'nats', servers: ['nats://u:pw-n@nats.example.com:4222'], subject: 'belfry.due', token: null, ...common },
      {
        kind: 'amqp',
        url: 'amqp://guest:pw-a@rabbit.example.com:5672/%2F',
        exchange: 'belfry',
        routingKey: 'due',
        ...common,
      },
      {
        kind: 'redis',
        url: 'redis://:pw-r@redis.example.com:6379/2',
        stream: 'belfry:due',
        maxLen: 1_000_000,
        ...common,
      },
    ];
    for (const config of configs) {
      const d = destination(tenantId, `d-${config.kind}`, { config, secrets: [] });
      await store.destinationPut({ destination: d });
      assert.deepEqual(
        await store.destinationGet({ tenantId, name: d.name }),
        d,
        `${config.kind} reads back as written`,
      );
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
    assert.equal(
      ((await store.destinationGet({ tenantId: b, name: 'hooks' }))?.config as { url?: string } | undefined)?.url,
      'https://b.example.com',
    );
  });
}
