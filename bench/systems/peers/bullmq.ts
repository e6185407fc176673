/**
 * BullMQ 6 delayed jobs on the local Redis. `addBulk` / `add` with `delay = fireAt - now`; a Worker
 * with concurrency 256 (the docs' local concurrency factor for I/O-bound jobs; Belfry's
 * destination gets the same 256), completed and failed jobs removed at once (the docs' advice for
 * production). Redis here runs without persistence (no AOF, no RDB), so an acknowledged add is in
 * memory only: not the durable acknowledgement that Belfry and the PostgreSQL peers give.
 */
import { Queue, Worker, type ConnectionOptions } from 'bullmq';
import { REDIS_URL } from '../../lib/pg.ts';
import type { BenchEvent } from '../system.ts';
import type { JobData, Peer, PeerDriver } from '../peer.ts';

export const QUEUE = 'bench';
export const CONCURRENCY = 256;
const JOB_OPTS = { removeOnComplete: true, removeOnFail: true };

/** A connection to the Redis at `redisUrl` (default: the machine's shared one). */
export function connection(redisUrl = REDIS_URL): ConnectionOptions {
  const url = new URL(redisUrl);
  return { host: url.hostname, port: Number(url.port || 6379), maxRetriesPerRequest: null };
}

/** The job of a bench event: a delayed job of its data, removed once done. */
export function jobOf(e: BenchEvent, now: number) {
  return {
    name: 'deliver',
    data: { id: e.id, fireAt: e.fireAt } satisfies JobData,
    opts: { ...JOB_OPTS, delay: Math.max(0, e.fireAt - now) },
  };
}

/** What both backends' queues offer the driver. */
interface AddingQueue {
  addBulk(jobs: ReturnType<typeof jobOf>[]): Promise<unknown>;
  add(name: string, data: JobData, opts: ReturnType<typeof jobOf>['opts']): Promise<unknown>;
}

/** The driver's scheduling calls on a queue of either backend (Redis here, PostgreSQL in bullmq-postgres.ts). */
export function schedulingOn(queue: AddingQueue): Pick<PeerDriver, 'scheduleBatch' | 'scheduleOne'> {
  return {
    async scheduleBatch(events) {
      const now = Date.now();
      await queue.addBulk(events.map((e) => jobOf(e, now)));
    },
    async scheduleOne(e) {
      const job = jobOf(e, Date.now());
      await queue.add(job.name, job.data, job.opts);
    },
  };
}

/** The Worker's options but the connection, the same on either backend. */
export const WORKER_OPTS = { concurrency: CONCURRENCY, removeOnComplete: { count: 0 }, removeOnFail: { count: 0 } };

export const bullmq: Peer = {
  info: {
    key: 'bullmq',
    label: 'BullMQ · Redis',
    settings: `delayed jobs (addBulk of 1,000 / add), Worker concurrency ${CONCURRENCY}, removeOnComplete; Redis without persistence`,
  },
  async openDriver(namespace) {
    const queue = new Queue(QUEUE, { connection: connection(), prefix: namespace });
    await queue.waitUntilReady();
    return {
      ...schedulingOn(queue),
      async close() {
        await queue.obliterate({ force: true });
        await queue.close();
      },
    };
  },
  async startWorker(namespace, deliver, concurrency) {
    const worker = new Worker<JobData>(QUEUE, (job) => deliver(job.data), {
      connection: connection(),
      prefix: namespace,
      ...WORKER_OPTS,
      concurrency: concurrency ?? CONCURRENCY,
    });
    worker.on('error', (err) => console.error('bullmq worker:', err.message));
    await worker.waitUntilReady();
    return { close: () => worker.close() };
  },
};
