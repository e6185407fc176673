/**
 * The `created` transition is read from the event row, not stored (both backends' queries.ts).
 * Each backend's own test runs this with the SQL hook the Store interface has no call for.
 */
import assert from 'node:assert/strict';
import type { Store } from '../store.ts';

export interface CreatedTransitionHooks {
  /** Rows in the transitions table. */
  transitionRows(): Promise<number>;
}

export async function checkCreatedTransitionReadFromRow(store: Store, sql: CreatedTransitionHooks): Promise<void> {
  const now = Date.now();
  await store.tenantCreate({ id: 't', name: 't', settings: {}, createdAt: now });
  const event = (id: string) => ({
    tenantId: 't',
    id,
    shard: 0,
    fireAt: now,
    destination: { name: 'd' },
    payload: '{}',
    headers: {},
    group: null,
    retry: null,
    expireAt: null,
    tags: {},
    type: null,
    requestHash: '',
  });
  await store.eventInsertMany({ events: [event('fresh')], now });
  assert.equal(await sql.transitionRows(), 0, 'the insert wrote no transition');
  const created = {
    kind: 'created',
    fromState: null,
    toState: 'scheduled',
    attempt: 0,
    status: null,
    error: null,
    durationMs: null,
    latenessMs: null,
    detail: null,
  };
  assert.deepEqual(await store.transitionList({ tenantId: 't', eventId: 'fresh', limit: 10 }), [
    { tenantId: 't', eventId: 'fresh', seq: 1, at: now, ...created },
  ]);
  const [claimed] = await store.eventClaim({
    refs: [{ tenantId: 't', id: 'fresh', version: 1 }],
    now: now + 1,
    owner: 'n',
    leaseUntil: now + 60_000,
  });
  assert.equal(claimed.version, 2);
  assert.deepEqual(
    (await store.transitionList({ tenantId: 't', eventId: 'fresh', limit: 10 })).map((t) => [t.seq, t.kind]),
    [
      [1, 'created'],
      [2, 'state'],
    ],
  );
  assert.deepEqual(
    (await store.transitionList({ tenantId: 't', eventId: 'fresh', afterSeq: 1, limit: 10 })).map((t) => t.seq),
    [2],
  );
  assert.deepEqual(
    (await store.transitionList({ tenantId: 't', eventId: 'fresh', limit: 1 })).map((t) => t.seq),
    [1],
  );
  assert.deepEqual(await store.transitionList({ tenantId: 't', eventId: 'none', limit: 10 }), []);
}
