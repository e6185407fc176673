/**
 * An in-process API over a real SQLite store in a fresh temp dir, for `app.inject()` tests.
 * No scheduler runs: events stay where the API leaves them, and tests move them with the store.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { FastifyInstance } from 'fastify';
import pino from 'pino';
import { createApp } from '../../src/api/app.ts';
import { DEFAULT_API_LIMITS, type ApiLimits, type AppDeps } from '../../src/api/deps.ts';
import { AddressPolicy } from '../../src/core/address.ts';
import { SimClock, SteadyClock } from '../../src/core/clock.ts';
import type { EventRecord } from '../../src/core/event.ts';
import { EventBus } from '../../src/core/event-sink.ts';
import { RETENTION_DEFAULTS } from '../../src/core/retention.ts';
import { Metrics } from '../../src/node/metrics.ts';
import { belfryVersion } from '../../src/node/version.ts';
import { CountSampler } from '../../src/maintenance/count-sampler.ts';
import { GroupCommitter } from '../../src/store/group-commit.ts';
import { openSqliteStore, type SqliteStore } from '../../src/store/sqlite/sqlite-store.ts';
import { openPostgresStore } from '../../src/store/postgres/postgres-store.ts';
import type { Store } from '../../src/store/store.ts';
import { dropTestSchema, TEST_PG_URL } from './pg.ts';
import { randomBytes } from 'node:crypto';
import { PullWaiters } from '../../src/pull/waiters.ts';
import { EventIntake } from '../../src/api/intake.ts';
import { SourceIngest } from '../../src/api/source-ingest.ts';
import { TenantQuotas } from '../../src/api/tenant-quotas.ts';
import type { Clock } from '../../src/core/clock.ts';

export const ADMIN_KEY = 'admin-test-key-0123456789abcdef';

export interface TestApp<S extends Store = SqliteStore> {
  app: FastifyInstance;
  deps: AppDeps;
  /** deps.metrics as the node's prom-client class, whose values a test can read. */
  metrics: Metrics;
  store: S;
  clock: SimClock;
  /** Keys of tenants A and B, made through the admin API. */
  tenantKey: string;
  tenantKeyB: string;
  tenantId: string;
  tenantIdB: string;
  /** Every batch of events the API told its bus had changed, in order. */
  changed: EventRecord[][];
  /** Every (tenantId, name) passed to onDestinationChanged. */
  destinationsChanged: [string, string][];
  /** Every tenantId passed to onTenantSecretsChanged. */
  tenantSecretsChanged: string[];
  cleanup(): Promise<void>;
}

export interface TestAppOptions<S extends Store = SqliteStore> {
  limits?: Partial<ApiLimits>;
  ready?: AppDeps['ready'];
  /** --allow-hosts; default loopback, as the tests' receivers listen there. */
  allowHosts?: string[];
  /** Default: silent. */
  logger?: AppDeps['logger'];
  /** The access log (one line per request to `logger`); default off, as on a node. */
  accessLog?: boolean;
  /** Default: a GroupCommitter over the store with the default bounds. */
  writer?: (store: S, clock: SimClock) => AppDeps['writer'];
}

/**
 * A Kafka source's sink on the test app's store and writer, with quotas of its own (as the node
 * wires one: an event intake over the plain store).
 */
export function sourceIngestOf(
  t: TestApp<Store>,
  clock: Clock,
  messageBytesMax: number,
  onEventsCreated: (events: EventRecord[]) => void,
): SourceIngest {
  const quotas = new TenantQuotas(t.store, clock, t.deps.limits, t.deps.counts);
  const intake = new EventIntake({
    clock,
    shardCount: 16,
    addressPolicy: t.deps.addressPolicy,
    destinations: t.store,
    quotas,
    writer: t.deps.writer,
    metrics: t.deps.metrics,
    events: { changed: onEventsCreated },
  });
  return new SourceIngest({ intake, quotas, messageBytesMax });
}

export function bearer(key: string): Record<string, string> {
  return { authorization: `Bearer ${key}` };
}

async function makeTenant(app: FastifyInstance, name: string): Promise<{ id: string; key: string }> {
  const t = await app.inject({ method: 'POST', url: '/v1/tenants', headers: bearer(ADMIN_KEY), payload: { name } });
  if (t.statusCode !== 201) throw new Error(`tenant create failed: ${t.statusCode} ${t.body}`);
  const id = t.json().id as string;
  const k = await app.inject({ method: 'POST', url: `/v1/tenants/${id}/keys`, headers: bearer(ADMIN_KEY) });
  if (k.statusCode !== 201) throw new Error(`key create failed: ${k.statusCode} ${k.body}`);
  return { id, key: k.json().key as string };
}

