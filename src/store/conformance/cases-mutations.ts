/** Conformance: the user's changes to an event — eventCancel, eventUpdate, eventReplay. */
import assert from 'node:assert/strict';
import { it } from 'node:test';
import { EVENT_CHANGES_MAX, type EventMutateResult } from '../store.ts';
import {
  archive,
  insertOne,
  mustClaim,
  mustGet,
  mustRecord,
  newEvent,
  newTenant,
  outcome,
  SEC,
  T0,
  twoTenants,
  type SuiteContext,
} from './fixtures.ts';

function okEvent(r: EventMutateResult) {
  assert.equal(r.kind, 'ok');
  return r.event;
}

export function cancelCases(ctx: SuiteContext): void {
  it('cancels a scheduled event with one state transition', async () => {
    const store = ctx.store();
    const tenantId = await newTenant(store);
    const e = await insertOne(store, newEvent(tenantId, 'c'));
    const canceled = okEvent(await store.eventCancel({ tenantId, id: 'c', expectedVersion: 1, now: T0 + 5 }));
    assert.deepEqual(canceled, { ...e, state: 'canceled', version: 2, updatedAt: T0 + 5 });
    assert.deepEqual(await mustGet(store, tenantId, 'c'), canceled);
    const trace = await store.transitionList({ tenantId, eventId: 'c', limit: 10 });
    assert.deepEqual(
      trace.map((t) => [t.seq, t.kind, t.fromState, t.toState, t.at]),
      [
        [1, 'created', null, 'scheduled', T0],
        [2, 'state', 'scheduled', 'canceled', T0 + 5],
      ],
    );
  });

  it("bounds an event's changes: edits past EVENT_CHANGES_MAX are refused and change nothing, a cancel still applies", async () => {
    const store = ctx.store();
    const tenantId = await newTenant(store);
    await insertOne(store, newEvent(tenantId, 'busy'));
    for (let v = 1; v < EVENT_CHANGES_MAX; v++) {
      const r = await store.eventUpdate({
        tenantId,
        id: 'busy',
        now: T0 + v,
        patch: { fireAt: T0 + 60 * SEC + (v % 2) },
      });
      assert.equal(r.kind, 'ok', `edit ${v}`);
    }
    const full = await mustGet(store, tenantId, 'busy');
    assert.equal(full.version, EVENT_CHANGES_MAX);
    const refused = await store.eventUpdate({
      tenantId,
      id: 'busy',
      now: T0 + 5 * SEC,
      patch: { fireAt: T0 + 90 * SEC },
    });
    assert.equal(refused.kind, 'changes_exhausted');
    assert.deepEqual(await mustGet(store, tenantId, 'busy'), full, 'the refused edit changed nothing');
    const canceled = okEvent(await store.eventCancel({ tenantId, id: 'busy', now: T0 + 6 * SEC }));
    assert.equal(canceled.version, EVENT_CHANGES_MAX + 1);
  });

  it('cancels an event awaiting a retry', async () => {
    const store = ctx.store();
    const tenantId = await newTenant(store);
    const running = await mustClaim(store, await insertOne(store, newEvent(tenantId, 'w')), T0 + 10 * SEC);
    await mustRecord(store, outcome(running, 'awaiting_retry', { retryAt: T0 + 60 * SEC }), T0 + 11 * SEC);
    const canceled = okEvent(await store.eventCancel({ tenantId, id: 'w', now: T0 + 12 * SEC }));
    assert.equal(canceled.state, 'canceled');
    const last = (await store.transitionList({ tenantId, eventId: 'w', limit: 10 })).at(-1);
    assert.deepEqual([last?.fromState, last?.toState], ['awaiting_retry', 'canceled']);
  });

  it('answers wrong_state with the state already reached', async () => {
    const store = ctx.store();
    const tenantId = await newTenant(store);
    const running = await mustClaim(store, await insertOne(store, newEvent(tenantId, 'run')), T0 + 10 * SEC);
    const r1 = await store.eventCancel({ tenantId, id: 'run', now: T0 + 11 * SEC });
    assert.equal(r1.kind, 'wrong_state');
    assert.deepEqual(r1.kind === 'wrong_state' && r1.event, running);

    await mustRecord(store, outcome(running, 'succeeded', { status: 200 }), T0 + 12 * SEC);
    const r2 = await store.eventCancel({ tenantId, id: 'run', now: T0 + 13 * SEC });
    assert.equal(r2.kind === 'wrong_state' && r2.event.state, 'succeeded');

    await insertOne(store, newEvent(tenantId, 'twice'));
    okEvent(await store.eventCancel({ tenantId, id: 'twice', now: T0 }));
    const r3 = await store.eventCancel({ tenantId, id: 'twice', now: T0 + 1 });
    assert.equal(r3.kind === 'wrong_state' && r3.event.state, 'canceled');
    assert.equal((await store.transitionList({ tenantId, eventId: 'twice', limit: 10 })).length, 2);
  });

  it('answers version_mismatch with the current event, checked before the state', async () => {
    const store = ctx.store();
    const tenantId = await newTenant(store);
    await insertOne(store, newEvent(tenantId, 'v'));
    okEvent(await store.eventUpdate({ tenantId, id: 'v', now: T0 + 1, patch: { payload: '{"v":2}' } }));
    const r = await store.eventCancel({ tenantId, id: 'v', expectedVersion: 1, now: T0 + 2 });
    assert.equal(r.kind, 'version_mismatch');
    assert.deepEqual(r.kind === 'version_mismatch' && [r.event.version, r.event.state], [2, 'scheduled']);
    okEvent(await store.eventCancel({ tenantId, id: 'v', expectedVersion: 2, now: T0 + 3 }));
    const stale = await store.eventCancel({ tenantId, id: 'v', expectedVersion: 2, now: T0 + 4 });
    assert.equal(stale.kind, 'version_mismatch', 'a stale If-Match wins over the state');
  });

  it('answers not_found, also for another tenant’s event, which stays as it was', async () => {
    const store = ctx.store();
    const [a, b] = await twoTenants(store);
    const e = await insertOne(store, newEvent(a, 'private'));
    assert.deepEqual(await store.eventCancel({ tenantId: a, id: 'nope', now: T0 }), { kind: 'not_found' });
    assert.deepEqual(await store.eventCancel({ tenantId: b, id: 'private', now: T0 }), { kind: 'not_found' });
    assert.deepEqual(await mustGet(store, a, 'private'), e);
    assert.equal(await store.eventGet({ tenantId: b, id: 'private' }), null);
  });
}

