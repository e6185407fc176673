/**
 * A full write queue through the real API: while the store is behind (its inserts held, as a slow
 * disk or a loaded PostgreSQL primary would), a create that does not fit the group-commit queue is
 * answered 503 with Retry-After at once, never a 500, and writes nothing; the queued ones land.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { GroupCommitter } from '../../src/store/group-commit.ts';
import type { EventInsertManyParams, EventInsertResult } from '../../src/store/store.ts';
import { bearer, makeTestApp, type TestApp } from '../support/app.ts';
import { waitUntil } from '../support/node.ts';

const WAIT_MS_MAX = 5_000;

let t: TestApp;
let writer: GroupCommitter;
let insertsStarted = 0;
let openStore!: () => void;
const storeOpened = new Promise<void>((resolve) => (openStore = resolve));

before(async () => {
  t = await makeTestApp({
    writer: (store, clock) => {
      const slow = {
        async eventInsertMany(params: EventInsertManyParams): Promise<EventInsertResult[]> {
          insertsStarted++;
          await storeOpened;
          return store.eventInsertMany(params);
        },
      };
      writer = new GroupCommitter(slow, () => clock.now(), { queueEventsMax: 2 });
      return writer;
    },
  });
});
after(() => t.cleanup());

function create(id: string) {
  return t.app.inject({
    method: 'POST',
    url: '/v1/events',
    headers: bearer(t.tenantKey),
    payload: { id, destination: { url: 'https://hooks.example.com/x' }, delay: '1h' },
  });
}

describe('group-commit queue full', () => {
  it('answers 503 with Retry-After while the queue is full, and commits what it queued', async () => {
    // The committer keeps two transactions in flight (GROUP_COMMIT_FLUSHES_IN_FLIGHT_MAX): the store holds both.
    const inFlight = [create('in-flight-1')];
    await waitUntil('the first insert reaches the store', () => insertsStarted === 1, WAIT_MS_MAX);
    inFlight.push(create('in-flight-2'));
    await waitUntil('the second insert reaches the store', () => insertsStarted === 2, WAIT_MS_MAX);
    const queued = [create('queued-1'), create('queued-2')];
    await waitUntil('two events queued', () => writer.pendingEvents === 2, WAIT_MS_MAX);

    const refused = await create('refused');
    assert.equal(refused.statusCode, 503, refused.body);
    assert.equal(refused.headers['retry-after'], '1');
    const { error } = refused.json();
    assert.equal(error.code, 'unavailable');
    assert.match(error.message, /write queue is full .*try again shortly/);
    const batch = await t.app.inject({
      method: 'POST',
      url: '/v1/events/batch',
      headers: bearer(t.tenantKey),
      payload: { events: [{ id: 'refused-batch', destination: { url: 'https://hooks.example.com/x' } }] },
    });
    assert.equal(batch.statusCode, 503, batch.body);

    openStore();
    for (const res of await Promise.all([...inFlight, ...queued])) assert.equal(res.statusCode, 201, res.body);
    assert.equal(
      await t.store.eventGet({ tenantId: t.tenantId, id: 'refused' }),
      null,
      'a refused create wrote nothing',
    );
    assert.equal(await t.store.eventGet({ tenantId: t.tenantId, id: 'refused-batch' }), null);
    assert.equal((await create('refused')).statusCode, 201, 'the same create goes once the queue drained');
  });
});
