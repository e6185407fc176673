/**
 * The pending-events quota: estimates start from the count sampler's samples, so no request waits
 * for a first count (a tenant with millions pending takes seconds to count), and on a shared store
 * a stale estimate is refreshed in the background. A real SQLite store whose counts the test can
 * hold until it lets go (a slow count), presented as shared where the test says so.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, it } from 'node:test';
import pino from 'pino';
import { SimClock } from '../core/clock.ts';
import { CountSampler } from '../maintenance/count-sampler.ts';
import { insertAll, newEvent, newTenant } from '../store/conformance/fixtures.ts';
import { openSqliteStore, type SqliteStore } from '../store/sqlite/sqlite-store.ts';
import { DEFAULT_TENANT_LIMITS } from '../core/tenant-limits.ts';
import { PENDING_RECOUNT_MS_MIN, PENDING_STALE_MS_CLUSTER, TenantQuotas } from './tenant-quotas.ts';

/** Resolves within `ms` of real time with 'answered', or says what it waited for. */
async function answersAtOnce(p: Promise<unknown>, ms = 2_000): Promise<string> {
  let timer: NodeJS.Timeout | undefined;
  const answered = await Promise.race([
    p.then(() => 'answered'),
    new Promise<string>((resolve) => (timer = setTimeout(() => resolve('waited for a count'), ms))),
  ]);
  clearTimeout(timer);
  return answered;
}

