/**
 * The `bulk` workload: bulk jobs shared fairly between tenants. One tenant starts more large jobs
 * than the cluster has nodes (BULK_BIG_JOBS of BULK_BIG_JOB_EVENTS events each, a cancel of a
 * group's events due tomorrow), then another tenant starts a job of one event. Its promise: the
 * small job is done within BULK_SMALL_DONE_MS of its creation, whatever the large ones still have
 * to do (a runner that ran one job at a time to its end made it wait behind one of them).
 *
 * The jobs are made as the API makes them (store.bulkJobCreate through a node, the per-tenant
 * limit of running jobs left to the API, which is not simulated); the nodes' bulk runners run them.
 */
import type { BulkJobRecord, NewEvent, Store } from '../../src/store/store.ts';
import type { Belfry } from './belfry.ts';
import type { RunContext, SimCluster } from './cluster.ts';
import type { History } from './history.ts';
import { NODE_SETTINGS } from './sim-node.ts';
import { STORE_EPOCH_MS } from './setup.ts';
import type { Prng } from './world.ts';

/** More large jobs than a run has nodes (3 to 5), so that every runner has one when the small job comes. */
export const BULK_BIG_JOBS = 6;
export const BULK_BIG_JOB_EVENTS = 20_000;
export const BULK_BIG_TENANT = 'tc';
export const BULK_SMALL_TENANT = 'tb';
/**
 * The small job is done within this of its creation: an idle runner looks for jobs every second
 * (BulkRunner intervalMs), a busy one at each turn; half a second more for the steps and the trips.
 */
export const BULK_SMALL_DONE_MS = 1_500;
/** When the large jobs are made, and the small one (simulated ms from the start). */
const BIG_AT_MS = 2_000;
const SMALL_AT_MS = 4_000;
/** The events the jobs cancel are due tomorrow: nothing fires them meanwhile. */
const DUE_MS = STORE_EPOCH_MS + 86_400_000;

function event(belfry: Belfry, tenantId: string, id: string, group: string): NewEvent {
  return {
    tenantId,
    id,
    shard: belfry.shard.shardOf(tenantId, group, NODE_SETTINGS.shardCount),
    fireAt: DUE_MS,
    destination: { name: 'fast' },
    payload: '{}',
    headers: {},
    group,
    retry: null,
    expireAt: null,
    tags: {},
    requestHash: `h:${id}`,
  };
}

/** Stores the jobs' events (as acknowledged creates) before the run starts. */
export async function setupBulkEvents(real: Store, belfry: Belfry, history: History): Promise<void> {
  const add = async (events: NewEvent[]) => {
    await real.eventInsertMany({ events, now: STORE_EPOCH_MS });
    // Their cancel is asked for, by a bulk job: canceled is their explained end.
    for (const e of events) history.event(e.tenantId, e.id, { group: e.group, origin: 'setup', cancelSent: true });
  };
  for (let j = 0; j < BULK_BIG_JOBS; j++) {
    for (let i = 0; i < BULK_BIG_JOB_EVENTS; i += 1_000) {
      const n = Math.min(1_000, BULK_BIG_JOB_EVENTS - i);
      await add(Array.from({ length: n }, (_, k) => event(belfry, BULK_BIG_TENANT, `bulk${j}-${i + k}`, `bulk${j}`)));
    }
  }
  await add([event(belfry, BULK_SMALL_TENANT, 'bulk-small-0', 'bulk-small')]);
}

function job(tenantId: string, id: string, group: string, now: number): BulkJobRecord {
  return {
    tenantId,
    id,
    state: 'running',
    filter: { group },
    action: { kind: 'cancel' },
    cursor: null,
    matched: 0,
    done: 0,
    skipped: 0,
    errors: [],
    leaseOwner: null,
    leaseUntil: null,
    createdAt: now,
    updatedAt: now,
    finishedAt: null,
  };
}

/** Makes the large jobs, then the small one, through nodes picked by the seed; returns the small job's key once made. */
export function startBulkJobs(
  ctx: RunContext,
  cluster: SimCluster,
  rand: Prng,
): { small: { tenantId: string; id: string; createdAt: number } | null } {
  const out: { small: { tenantId: string; id: string; createdAt: number } | null } = { small: null };
  const create = (record: BulkJobRecord, then: () => void) => {
    const node = cluster.apiNode(rand);
    if (!node) return void ctx.world.timer(null, 100, () => create(record, then));
    node.link.call('bulkJobCreate', [{ job: record, runningMax: BULK_BIG_JOBS }], true).then(
      (made) => {
        ctx.trace(`bulk job ${record.tenantId}/${record.id} made through ${node.label}: ${String(made)}`);
        if (made) then();
      },
      (err: unknown) => {
        ctx.trace(
          `bulk job ${record.tenantId}/${record.id} through ${node.label} failed: ${(err as Error).message}; again`,
        );
        ctx.world.timer(null, 100, () => create(record, then));
      },
    );
  };
  ctx.world.timer(null, BIG_AT_MS, () => {
    for (let j = 0; j < BULK_BIG_JOBS; j++)
      create(job(BULK_BIG_TENANT, `bulk_big${j}`, `bulk${j}`, ctx.world.storeNow()), () => {});
  });
  ctx.world.timer(null, SMALL_AT_MS, () => {
    const record = job(BULK_SMALL_TENANT, 'bulk_small', 'bulk-small', ctx.world.storeNow());
    create(record, () => (out.small = { tenantId: record.tenantId, id: record.id, createdAt: record.createdAt }));
  });
  return out;
}

/** The small job: done, within BULK_SMALL_DONE_MS of its creation; every large job done. */
export async function checkBulk(
  real: Store,
  history: History,
  small: { tenantId: string; id: string; createdAt: number } | null,
  trace: (line: string) => void,
): Promise<void> {
  if (!small) return history.violate('fairness', `${BULK_SMALL_TENANT}'s bulk job was never made`);
  const rec = await real.bulkJobGet(small);
  if (!rec || rec.state !== 'succeeded' || rec.finishedAt === null) {
    return history.violate('fairness', `${small.tenantId}/${small.id} is ${rec?.state ?? 'gone'} at the end`);
  }
  const tookMs = rec.finishedAt - small.createdAt;
  trace(`bulk: ${small.tenantId}/${small.id} done ${tookMs} ms after it was made`);
  if (tookMs > BULK_SMALL_DONE_MS || rec.done !== 1) {
    history.violate(
      'fairness',
      `${small.tenantId}/${small.id} (1 event) took ${tookMs} ms and changed ${rec.done} while ${BULK_BIG_TENANT}'s ${BULK_BIG_JOBS} jobs of ${BULK_BIG_JOB_EVENTS} events ran; bound ${BULK_SMALL_DONE_MS} ms`,
    );
  }
  for (let j = 0; j < BULK_BIG_JOBS; j++) {
    const big = await real.bulkJobGet({ tenantId: BULK_BIG_TENANT, id: `bulk_big${j}` });
    if (big?.state !== 'succeeded')
      history.violate('lost', `${BULK_BIG_TENANT}/bulk_big${j} is ${big?.state ?? 'gone'} at the end`);
  }
}