export async function makeTestApp(opts: TestAppOptions = {}): Promise<TestApp> {
  const dataDir = mkdtempSync(join(tmpdir(), 'belfry-api-'));
  const store = await openSqliteStore({ dataDir });
  return makeTestAppOn(store, async () => rmSync(dataDir, { recursive: true, force: true }), opts);
}

/** The test app over PostgreSQL, in a schema of its own (dropped by cleanup). */
export async function makePostgresTestApp(opts: TestAppOptions = {}): Promise<TestApp<Store>> {
  const schema = `belfry_api_${randomBytes(4).toString('hex')}`;
  const store = await openPostgresStore({ url: TEST_PG_URL, schema, poolSize: 4 });
  return makeTestAppOn<Store>(store, () => dropTestSchema(schema), opts as TestAppOptions<Store>);
}

/** Which store the API tests of a feature run on: both backends. */
export const TEST_BACKENDS: [string, (opts?: TestAppOptions) => Promise<TestApp<Store>>][] = [
  ['sqlite', makeTestApp],
  ['postgres', makePostgresTestApp],
];

async function makeTestAppOn<S extends Store>(
  store: S,
  removeStore: () => Promise<void>,
  opts: TestAppOptions<S>,
): Promise<TestApp<S>> {
  const clock = new SimClock(Date.UTC(2026, 0, 1, 12, 0, 0));
  const changed: EventRecord[][] = [];
  const events = new EventBus();
  events.listen({ changed: (e) => changed.push(e) });
  // Parked pull claims, woken by the bus as the node's are.
  const pullWaiters = new PullWaiters(clock, { parkedPerTenantMax: 2 });
  events.listen({ changed: (e) => pullWaiters.wakeEvents(e), pullSettled: (e) => pullWaiters.wakeEvents(e) });
  const logger = opts.logger ?? pino({ level: 'silent' });
  // Sampled once here, on the empty store: tests that read metrics sample again themselves.
  const counts = new CountSampler({ store, clock, logger });
  await counts.runOnce();
  const destinationsChanged: [string, string][] = [];
  const tenantSecretsChanged: string[] = [];
  const metrics = new Metrics();
  const deps: AppDeps = {
    store,
    clock,
    leaseClock: new SteadyClock(clock),
    writer: opts.writer ? opts.writer(store, clock) : new GroupCommitter(store, () => clock.now()),
    events,
    onDestinationChanged: (tenantId, name) => destinationsChanged.push([tenantId, name]),
    onTenantSecretsChanged: (tenantId) => tenantSecretsChanged.push(tenantId),
    metrics,
    version: belfryVersion(),
    counts,
    logger,
    accessLog: opts.accessLog,
    adminKey: ADMIN_KEY,
    shardCount: 16,
    limits: { ...DEFAULT_API_LIMITS, ...opts.limits },
    retention: RETENTION_DEFAULTS,
    addressPolicy: new AddressPolicy(opts.allowHosts ?? ['127.0.0.1', '::1']),
    ready: opts.ready ?? (async () => ({ ok: true, reasons: [] })),
    pullWaiters,
  };
  const app = await createApp(deps);
  const a = await makeTenant(app, 'tenant-a');
  const b = await makeTenant(app, 'tenant-b');
  return {
    app,
    deps,
    metrics,
    store,
    clock,
    tenantKey: a.key,
    tenantKeyB: b.key,
    tenantId: a.id,
    tenantIdB: b.id,
    changed,
    destinationsChanged,
    tenantSecretsChanged,
    async cleanup() {
      await app.close();
      await store.close();
      await removeStore();
    },
  };
}

const OWNER = 'test-node';

/**
 * Moves an event as the scheduler and dispatcher would: `executing` (claimed), then optionally
 * to an attempt outcome. Returns the event after the last step.
 */
export async function moveEvent(
  store: Store,
  tenantId: string,
  id: string,
  to: 'executing' | 'succeeded' | 'discarded' | 'archived' | 'awaiting_retry',
  now: number,
): Promise<EventRecord> {
  const current = await store.eventGet({ tenantId, id });
  if (!current) throw new Error(`moveEvent: no event ${id}`);
  const [claimed] = await store.eventClaim({
    refs: [{ tenantId, id, version: current.version }],
    now,
    owner: OWNER,
    leaseUntil: now + 60_000,
  });
  if (!claimed) throw new Error(`moveEvent: could not claim ${id} (state ${current.state})`);
  if (to === 'executing') return claimed;
  const [applied] = await store.eventRecordAttempts({
    outcomes: [
      {
        tenantId,
        id,
        version: claimed.version,
        owner: OWNER,
        to,
        durationMs: 5,
        status: to === 'succeeded' ? 200 : 500,
        retryAt: now + 1_000,
      },
    ],
    now,
  });
  if (!applied) throw new Error(`moveEvent: could not record ${to} for ${id}`);
  return (await store.eventGet({ tenantId, id }))!;
}