export function updateCases(ctx: SuiteContext): void {
  it('moves fireAt (and dueAt) and records the change', async () => {
    const store = ctx.store();
    const tenantId = await newTenant(store);
    const e = await insertOne(store, newEvent(tenantId, 'u', { fireAt: T0 + 10 * SEC }));
    const now = T0 + 3 * SEC;
    const updated = okEvent(
      await store.eventUpdate({ tenantId, id: 'u', expectedVersion: 1, now, patch: { fireAt: T0 + 99 * SEC } }),
    );
    assert.deepEqual(updated, { ...e, fireAt: T0 + 99 * SEC, dueAt: T0 + 99 * SEC, version: 2, updatedAt: now });
    const t = (await store.transitionList({ tenantId, eventId: 'u', limit: 10 }))[1];
    assert.deepEqual([t.seq, t.kind, t.fromState, t.toState, t.at], [2, 'updated', 'scheduled', 'scheduled', now]);
    assert.deepEqual(t.detail, { fields: ['fireAt'], fireAtBefore: T0 + 10 * SEC, fireAtAfter: T0 + 99 * SEC });
  });

  it('edits payload, headers, destination, expiry and request hash, naming the changed fields', async () => {
    const store = ctx.store();
    const tenantId = await newTenant(store);
    await insertOne(store, newEvent(tenantId, 'p', { headers: { a: '1' }, requestHash: 'h1' }));
    const updated = okEvent(
      await store.eventUpdate({
        tenantId,
        id: 'p',
        now: T0 + 1,
        patch: {
          payload: '{"orderId":9}',
          headers: { a: '2' },
          destination: { url: 'https://example.com/new' },
          expireAt: T0 + 500 * SEC,
          requestHash: 'h2',
        },
      }),
    );
    assert.deepEqual(
      [updated.payload, updated.headers, updated.destination, updated.expireAt, updated.requestHash, updated.fireAt],
      ['{"orderId":9}', { a: '2' }, { url: 'https://example.com/new' }, T0 + 500 * SEC, 'h2', T0 + 10 * SEC],
    );
    const t = (await store.transitionList({ tenantId, eventId: 'p', limit: 10 }))[1];
    assert.deepEqual([...((t.detail?.fields ?? []) as string[])].sort(), [
      'destination',
      'expireAt',
      'headers',
      'payload',
    ]);
    const again = await store.eventInsertMany({
      events: [newEvent(tenantId, 'p', { requestHash: 'h1' }), newEvent(tenantId, 'p', { requestHash: 'h2' })],
      now: T0 + 2,
    });
    assert.deepEqual(
      again.map((r) => r.kind),
      ['conflict', 'existing'],
      'a repeated create compares with the edited body',
    );
  });

  it('changes nothing for a patch that changes nothing', async () => {
    const store = ctx.store();
    const tenantId = await newTenant(store);
    const e = await insertOne(store, newEvent(tenantId, 'same', { headers: { a: '1', b: '2' } }));
    const r = await store.eventUpdate({
      tenantId,
      id: 'same',
      now: T0 + 1,
      patch: { fireAt: e.fireAt, payload: e.payload, headers: { b: '2', a: '1' }, requestHash: e.requestHash },
    });
    assert.deepEqual(r, { kind: 'ok', event: e });
    assert.equal((await store.transitionList({ tenantId, eventId: 'same', limit: 10 })).length, 1);
  });

  it('edits only scheduled events, at the expected version, of the caller’s tenant', async () => {
    const store = ctx.store();
    const [tenantId, other] = await twoTenants(store);
    const running = await mustClaim(store, await insertOne(store, newEvent(tenantId, 'busy')), T0 + 10 * SEC);
    const r1 = await store.eventUpdate({ tenantId, id: 'busy', now: T0 + 11 * SEC, patch: { payload: '{}' } });
    assert.equal(r1.kind === 'wrong_state' && r1.event.state, 'executing');
    assert.deepEqual(await mustGet(store, tenantId, 'busy'), running);

    await insertOne(store, newEvent(tenantId, 'idle'));
    const r2 = await store.eventUpdate({ tenantId, id: 'idle', expectedVersion: 7, now: T0, patch: { payload: '{}' } });
    assert.equal(r2.kind === 'version_mismatch' && r2.event.version, 1);
    assert.deepEqual(await store.eventUpdate({ tenantId: other, id: 'idle', now: T0, patch: { payload: '{}' } }), {
      kind: 'not_found',
    });
    assert.deepEqual(await store.eventUpdate({ tenantId, id: 'nope', now: T0, patch: { payload: '{}' } }), {
      kind: 'not_found',
    });
    assert.equal((await mustGet(store, tenantId, 'idle')).version, 1);
  });
}

