/**
 * What a run starts from: its tenants, their destinations (three webhook destinations with their
 * remote parties, and a pull destination), and its schedules (a few of each tenant, and with the
 * `catchup` workload one tenant's 150 schedules half a day behind beside another tenant's on time).
 */
import type { ScheduleRecord } from '../../src/store/schedules.ts';
import type { Store } from '../../src/store/store.ts';
import type { Belfry } from './belfry.ts';
import { destinationUrl, type Remote } from './remote.ts';
import { NODE_SETTINGS } from './sim-node.ts';
import type { Prng } from './world.ts';

/** The store's clock when a run begins. */
export const STORE_EPOCH_MS = Date.UTC(2026, 5, 1, 12, 0, 0);
/** Every destination's retry policy: short, so that a run sees attempts spent. */
export const RETRY = { maxAttempts: 4, minBackoffMs: 200, maxBackoffMs: 2_000, coefficient: 2 };
/** The schedules' missedAfter. */
export const MISSED_AFTER_MS = 1_000;
/** The pull destination of each tenant. */
export const PULL_DEST = 'inbox';
/**
 * The `catchup` workload: one tenant's schedules this far behind (its cluster was down for half a
 * day), most of them a cron every second (`* * * * * *`), the rest `every: 1s`. More schedules
 * than one page of the due list, and a late stretch of 43,200 occurrences each: a materialiser
 * that serves the oldest cursors first, or walks a cron's late stretch one occurrence at a time,
 * spends thousands of store calls before it reaches another tenant's on-time schedule.
 */
export const CATCH_UP_BEHIND_MS = 12 * 3_600_000;
export const CATCH_UP_CRON_SCHEDULES = 120;
export const CATCH_UP_EVERY_SCHEDULES = 30;

/** Tenants whose events the clients make ('tc' only has the catch-up schedules). */
export const TENANTS = ['ta', 'tb'];

export interface DestSpec {
  name: string;
  maxConcurrency: number;
  timeoutMs: number;
  failRate: number;
  discardRate: number;
  latencyMs: [number, number];
}

export const DESTS: DestSpec[] = [
  { name: 'fast', maxConcurrency: 4, timeoutMs: 2_000, failRate: 0.05, discardRate: 0, latencyMs: [2, 60] },
  { name: 'flaky', maxConcurrency: 2, timeoutMs: 1_000, failRate: 0.35, discardRate: 0.03, latencyMs: [5, 1_400] },
  { name: 'slow', maxConcurrency: 1, timeoutMs: 3_000, failRate: 0.1, discardRate: 0, latencyMs: [100, 2_500] },
];

/** The pull destination's stored config. */
export const PULL_CONFIG = {
  kind: 'pull' as const,
  headers: {},
  timeoutMs: 10_000,
  retry: RETRY,
  rateLimitPerSecond: null,
  maxConcurrency: 1,
};

export interface ScheduleSpecSim {
  tenantId: string;
  id: string;
  /** Its occurrences are startAt + k·everyMs; a cron schedule gives the cron that makes the same ones. */
  everyMs: number;
  cron?: string;
  startAt: number;
  endAt: number;
  missed: 'skip' | 'fire-once' | 'fire-all';
  catchUpMax: number;
  /** Its occurrences must all fire on time (the fairness check). */
  onTime: boolean;
}

const SECRET = { secret: 'whsec_c2ltdWxhdGlvbi1zZWNyZXQtMDEyMzQ1Njc4OQ==', expiresAt: null };

/** Tenants and their destinations, in the store and as remote parties. */
export async function setupTenants(real: Store, remote: Remote): Promise<void> {
  for (const t of [...TENANTS, 'tc']) {
    await real.tenantCreate({ id: t, name: t, settings: {}, createdAt: STORE_EPOCH_MS, signingSecrets: [SECRET] });
    for (const d of DESTS) {
      const host = `${t}-${d.name}`;
      remote.add({
        name: host,
        maxConcurrency: d.maxConcurrency,
        failRate: d.failRate,
        discardRate: d.discardRate,
        latencyMs: d.latencyMs,
        hangUntilMs: 0,
      });
      await real.destinationPut({
        destination: {
          tenantId: t,
          name: d.name,
          secrets: [SECRET],
          createdAt: STORE_EPOCH_MS,
          updatedAt: STORE_EPOCH_MS,
          config: {
            kind: 'http',
            url: destinationUrl(host),
            headers: {},
            timeoutMs: d.timeoutMs,
            retry: RETRY,
            rateLimitPerSecond: null,
            maxConcurrency: d.maxConcurrency,
          },
        },
      });
    }
    // A pull destination: its events wait for consumers.
    await real.destinationPut({
      destination: {
        tenantId: t,
        name: PULL_DEST,
        secrets: [SECRET],
        createdAt: STORE_EPOCH_MS,
        updatedAt: STORE_EPOCH_MS,
        config: PULL_CONFIG,
      },
    });
  }
}

