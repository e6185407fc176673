/** Conformance: bulk jobs (create under a per-tenant bound, lease claims, atomic steps, failure). */
import assert from 'node:assert/strict';
import { it } from 'node:test';
import { BULK_CLAIM_RUNNING_MAX, BULK_FINISHED_KEPT, type BulkJobRecord, type Store } from '../store.ts';
import { archive, insertAll, mustGet, newEvent, newTenant, SEC, T0, type SuiteContext } from './fixtures.ts';

let jobSeq = 0;
function job(tenantId: string, over: Partial<BulkJobRecord> = {}): BulkJobRecord {
  jobSeq += 1;
  return {
    tenantId,
    id: `bulk_${String(jobSeq).padStart(6, '0')}`,
    state: 'running',
    filter: { state: 'scheduled' },
    action: { kind: 'cancel' },
    cursor: null,
    matched: 0,
    done: 0,
    skipped: 0,
    errors: [],
    leaseOwner: null,
    leaseUntil: null,
    createdAt: T0,
    updatedAt: T0,
    finishedAt: null,
    ...over,
  };
}

/** Claims until the job with `id` comes back (other sections' jobs may be older in a shared store). */
async function claimJob(
  store: Store,
  id: string,
  owner: string,
  now: number,
  takeOver = false,
): Promise<BulkJobRecord | null> {
  for (let i = 0; i < 50; i++) {
    const j = await store.bulkJobClaim({ owner, now, leaseUntil: now + 30 * SEC, takeOver });
    if (!j || j.id === id) return j;
    // Someone else's job: finish it so the next claim moves on.
    await store.bulkJobStep({
      tenantId: j.tenantId,
      id: j.id,
      owner,
      now,
      leaseUntil: now + 30 * SEC,
      operation: 'bulk_test',
      changes: [],
      matched: 0,
      skipped: 0,
      cursor: null,
      finished: true,
    });
  }
  throw new Error('claimJob: never reached the job');
}