export function replayCases(ctx: SuiteContext): void {
  it('replays an archived event: scheduled, due now, attempts reset, same id', async () => {
    const store = ctx.store();
    const tenantId = await newTenant(store);
    const dead = await archive(store, await insertOne(store, newEvent(tenantId, 'dl')), T0 + 10 * SEC);
    assert.equal(dead.state, 'archived');
    const now = T0 + 3_600 * SEC;
    const replayed = okEvent(await store.eventReplay({ tenantId, id: 'dl', expectedVersion: dead.version, now }));
    assert.deepEqual(replayed, {
      ...dead,
      state: 'scheduled',
      dueAt: now,
      attempts: 0,
      lastStatus: null,
      lastError: null,
      version: dead.version + 1,
      updatedAt: now,
    });
    const t = (await store.transitionList({ tenantId, eventId: 'dl', limit: 10 })).at(-1);
    assert.deepEqual(
      [t?.kind, t?.fromState, t?.toState, t?.at, t?.seq],
      ['replayed', 'archived', 'scheduled', now, replayed.version],
    );
    const again = await mustClaim(store, replayed, now + 5);
    assert.deepEqual([again.attempts, again.state], [1, 'executing']);
  });

  it('replays a discarded event', async () => {
    const store = ctx.store();
    const tenantId = await newTenant(store);
    await archive(store, await insertOne(store, newEvent(tenantId, 'disc')), T0 + 10 * SEC, 'discarded');
    const r = okEvent(await store.eventReplay({ tenantId, id: 'disc', now: T0 + 20 * SEC }));
    assert.equal(r.state, 'scheduled');
  });

  it('refuses other states, stale versions, unknown ids and other tenants', async () => {
    const store = ctx.store();
    const [tenantId, other] = await twoTenants(store);
    await insertOne(store, newEvent(tenantId, 'live'));
    const r1 = await store.eventReplay({ tenantId, id: 'live', now: T0 });
    assert.equal(r1.kind === 'wrong_state' && r1.event.state, 'scheduled');
    const dead = await archive(store, await insertOne(store, newEvent(tenantId, 'dead')), T0 + 10 * SEC);
    const r2 = await store.eventReplay({ tenantId, id: 'dead', expectedVersion: dead.version - 1, now: T0 + 20 * SEC });
    assert.equal(r2.kind, 'version_mismatch');
    assert.deepEqual(await store.eventReplay({ tenantId: other, id: 'dead', now: T0 + 20 * SEC }), {
      kind: 'not_found',
    });
    assert.deepEqual(await store.eventReplay({ tenantId, id: 'nope', now: T0 }), { kind: 'not_found' });
    assert.deepEqual(await mustGet(store, tenantId, 'dead'), dead);
  });
}
