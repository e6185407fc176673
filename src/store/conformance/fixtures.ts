/**
 * Shared pieces of the Store conformance suite: the harness a backend provides, a context that
 * hands out unique tenants and shards (so tests sharing one store never see each other's rows),
 * and builders for events. Nothing here knows which backend runs.
 */
import assert from 'node:assert/strict';
import { SimClock } from '../../core/clock.ts';
import { EVENT_STATES, type EventRecord, type EventState } from '../../core/event.ts';
import type { AttemptOutcome, EventInsertResult, EventPullClaimParams, NewEvent, Store } from '../store.ts';

/** What a backend gives the suite: a fresh, migrated, empty store. */
export interface StoreHarness {
  store: Store;
  /** Closes the store if still open (close must be idempotent) and removes its data. */
  cleanup: () => Promise<void>;
  /**
   * Opens the same data again after the suite closed `store`; the suite closes what it returns.
   * Without it the durability test is skipped.
   */
  reopen?: () => Promise<Store>;
}

export type MakeStore = () => Promise<StoreHarness>;

/**
 * The time of the cluster methods (Store's ClusterNow) in a backend's suite: `now` is what a
 * caller passes, `pass` lets `ms` of it go by. A backend that judges by the caller's time (SQLite)
 * runs them on a simulated clock, so nothing waits; one that judges by its own clock (PostgreSQL)
 * reads that clock and waits for it (storeClusterTime).
 */
export interface ClusterTime {
  now(store: Store): Promise<number>;
  pass(store: Store, ms: number): Promise<void>;
}

/** Cluster time on a simulated clock, started at this process's clock: `pass` waits for nothing. */
export function simulatedClusterTime(clock: SimClock = new SimClock(Date.now())): ClusterTime {
  return {
    now: async () => clock.now(),
    pass: (_store, ms) => clock.advance(ms),
  };
}

/** Bound on waiting, beyond `ms`, for the store's own clock to move `ms`. */
const STORE_CLOCK_WAIT_MS_MAX = 5_000;

/** Cluster time read from the store's own clock (`timeNow`); `pass` polls it until it has moved `ms`. */
export const storeClusterTime: ClusterTime = {
  now: (store) => store.timeNow(),
  async pass(store, ms) {
    const target = (await store.timeNow()) + ms;
    const deadline = Date.now() + ms + STORE_CLOCK_WAIT_MS_MAX;
    while ((await store.timeNow()) < target) {
      if (Date.now() > deadline) assert.fail(`the store's clock did not move ${ms} ms`);
      await new Promise((resolve) => setTimeout(resolve, 1));
    }
  },
};

/** What every section receives: the shared store of its describe block, the factory, and the cluster time. */
export interface SuiteContext {
  store(): Store;
  make: MakeStore;
  time: ClusterTime;
}

/** All test times are fixed instants: no test reads the clock. */
export const T0 = Date.UTC(2026, 0, 1, 12, 0, 0);
export const SEC = 1_000;
export const OWNER_A = 'node-a';
export const OWNER_B = 'node-b';
export const LEASE_MS = 30 * SEC;

let counter = 0;
/** A name no other test of this process uses. */
export function unique(prefix: string): string {
  counter += 1;
  return `${prefix}-${counter}`;
}

let shardCounter = 1_000;
/** A shard number no other test uses, so eventListDue by shard sees only this test's events. */
export function uniqueShard(): number {
  shardCounter += 1;
  return shardCounter;
}

export async function newTenant(store: Store, name = 'tenant'): Promise<string> {
  const id = unique('t');
  await store.tenantCreate({ id, name, settings: {}, createdAt: T0 });
  return id;
}

/** Two tenants, for the scoping checks; the first id sorts before the second. */
export async function twoTenants(store: Store): Promise<[string, string]> {
  const base = unique('t');
  const ids: [string, string] = [`${base}-a`, `${base}-b`];
  for (const id of ids) await store.tenantCreate({ id, name: id, settings: {}, createdAt: T0 });
  return ids;
}

/** A pull claim of tenantId's destination `jobs` (up to 10, at T0 + 20 s, visible until T0 + 50 s); `o` overrides. */
export function pullClaimParams(tenantId: string, o: Partial<EventPullClaimParams> = {}): EventPullClaimParams {
  return {
    tenantId,
    queue: 'name:jobs',
    types: null,
    max: 10,
    now: T0 + 20 * SEC,
    leaseUntil: T0 + 50 * SEC,
    receipt: `r-${Math.random()}`,
    ...o,
  };
}

