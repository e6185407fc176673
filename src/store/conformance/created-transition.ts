/**
 * The `created` transition is read from the event row, not stored (both backends' queries.ts); a
 * store written before holds it as a row, and that row answers. Each backend's own test runs this
 * with the two SQL hooks the Store interface has no call for.
 */
import assert from 'node:assert/strict';
import type { Store } from '../store.ts';

export interface CreatedTransitionHooks {
  /** Rows in the transitions table. */
  transitionRows(): Promise<number>;
  /** Writes the `created` row (seq 1) of an event as a store written before held it. */
  insertLegacyCreated(tenantId: string, eventId: string, at: number): Promise<void>;
}

export async function checkCreatedTransitionReadFromRow(store: Store, sql: CreatedTransitionHooks): Promise<void> {
  const now = Date.now();
  await store.tenantCreate({ id: 't', name: 't', settings: {}, createdAt: now });
  const event = (id: string) => ({
    tenantId: 't', id, shard: 0, fireAt: now, destination: { name: 'd' }, payload: '{}', headers: {},
    group: null, retry: null, expireAt: null, tags: {}, type: null, requestHash: '',
  });
  await store.eventInsertMany({ events: [event('fresh'), event('legacy')], now });
  assert.equal(await sql.transitionRows(), 0, 'the insert wrote no transition');
  // A distinct `at`, to tell which one answers.
  await sql.insertLegacyCreated('t', 'legacy', now - 5);
  const created = { kind: 'created', fromState: null, toState: 'scheduled', attempt: 0, status: null, error: null, durationMs: null, latenessMs: null, detail: null };
  assert.deepEqual(await store.transitionList({ tenantId: 't', eventId: 'fresh', limit: 10 }), [{ tenantId: 't', eventId: 'fresh', seq: 1, at: now, ...created }]);
  assert.deepEqual(await store.transitionList({ tenantId: 't', eventId: 'legacy', limit: 10 }), [{ tenantId: 't', eventId: 'legacy', seq: 1, at: now - 5, ...created }]);
  const [claimed] = await store.eventClaim({ refs: [{ tenantId: 't', id: 'fresh', version: 1 }], now: now + 1, owner: 'n', leaseUntil: now + 60_000 });
  assert.equal(claimed.version, 2);
  assert.deepEqual((await store.transitionList({ tenantId: 't', eventId: 'fresh', limit: 10 })).map((t) => [t.seq, t.kind]), [[1, 'created'], [2, 'state']]);
  assert.deepEqual((await store.transitionList({ tenantId: 't', eventId: 'fresh', afterSeq: 1, limit: 10 })).map((t) => t.seq), [2]);
  assert.deepEqual((await store.transitionList({ tenantId: 't', eventId: 'fresh', limit: 1 })).map((t) => t.seq), [1]);
  assert.deepEqual(await store.transitionList({ tenantId: 't', eventId: 'none', limit: 10 }), []);
}