describe('TenantQuotas pending estimate', () => {
  let dir: string;
  let store: SqliteStore;
  let clock: SimClock;
  let tenant: string;
  let tenantCounts: number;
  let sampleCounts: number;
  let release: (() => void)[];
  let hold: boolean;

  /** The store as the quotas see it: counts that the test can hold; shared (multiNode) or not. */
  function shaped(multiNode: boolean): SqliteStore {
    const s = Object.create(store) as SqliteStore;
    Object.defineProperty(s, 'capabilities', { value: { ...store.capabilities, multiNode } });
    const held = async () => {
      if (hold) await new Promise<void>((resolve) => release.push(resolve));
    };
    s.eventCountPending = async (params) => {
      tenantCounts++;
      await held();
      return store.eventCountPending(params);
    };
    s.eventCountByTenantState = async () => {
      sampleCounts++;
      await held();
      return store.eventCountByTenantState();
    };
    return s;
  }

  function make(multiNode: boolean): { quotas: TenantQuotas; sampler: CountSampler } {
    const s = shaped(multiNode);
    const sampler = new CountSampler({ store: s, clock, logger: pino({ level: 'silent' }) });
    return { quotas: new TenantQuotas(s, clock, DEFAULT_TENANT_LIMITS, sampler), sampler };
  }

  const letGo = () => {
    hold = false;
    release.splice(0).forEach((r) => r());
  };

  beforeEach(async () => {
    dir = mkdtempSync(join(tmpdir(), 'belfry-quotas-'));
    store = await openSqliteStore({ dataDir: dir });
    tenant = await newTenant(store);
    clock = new SimClock();
    tenantCounts = 0;
    sampleCounts = 0;
    release = [];
    hold = false;
  });

  afterEach(async () => {
    letGo();
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('answers a first request without waiting for a count, before and after the first sample', async () => {
    await insertAll(
      store,
      ['a', 'b', 'c', 'd'].map((id) => newEvent(tenant, id)),
    );
    const { quotas, sampler } = make(false);
    // No sample and none being counted (say the first count failed): admitted, and the tenant is
    // counted on its own in the background.
    hold = true;
    assert.equal(await answersAtOnce(quotas.checkPending(tenant, 1, 3)), 'answered', 'no sample: admitted');
    assert.equal(tenantCounts, 1, 'a background count of the tenant started');
    letGo();
    await quotas.whenCounted(tenant);
    await assert.rejects(
      quotas.checkPending(tenant, 1, 3),
      /4 events pending/,
      'its own count serves the next request',
    );

    // While the first sample is being counted, a new tenant is admitted and not counted twice.
    const late = await newTenant(store);
    await insertAll(
      store,
      ['x', 'y', 'z'].map((id) => newEvent(late, id)),
    );
    hold = true;
    const firstSample = sampler.runOnce();
    assert.equal(await answersAtOnce(quotas.checkPending(late, 1, 3)), 'answered', 'no sample yet: admitted');
    assert.equal(tenantCounts, 1, 'no second scan beside the sample');
    letGo();
    await firstSample;
    await assert.rejects(quotas.checkPending(late, 1, 3), /3 events pending/, 'the sample serves it once it lands');
    hold = true;
    const other = await newTenant(store);
    assert.equal(
      await answersAtOnce(quotas.checkPending(other, 3, 3)),
      'answered',
      'a tenant the sample does not name has none pending',
    );
    letGo();
  });

  it('estimates from the latest sample plus what this node accepted since; recounts once before refusing', async () => {
    await insertAll(
      store,
      ['a', 'b'].map((id) => newEvent(tenant, id)),
    );
    const { quotas, sampler } = make(false);
    await sampler.runOnce();
    assert.equal(sampleCounts, 1);
    await quotas.checkPending(tenant, 1, 3);
    quotas.pendingAdded(tenant, 1);
    await insertOne(store, tenant, 'c');
    assert.equal(tenantCounts, 0, 'the sample served');
    await assert.rejects(quotas.checkPending(tenant, 1, 3), /3 events pending, 1 more/);
    assert.equal(tenantCounts, 0, 'a fresh estimate is not recounted before refusing');

    // Two events finish; after the spacing a request over the estimate recounts and fits.
    await store.eventCancel({ tenantId: tenant, id: 'a', now: 0 });
    await store.eventCancel({ tenantId: tenant, id: 'b', now: 0 });
    await clock.advance(PENDING_RECOUNT_MS_MIN);
    await quotas.checkPending(tenant, 2, 3);
    assert.equal(tenantCounts, 1, 'one recount');
    quotas.pendingAdded(tenant, 2);

    // A new sample replaces the estimate, keeping what was accepted while it counted.
    await clock.advance(1);
    hold = true;
    const next = sampler.runOnce();
    quotas.pendingAdded(tenant, 5);
    letGo();
    await next;
    await assert.rejects(
      quotas.checkPending(tenant, 1, 5),
      /6 events pending/,
      '1 counted (c) + 5 accepted during the count',
    );
  });

  it('on a shared store, refreshes a stale estimate in the background without making requests wait', async () => {
    await insertAll(store, [newEvent(tenant, 'a'), newEvent(tenant, 'b')]);
    const { quotas, sampler } = make(true);
    await sampler.runOnce();
    await quotas.checkPending(tenant, 1, 10);
    assert.equal(tenantCounts, 0, 'the sample served');

    // Another node adds events; the estimate goes stale; the recount is slow.
    await insertAll(
      store,
      ['c', 'd', 'e', 'f', 'g', 'h', 'i'].map((id) => newEvent(tenant, id)),
    );
    await clock.advance(PENDING_STALE_MS_CLUSTER);
    hold = true;
    assert.equal(await answersAtOnce(quotas.checkPending(tenant, 1, 10)), 'answered');
    assert.equal(tenantCounts, 1, 'a recount started');
    await quotas.checkPending(tenant, 1, 10);
    assert.equal(tenantCounts, 1, 'one recount at a time');

    // Once the recount lands, the quota sees the other node's events: 9 pending, 2 more is over 10.
    letGo();
    assert.equal(await answersAtOnce(quotas.whenCounted(tenant)), 'answered');
    await assert.rejects(quotas.checkPending(tenant, 2, 10), (err: Error) => /9 events pending/.test(err.message));
  });
});

async function insertOne(store: SqliteStore, tenantId: string, id: string): Promise<void> {
  await insertAll(store, [newEvent(tenantId, id)]);
}