/** A pull destination `name` of the tenant (consumers claim its events; the scheduler leaves them alone). */
export async function pullDestination(store: Store, tenantId: string, name = 'jobs'): Promise<void> {
  await store.destinationPut({
    destination: {
      tenantId,
      name,
      secrets: [],
      createdAt: T0,
      updatedAt: T0,
      config: {
        kind: 'pull',
        headers: {},
        timeoutMs: 10_000,
        retry: null,
        rateLimitPerSecond: null,
        maxConcurrency: 20,
      },
    },
  });
}

export function newEvent(tenantId: string, id: string, o: Partial<NewEvent> = {}): NewEvent {
  return {
    tenantId,
    id,
    shard: 0,
    fireAt: T0 + 10 * SEC,
    destination: { name: 'orders' },
    payload: '{"orderId":8812}',
    headers: {},
    group: null,
    retry: null,
    expireAt: null,
    tags: {},
    requestHash: `hash-${id}`,
    ...o,
  };
}

/** Inserts events that must all be created; returns the stored records. */
export async function insertAll(store: Store, events: NewEvent[], now = T0): Promise<EventRecord[]> {
  const results = await store.eventInsertMany({ events, now });
  assert.equal(results.length, events.length);
  return results.map((r: EventInsertResult, i) => {
    assert.equal(r.kind, 'created', `event ${events[i].id} should be created`);
    return r.event;
  });
}

export async function insertOne(store: Store, event: NewEvent, now = T0): Promise<EventRecord> {
  return (await insertAll(store, [event], now))[0];
}

/** Claims one event; returns the claimed record or null. */
export async function claimOne(
  store: Store,
  e: { tenantId: string; id: string; version: number },
  now: number,
  owner = OWNER_A,
): Promise<EventRecord | null> {
  const out = await store.eventClaim({
    refs: [{ tenantId: e.tenantId, id: e.id, version: e.version }],
    now,
    owner,
    leaseUntil: now + LEASE_MS,
  });
  assert.ok(out.length <= 1);
  return out[0] ?? null;
}

/** Claims one event that must be claimable. */
export async function mustClaim(store: Store, e: EventRecord, now: number, owner = OWNER_A): Promise<EventRecord> {
  const claimed = await claimOne(store, e, now, owner);
  assert.ok(claimed, `event ${e.id} should be claimed`);
  return claimed;
}

export function outcome(e: EventRecord, to: AttemptOutcome['to'], o: Partial<AttemptOutcome> = {}): AttemptOutcome {
  return {
    tenantId: e.tenantId,
    id: e.id,
    version: e.version,
    owner: e.leaseOwner ?? OWNER_A,
    to,
    durationMs: 12,
    ...o,
  };
}

/** Records one outcome that must apply; returns the event after it. */
export async function mustRecord(store: Store, o: AttemptOutcome, now: number): Promise<EventRecord> {
  const [applied] = await store.eventRecordAttempts({ outcomes: [o], now });
  assert.equal(applied, true, `outcome for ${o.id} should apply`);
  return mustGet(store, o.tenantId, o.id);
}

export async function mustGet(store: Store, tenantId: string, id: string): Promise<EventRecord> {
  const e = await store.eventGet({ tenantId, id });
  assert.ok(e, `event ${tenantId}/${id} should exist`);
  return e;
}

/** Moves an event to `archived` through a claim and a final outcome (the only way there). */
export async function archive(
  store: Store,
  e: EventRecord,
  now: number,
  to: 'archived' | 'discarded' = 'archived',
): Promise<EventRecord> {
  const claimed = await mustClaim(store, e, now);
  return mustRecord(store, outcome(claimed, to, { error: 'gave up', status: 500 }), now + 1);
}

/** Events per state over all tenants, zeros included (the sum of eventCountByTenantState). */
export async function countByState(store: Pick<Store, 'eventCountByTenantState'>): Promise<Record<EventState, number>> {
  const counts = Object.fromEntries(EVENT_STATES.map((s) => [s, 0])) as Record<EventState, number>;
  for (const r of await store.eventCountByTenantState()) counts[r.state] += r.n;
  return counts;
}

/** Runs `fn` on a store of its own, for tests that look across all tenants. */
export async function withFreshStore(
  make: MakeStore,
  fn: (store: Store, h: StoreHarness) => Promise<void>,
): Promise<void> {
  const h = await make();
  try {
    await fn(h.store, h);
  } finally {
    await h.cleanup();
  }
}