export function bulkCases(ctx: SuiteContext): void {
  it('creates jobs while the tenant has fewer than runningMax running, and reads them back', async () => {
    const store = ctx.store();
    const tenantId = await newTenant(store);
    const a = job(tenantId, {
      filter: { type: 'x.y', tags: { team: 'a' } },
      action: { kind: 'shift', shiftMs: 3_600_000 },
    });
    assert.equal(await store.bulkJobCreate({ job: a, runningMax: 2 }), true);
    assert.equal(await store.bulkJobCreate({ job: job(tenantId), runningMax: 2 }), true);
    assert.equal(
      await store.bulkJobCreate({ job: job(tenantId), runningMax: 2 }),
      false,
      'the third running job is refused',
    );
    assert.equal(
      await store.bulkJobCreate({ job: job(await newTenant(store)), runningMax: 2 }),
      true,
      'another tenant has its own bound',
    );
    assert.deepEqual(await store.bulkJobGet({ tenantId, id: a.id }), a);
    assert.equal(await store.bulkJobGet({ tenantId: 'nobody', id: a.id }), null);
  });

  it('keeps the newest BULK_FINISHED_KEPT finished jobs of a tenant, deleting older ones as new jobs come', async () => {
    const store = ctx.store();
    const tenantId = await newTenant(store);
    const ids: string[] = [];
    for (let i = 0; i < BULK_FINISHED_KEPT + 3; i++) {
      const j = job(tenantId);
      ids.push(j.id);
      assert.equal(await store.bulkJobCreate({ job: j, runningMax: 1 }), true);
      await claimJob(store, j.id, 'node-a', T0);
      assert.equal(await store.bulkJobFail({ tenantId, id: j.id, owner: 'node-a', now: T0, error: 'x' }), true);
    }
    const kept = await Promise.all(ids.map((id) => store.bulkJobGet({ tenantId, id })));
    // The last create pruned before inserting: the newest BULK_FINISHED_KEPT before it, and itself.
    assert.deepEqual(
      kept.map((k) => k !== null),
      ids.map((_, i) => i >= ids.length - 1 - BULK_FINISHED_KEPT),
    );
  });

  it('leases a job to one owner at a time; the lease passes on when it ends, or at once with takeOver', async () => {
    const store = ctx.store();
    const tenantId = await newTenant(store);
    const j = job(tenantId);
    await store.bulkJobCreate({ job: j, runningMax: 10 });
    const mine = await claimJob(store, j.id, 'node-a', T0);
    assert.equal(mine?.leaseOwner, 'node-a');
    assert.equal(mine?.leaseUntil, T0 + 30 * SEC);
    const other = await store.bulkJobClaim({ owner: 'node-b', now: T0 + SEC, leaseUntil: T0 + 31 * SEC });
    assert.notEqual(other?.id, j.id, 'a live lease is not taken');
    const later = await claimJob(store, j.id, 'node-b', T0 + 30 * SEC);
    assert.equal(later?.leaseOwner, 'node-b', 'an ended lease is');
    const taken = await claimJob(store, j.id, 'node-c', T0 + 31 * SEC, true);
    assert.equal(taken?.leaseOwner, 'node-c', 'takeOver ignores the lease');
  });

  it('never claims a job named running, and takes a tenant not running yet before another job of one that is', async () => {
    const store = ctx.store();
    const [x, y] = [await newTenant(store), await newTenant(store)];
    const x1 = job(x, { createdAt: T0 - 3 * SEC });
    const x2 = job(x, { createdAt: T0 - 2 * SEC });
    const y1 = job(y, { createdAt: T0 - SEC });
    for (const j of [x1, x2, y1]) assert.equal(await store.bulkJobCreate({ job: j, runningMax: 10 }), true);
    const ours = new Set([x1.id, x2.id, y1.id]);
    const running = [{ tenantId: x, id: x1.id }];
    // Other sections' jobs may come first in a shared store: finish those as they come.
    const next = async (owner: string, run: { tenantId: string; id: string }[]) => {
      for (let i = 0; i < 50; i++) {
        const j = await store.bulkJobClaim({ owner, now: T0, leaseUntil: T0 + 30 * SEC, running: run });
        if (!j || ours.has(j.id)) return j;
        await store.bulkJobStep({
          tenantId: j.tenantId,
          id: j.id,
          owner,
          now: T0,
          leaseUntil: T0 + 30 * SEC,
          operation: 'bulk_test',
          changes: [],
          matched: 0,
          skipped: 0,
          cursor: null,
          finished: true,
        });
      }
      throw new Error('never reached our jobs');
    };
    assert.equal((await claimJob(store, x1.id, 'node-a', T0))?.id, x1.id);
    assert.equal(
      (await next('node-a', running))?.id,
      y1.id,
      'y has no job running here: its job comes before x2, though younger',
    );
    running.push({ tenantId: y, id: y1.id });
    assert.equal((await next('node-a', running))?.id, x2.id);
    running.push({ tenantId: x, id: x2.id });
    assert.equal(await next('node-a', running), null, 'every job left is named running');
    assert.equal(
      (await next('node-a', []))?.id,
      x1.id,
      'without the list, the owner takes its own job back (a restart)',
    );
    await assert.rejects(
      store.bulkJobClaim({
        owner: 'node-a',
        now: T0,
        leaseUntil: T0,
        running: Array.from({ length: BULK_CLAIM_RUNNING_MAX + 1 }, (_, i) => ({ tenantId: x, id: `j${i}` })),
      }),
      RangeError,
    );
  });

  it('applies a step atomically: conditional writes naming the operation, skips counted, cursor and counts stored', async () => {
    const store = ctx.store();
    const tenantId = await newTenant(store);
    const evs = await insertAll(store, [
      newEvent(tenantId, 's1'),
      newEvent(tenantId, 's2'),
      newEvent(tenantId, 's3'),
      newEvent(tenantId, 's4', { fireAt: T0 + 50 * SEC }),
    ]);
    await archive(store, evs[2], T0 + 20 * SEC);
    await store.eventUpdate({ tenantId, id: 's2', now: T0, patch: { payload: '{"moved":1}' } }); // s2 moves on: version 2
    const j = job(tenantId);
    await store.bulkJobCreate({ job: j, runningMax: 10 });
    await claimJob(store, j.id, 'node-a', T0 + 21 * SEC);
    const now = T0 + 22 * SEC;
    const lease = { tenantId, id: j.id, owner: 'node-a', now, leaseUntil: now + 30 * SEC };
    const notMine = await store.bulkJobStep({
      ...lease,
      owner: 'node-b',
      operation: 'bulk_cancel',
      changes: [{ id: 's1', version: 1, kind: 'cancel' }],
      matched: 1,
      skipped: 0,
      cursor: 'c1',
      finished: false,
    });
    assert.equal(notMine, null);
    assert.equal((await mustGet(store, tenantId, 's1')).state, 'scheduled', 'nothing applied without the lease');

    const step = await store.bulkJobStep({
      ...lease,
      operation: 'bulk_shift',
      changes: [
        { id: 's1', version: 1, kind: 'cancel' },
        { id: 's2', version: 1, kind: 'cancel' }, // stale version: skipped
        { id: 's3', version: evs[2].version + 2, kind: 'cancel' }, // archived: skipped
        { id: 's4', version: 1, kind: 'update', patch: { fireAt: T0 + 99 * SEC } },
      ],
      matched: 5,
      skipped: 1,
      cursor: 'c1',
      finished: false,
    });
    assert.ok(step);
    assert.deepEqual(
      step.changed.map((e) => [e.id, e.state, e.fireAt]),
      [
        ['s1', 'canceled', T0 + 10 * SEC],
        ['s4', 'scheduled', T0 + 99 * SEC],
      ],
    );
    assert.deepEqual(
      [step.job.matched, step.job.done, step.job.skipped, step.job.cursor, step.job.state, step.job.leaseUntil],
      [5, 2, 3, 'c1', 'running', now + 30 * SEC],
    );
    assert.equal((await mustGet(store, tenantId, 's2')).state, 'scheduled');
    const [t1] = (await store.transitionList({ tenantId, eventId: 's1', limit: 10 })).slice(-1);
    assert.deepEqual([t1.toState, t1.detail], ['canceled', { operation: 'bulk_shift', operationId: j.id }]);
    const [t4] = (await store.transitionList({ tenantId, eventId: 's4', limit: 10 })).slice(-1);
    assert.deepEqual(
      [t4.kind, t4.detail?.operation, t4.detail?.operationId, t4.detail?.fields],
      ['updated', 'bulk_shift', j.id, ['fireAt']],
    );

    const last = await store.bulkJobStep({
      ...lease,
      now: now + SEC,
      operation: 'bulk_shift',
      changes: [],
      matched: 0,
      skipped: 0,
      cursor: null,
      finished: true,
    });
    assert.deepEqual([last?.job.state, last?.job.finishedAt, last?.job.done], ['succeeded', now + SEC, 2]);
    assert.equal(
      await store.bulkJobStep({
        ...lease,
        now: now + 2 * SEC,
        operation: 'bulk_shift',
        changes: [],
        matched: 0,
        skipped: 0,
        cursor: null,
        finished: true,
      }),
      null,
      'a finished job takes no more steps',
    );
  });

  it('replays archived events in a step, and fails a job keeping its last errors', async () => {
    const store = ctx.store();
    const tenantId = await newTenant(store);
    const [e] = await insertAll(store, [newEvent(tenantId, 'r1')]);
    const archived = await archive(store, e, T0 + 20 * SEC);
    const j = job(tenantId, { action: { kind: 'replay' } });
    await store.bulkJobCreate({ job: j, runningMax: 10 });
    await claimJob(store, j.id, 'node-a', T0 + 21 * SEC);
    const now = T0 + 22 * SEC;
    const step = await store.bulkJobStep({
      tenantId,
      id: j.id,
      owner: 'node-a',
      now,
      leaseUntil: now + SEC,
      operation: 'bulk_replay',
      changes: [{ id: 'r1', version: archived.version, kind: 'replay' }],
      matched: 1,
      skipped: 0,
      cursor: 'x',
      finished: false,
    });
    assert.deepEqual(
      step?.changed.map((c) => c.state),
      ['scheduled'],
    );
    const [t] = (await store.transitionList({ tenantId, eventId: 'r1', limit: 20 })).slice(-1);
    assert.deepEqual([t.kind, t.detail?.operation], ['replayed', 'bulk_replay']);
    assert.equal(
      await store.bulkJobFail({ tenantId, id: j.id, owner: 'node-b', now, error: 'nope' }),
      false,
      'only the lease holder fails it',
    );
    assert.equal(
      await store.bulkJobFail({ tenantId, id: j.id, owner: 'node-a', now, error: 'destination deleted' }),
      true,
    );
    const failed = await store.bulkJobGet({ tenantId, id: j.id });
    assert.deepEqual(
      [failed?.state, failed?.errors, failed?.finishedAt, failed?.leaseOwner],
      ['failed', ['destination deleted'], now, null],
    );
  });
}
