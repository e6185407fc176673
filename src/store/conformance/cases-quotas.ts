/** Conformance: what tenant limits and rotations need: settings updates, pending counts, key grace, secret expiry. */
import assert from 'node:assert/strict';
import { it } from 'node:test';
import type { EventRecord } from '../../core/event.ts';
import type { DestinationRecord } from '../store.ts';
import {
  archive,
  insertAll,
  mustClaim,
  mustRecord,
  newEvent,
  newTenant,
  outcome,
  SEC,
  T0,
  twoTenants,
  unique,
  type SuiteContext,
} from './fixtures.ts';

export function quotaCases(ctx: SuiteContext): void {
  it('replaces the settings of one tenant', async () => {
    const store = ctx.store();
    const [a, b] = await twoTenants(store);
    const settings = { durability: 'relaxed', limits: { payloadBytesMax: 1024, scheduleAheadMax: '30d' } };
    const updated = await store.tenantUpdate({ id: a, settings });
    assert.deepEqual(updated, { ...(await store.tenantGet({ id: a }))!, settings });
    assert.deepEqual((await store.tenantGet({ id: a }))?.settings, settings);
    assert.deepEqual((await store.tenantGet({ id: b }))?.settings, {}, 'another tenant is untouched');
    assert.deepEqual((await store.tenantUpdate({ id: a, settings: {} }))?.settings, {});
    assert.equal(await store.tenantUpdate({ id: unique('missing'), settings: { x: 1 } }), null);
  });

  it("counts a tenant's unfinished events: scheduled, executing, awaiting_retry", async () => {
    const store = ctx.store();
    const [a, b] = await twoTenants(store);
    assert.equal(await store.eventCountPending({ tenantId: a }), 0);
    const ids = ['s1', 's2', 'x', 'r', 'ok', 'ar', 'di', 'ca'];
    const evs = await insertAll(
      store,
      ids.map((id) => newEvent(a, id)),
    );
    await insertAll(
      store,
      ['b1', 'b2', 'b3'].map((id) => newEvent(b, id)),
    );
    const get = (id: string) => evs.find((e) => e.id === id) as EventRecord;
    await mustClaim(store, get('x'), T0 + 10 * SEC);
    const r = await mustClaim(store, get('r'), T0 + 10 * SEC);
    await mustRecord(store, outcome(r, 'awaiting_retry', { retryAt: T0 + 99 * SEC }), T0 + 11 * SEC);
    await mustRecord(store, outcome(await mustClaim(store, get('ok'), T0 + 10 * SEC), 'succeeded'), T0 + 11 * SEC);
    await archive(store, get('ar'), T0 + 10 * SEC);
    await archive(store, get('di'), T0 + 10 * SEC, 'discarded');
    await store.eventCancel({ tenantId: a, id: 'ca', now: T0 });
    assert.equal(await store.eventCountPending({ tenantId: a }), 4, 's1, s2, x (executing), r (awaiting_retry)');
    assert.equal(await store.eventCountPending({ tenantId: b }), 3);
    await store.eventReplay({ tenantId: a, id: 'ar', now: T0 + 20 * SEC });
    assert.equal(await store.eventCountPending({ tenantId: a }), 5, 'a replayed event is pending again');
  });

  it('revokes a key at a time still to come (a grace period), can bring it forward, never back', async () => {
    const store = ctx.store();
    const tenantId = await newTenant(store);
    const k = {
      id: unique('key'),
      tenantId,
      hash: `sha-${unique('h')}`,
      prefix: 'bk_x',
      createdAt: T0,
      revokedAt: null,
    };
    await store.apiKeyCreate(k);
    assert.equal(await store.apiKeyRevoke({ tenantId, id: k.id, now: T0, at: T0 + 3_600 * SEC }), true);
    assert.equal((await store.apiKeyFindByHash({ hash: k.hash }))?.revokedAt, T0 + 3_600 * SEC);
    assert.equal(
      await store.apiKeyRevoke({ tenantId, id: k.id, now: T0 + SEC, at: T0 + 7_200 * SEC }),
      true,
      'still live at now',
    );
    assert.equal(
      (await store.apiKeyFindByHash({ hash: k.hash }))?.revokedAt,
      T0 + 3_600 * SEC,
      'a later time does not extend it',
    );
    assert.equal(await store.apiKeyRevoke({ tenantId, id: k.id, now: T0 + 2 * SEC }), true, 'ends the grace at once');
    assert.equal((await store.apiKeyFindByHash({ hash: k.hash }))?.revokedAt, T0 + 2 * SEC);
    assert.equal(await store.apiKeyRevoke({ tenantId, id: k.id, now: T0 + 3 * SEC }), false, 'revoked by now');
  });

  it('keeps the expiry of each destination secret', async () => {
    const store = ctx.store();
    const tenantId = await newTenant(store);
    const d: DestinationRecord = {
      tenantId,
      name: 'rotated',
      config: {
        kind: 'http',
        url: 'https://example.com/r',
        headers: {},
        timeoutMs: 10_000,
        retry: null,
        rateLimitPerSecond: null,
        maxConcurrency: 20,
      },
      secrets: [
        { secret: 'whsec_bmV3bmV3bmV3bmV3bmV3bmV3bmV3bmV3bmV3', expiresAt: null },
        { secret: 'whsec_b2xkb2xkb2xkb2xkb2xkb2xkb2xkb2xkb2xk', expiresAt: T0 + 86_400 * SEC },
      ],
      createdAt: T0,
      updatedAt: T0,
    };
    await store.destinationPut({ destination: d });
    assert.deepEqual((await store.destinationGet({ tenantId, name: 'rotated' }))?.secrets, d.secrets);
    assert.deepEqual((await store.destinationList({ tenantId }))[0].secrets, d.secrets);
  });
}
