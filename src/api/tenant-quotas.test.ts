/**
 * The pending-events quota on a shared store: the estimate is refreshed in the background, so a
 * slow count (a tenant with millions pending) never holds scheduling requests back. A real SQLite
 * store, presented as shared, whose count the test holds until it lets go (the slow count).
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, it } from 'node:test';
import { SimClock } from '../core/clock.ts';
import { insertAll, newEvent, newTenant } from '../store/conformance/fixtures.ts';
import { openSqliteStore, type SqliteStore } from '../store/sqlite/sqlite-store.ts';
import { DEFAULT_TENANT_LIMITS } from './limits.ts';
import { PENDING_STALE_MS_CLUSTER, TenantQuotas } from './tenant-quotas.ts';

describe('TenantQuotas pending estimate on a shared store', () => {
  let dir: string;
  let store: SqliteStore;
  let clock: SimClock;
  let quotas: TenantQuotas;
  let tenant: string;
  let counts: number;
  let release: (() => void)[];
  let holdCounts: boolean;

  beforeEach(async () => {
    dir = mkdtempSync(join(tmpdir(), 'belfry-quotas-'));
    store = await openSqliteStore({ dataDir: dir });
    tenant = await newTenant(store);
    clock = new SimClock();
    counts = 0;
    release = [];
    holdCounts = false;
    const shared = Object.create(store) as SqliteStore;
    Object.defineProperty(shared, 'capabilities', { value: { ...store.capabilities, multiNode: true } });
    shared.eventCountPending = async (params) => {
      counts++;
      if (holdCounts) await new Promise<void>((resolve) => release.push(resolve));
      return store.eventCountPending(params);
    };
    quotas = new TenantQuotas(shared, clock, DEFAULT_TENANT_LIMITS);
  });

  afterEach(async () => {
    for (const r of release) r();
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('counts once to start, then refreshes a stale estimate without making requests wait', async () => {
    await insertAll(store, [newEvent(tenant, 'a'), newEvent(tenant, 'b')]);
    await quotas.checkPending(tenant, 1, 10);
    assert.equal(counts, 1);
    await quotas.checkPending(tenant, 1, 10);
    assert.equal(counts, 1, 'a fresh estimate is not recounted');

    // Another node adds events; the estimate goes stale; the recount is slow.
    await insertAll(store, ['c', 'd', 'e', 'f', 'g', 'h', 'i'].map((id) => newEvent(tenant, id)));
    await clock.advance(PENDING_STALE_MS_CLUSTER);
    holdCounts = true;
    let timer: NodeJS.Timeout | undefined;
    const answered = await Promise.race([
      quotas.checkPending(tenant, 1, 10).then(() => 'answered'),
      new Promise((resolve) => (timer = setTimeout(() => resolve('waited for the count'), 2_000))),
    ]);
    clearTimeout(timer);
    assert.equal(answered, 'answered');
    assert.equal(counts, 2, 'a recount started');
    await quotas.checkPending(tenant, 1, 10);
    assert.equal(counts, 2, 'one recount at a time');

    // Once the recount lands, the quota sees the other node's events: 9 pending, 2 more is over 10.
    release.splice(0).forEach((r) => r());
    holdCounts = false;
    await new Promise((resolve) => setImmediate(resolve));
    await assert.rejects(quotas.checkPending(tenant, 2, 10), (err: Error & { statusCode?: number }) => /pending/.test(err.message));
  });
});