/** The run's schedules, stored as the API stores a new one (its cursor at its first occurrence). */
export async function setupSchedules(
  real: Store,
  belfry: Belfry,
  rand: Prng,
  endAt: number,
  catchup: boolean,
): Promise<ScheduleSpecSim[]> {
  const schedules: ScheduleSpecSim[] = [];
  const add = async (s: ScheduleSpecSim) => {
    schedules.push(s);
    const template = {
      destination: { name: 'fast' },
      payload: `{"schedule":"${s.id}"}`,
      headers: {},
      group: null,
      retry: null,
      expireAfterMs: null,
      tags: {},
      type: null,
    };
    const record: ScheduleRecord = {
      tenantId: s.tenantId,
      id: s.id,
      shard: belfry.shard.shardOf(s.tenantId, s.id, NODE_SETTINGS.shardCount),
      version: 1,
      paused: false,
      spec: {
        cron: s.cron ?? null,
        everyMs: s.cron ? null : s.everyMs,
        timezone: 'UTC',
        startAt: s.startAt,
        endAt: s.endAt,
        missed: s.missed,
        catchUpMax: s.catchUpMax,
        missedAfterMs: MISSED_AFTER_MS,
        template,
        input: s.cron ? { cron: s.cron } : { every: s.everyMs },
      },
      nextAt: s.startAt,
      // An older tree's store (--src) still writes catch_up_left from the record; the current one ignores it.
      ...{ catchUpLeft: s.catchUpMax },
      firedCount: 0,
      missedCount: 0,
      lastOccurrenceAt: null,
      lastMissed: null,
      createdAt: STORE_EPOCH_MS,
      updatedAt: STORE_EPOCH_MS,
    };
    const r = await real.scheduleCreate({ schedule: record, perTenantMax: 1_000 });
    if (r.kind !== 'created') throw new Error(`schedule ${s.id}: ${r.kind}`);
  };
  const count = rand.int(1, 3);
  for (let i = 0; i < count; i++) {
    await add({
      tenantId: rand.pick(TENANTS),
      id: `sch${i}`,
      everyMs: rand.pick([1_000, 2_000, 3_000]),
      startAt: STORE_EPOCH_MS + 2_000 + rand.int(0, 999),
      endAt,
      missed: rand.pick(['skip', 'fire-once', 'fire-all'] as const),
      catchUpMax: 3,
      onTime: false,
    });
  }
  if (catchup) {
    // One tenant's schedules half a day behind (its cluster was down); another tenant's on time.
    // A cron schedule starts on a whole second, so that its occurrences are startAt + k·1s.
    for (let i = 0; i < CATCH_UP_CRON_SCHEDULES + CATCH_UP_EVERY_SCHEDULES; i++) {
      const cron = i < CATCH_UP_CRON_SCHEDULES;
      await add({
        tenantId: 'tc',
        id: `late${i}`,
        everyMs: 1_000,
        cron: cron ? '* * * * * *' : undefined,
        startAt: STORE_EPOCH_MS - CATCH_UP_BEHIND_MS + (cron ? 0 : i),
        endAt,
        missed: rand.pick(['skip', 'fire-once', 'fire-all'] as const),
        catchUpMax: 3,
        onTime: false,
      });
    }
    await add({
      tenantId: 'tb',
      id: 'ontime',
      everyMs: 1_000,
      startAt: STORE_EPOCH_MS + 3_000,
      endAt,
      missed: 'skip',
      catchUpMax: 1,
      onTime: true,
    });
  }
  return schedules;
}
