/**
 * Migration 019 of both backends: a schedule stored before its spec had `missedAfterMs` or its
 * template `type` gets them (1000 ms, null), and nothing reads them with a default any more. Each
 * backend's own test runs this with the SQL hooks the Store interface has no call for.
 */
import assert from 'node:assert/strict';
import type { Store } from '../store.ts';
import type { ScheduleRecord } from '../schedules.ts';

export interface ScheduleSpecHooks {
  /** Replaces a stored schedule's spec text as it is, unchecked. */
  setSpecText(tenantId: string, id: string, spec: string): Promise<void>;
  /** Forgets that migration `version` was applied and migrates again (it runs once more). */
  migrateAgain(version: number): Promise<void>;
}

export async function checkScheduleSpecFieldsFilled(store: Store, sql: ScheduleSpecHooks): Promise<void> {
  const now = Date.now();
  await store.tenantCreate({ id: 't', name: 't', settings: {}, createdAt: now });
  const schedule = (id: string, missedAfterMs: number, type: string | null): ScheduleRecord => ({
    tenantId: 't',
    id,
    shard: 0,
    version: 1,
    spec: {
      cron: null,
      everyMs: 60_000,
      timezone: 'UTC',
      startAt: now,
      endAt: null,
      missed: 'skip',
      catchUpMax: 10,
      missedAfterMs,
      template: {
        destination: { name: 'd' },
        payload: '{"a":"é\\u0001"}',
        headers: { h: 'v' },
        group: null,
        retry: null,
        expireAfterMs: null,
        tags: { k: 'v' },
        type,
      },
      input: { every: '1m' },
    },
    paused: false,
    nextAt: now,
    firedCount: 0,
    missedCount: 0,
    lastOccurrenceAt: null,
    lastMissed: null,
    createdAt: now,
    updatedAt: now,
  });
  const old = schedule('old', 1_000, null);
  const current = schedule('current', 5_000, 'order.paid');
  for (const s of [old, current])
    assert.equal((await store.scheduleCreate({ schedule: s, perTenantMax: 10 })).kind, 'created');
  // The old one as it was stored before either field existed.
  const { missedAfterMs: _m, ...withoutMissedAfter } = old.spec;
  const { type: _t, ...withoutType } = old.spec.template;
  await sql.setSpecText('t', 'old', JSON.stringify({ ...withoutMissedAfter, template: withoutType }));
  const before = await store.scheduleGet({ tenantId: 't', id: 'old' });
  assert.equal('missedAfterMs' in before!.spec, false, 'the hook wrote the old shape');

  await sql.migrateAgain(19);
  assert.deepEqual((await store.scheduleGet({ tenantId: 't', id: 'old' }))?.spec, old.spec, 'filled in');
  assert.deepEqual((await store.scheduleGet({ tenantId: 't', id: 'current' }))?.spec, current.spec, 'left as it was');
}
