/** Conformance: Kafka sources: put (create, replace keeping counts, a per-tenant bound), get, lists, delete, reports (counts add up, errors bounded). */
import assert from 'node:assert/strict';
import { it } from 'node:test';
import { SOURCE_ERRORS_MAX, type SourceSpec } from '../sources.ts';
import { newTenant, SEC, T0, twoTenants, type SuiteContext } from './fixtures.ts';

function spec(o: Partial<SourceSpec> = {}): SourceSpec {
  return {
    kind: 'kafka',
    brokers: ['127.0.0.1:9092'],
    topic: 'requests',
    groupId: 'belfry',
    deadLetterTopic: 'rejects',
    start: 'earliest',
    sasl: { mechanism: 'plain', username: 'u', password: 'p' },
    ssl: false,
    ...o,
  };
}

export function sourceCases(ctx: SuiteContext): void {
  it('creates a source, replaces it (version + 1, counts kept), bounds a tenant and scopes reads to it', async () => {
    const store = ctx.store();
    const [a, b] = await twoTenants(store);
    const created = await store.sourcePut({ tenantId: a, name: 'orders', spec: spec(), perTenantMax: 2, now: T0 });
    assert.equal(created.kind, 'created');
    const expected = {
      tenantId: a,
      name: 'orders',
      version: 1,
      spec: spec(),
      state: 'starting',
      acceptedCount: 0,
      rejectedCount: 0,
      lastErrors: [],
      lag: {},
      createdAt: T0,
      updatedAt: T0,
    };
    assert.deepEqual(created.kind === 'created' && created.source, expected);
    assert.deepEqual(await store.sourceGet({ tenantId: a, name: 'orders' }), expected);
    assert.equal(await store.sourceGet({ tenantId: b, name: 'orders' }), null, 'another tenant sees nothing');
    assert.equal(
      await store.sourceReport({
        tenantId: a,
        name: 'orders',
        acceptedAdd: 3,
        rejectedAdd: 1,
        errors: [],
        state: 'running',
        now: T0 + SEC,
      }),
      true,
    );
    const replaced = await store.sourcePut({
      tenantId: a,
      name: 'orders',
      spec: spec({ topic: 'other' }),
      perTenantMax: 1,
      now: T0 + 2 * SEC,
    });
    assert.equal(replaced.kind, 'replaced', 'a replace is not refused by the bound');
    const got = await store.sourceGet({ tenantId: a, name: 'orders' });
    assert.deepEqual(
      [
        got?.version,
        got?.spec.topic,
        got?.acceptedCount,
        got?.rejectedCount,
        got?.state,
        got?.createdAt,
        got?.updatedAt,
      ],
      [2, 'other', 3, 1, 'starting', T0, T0 + 2 * SEC],
    );
    const same = await store.sourcePut({
      tenantId: a,
      name: 'orders',
      spec: spec({ topic: 'other' }),
      perTenantMax: 1,
      now: T0 + 3 * SEC,
    });
    assert.equal(same.kind === 'replaced' && same.source.version, 2, 'the same spec again changes nothing');
    assert.equal((await store.sourceGet({ tenantId: a, name: 'orders' }))?.updatedAt, T0 + 2 * SEC);
    assert.equal(
      (await store.sourcePut({ tenantId: a, name: 'billing', spec: spec(), perTenantMax: 2, now: T0 })).kind,
      'created',
    );
    assert.deepEqual(await store.sourcePut({ tenantId: a, name: 'third', spec: spec(), perTenantMax: 2, now: T0 }), {
      kind: 'limit',
    });
    assert.equal(await store.sourceGet({ tenantId: a, name: 'third' }), null);
    assert.equal(
      (await store.sourcePut({ tenantId: b, name: 'orders', spec: spec(), perTenantMax: 2, now: T0 })).kind,
      'created',
      'the bound is per tenant',
    );
    assert.deepEqual(
      (await store.sourceList({ tenantId: a, limit: 10 })).map((s) => s.name),
      ['billing', 'orders'],
    );
    assert.deepEqual(
      (await store.sourceList({ tenantId: a, afterName: 'billing', limit: 10 })).map((s) => s.name),
      ['orders'],
    );
    const all = await store.sourceListAll({ limit: 1000 });
    const mine = all.filter((s) => s.tenantId === a || s.tenantId === b).map((s) => `${s.tenantId}/${s.name}`);
    assert.deepEqual(mine, [`${a}/billing`, `${a}/orders`, `${b}/orders`]);
    const page = await store.sourceListAll({ after: { tenantId: a, name: 'billing' }, limit: 2 });
    assert.deepEqual(
      page.map((s) => `${s.tenantId}/${s.name}`),
      [`${a}/orders`, `${b}/orders`],
    );
  });

  it('adds reports of several writers up, keeps the newest errors only, and deletes', async () => {
    const store = ctx.store();
    const t = await newTenant(store);
    await store.sourcePut({ tenantId: t, name: 's', spec: spec(), perTenantMax: 10, now: T0 });
    await Promise.all(
      Array.from({ length: 8 }, (_, i) =>
        store.sourceReport({
          tenantId: t,
          name: 's',
          acceptedAdd: 2,
          rejectedAdd: 1,
          errors: [
            { at: T0 + i, message: `e${i}` },
            { at: T0 + i, message: `f${i}` },
          ],
          now: T0 + SEC,
        }),
      ),
    );
    const got = await store.sourceGet({ tenantId: t, name: 's' });
    assert.deepEqual([got?.acceptedCount, got?.rejectedCount, got?.lastErrors.length], [16, 8, SOURCE_ERRORS_MAX]);
    assert.equal(got?.state, 'starting', 'a report without a state keeps it');
    await store.sourceReport({
      tenantId: t,
      name: 's',
      acceptedAdd: 0,
      rejectedAdd: 0,
      errors: [{ at: T0 + 99, message: 'last' }],
      state: 'failing',
      now: T0 + 2 * SEC,
    });
    const after = await store.sourceGet({ tenantId: t, name: 's' });
    assert.deepEqual(after?.lastErrors.at(-1), { at: T0 + 99, message: 'last' });
    await store.sourceReport({
      tenantId: t,
      name: 's',
      acceptedAdd: 0,
      rejectedAdd: 0,
      errors: [],
      lag: { 0: 5, 1: 7 },
      now: T0 + 3 * SEC,
    });
    await store.sourceReport({
      tenantId: t,
      name: 's',
      acceptedAdd: 0,
      rejectedAdd: 0,
      errors: [],
      lag: { 1: 2 },
      now: T0 + 3 * SEC,
    });
    assert.deepEqual(
      (await store.sourceGet({ tenantId: t, name: 's' }))?.lag,
      { 0: 5, 1: 2 },
      'lag merges by partition',
    );
    assert.equal(after?.state, 'failing');
    assert.equal(await store.sourceDelete({ tenantId: t, name: 's' }), true);
    assert.equal(await store.sourceGet({ tenantId: t, name: 's' }), null);
    assert.equal(await store.sourceDelete({ tenantId: t, name: 's' }), false);
    assert.equal(
      await store.sourceReport({ tenantId: t, name: 's', acceptedAdd: 1, rejectedAdd: 0, errors: [], now: T0 }),
      false,
      'a report on a deleted source writes nothing',
    );
    assert.equal(await store.sourceGet({ tenantId: t, name: 's' }), null);
  });
}
