/**
 * BullMQ 6 on its PostgreSQL backend (`createPostgresBackend`), in a fresh schema of the local
 * PostgreSQL: the same Queue and Worker as the Redis peer (bullmq.ts: `addBulk` / `add` with
 * `delay = fireAt - now`, Worker concurrency 256, jobs removed once done), on the same server as
 * Belfry's PostgreSQL store and the other PostgreSQL peers.
 */
import { createPostgresBackend, withBackend } from 'bullmq';
import { dropSchema, PG_URL } from '../../lib/pg.ts';
import type { JobData, Peer } from '../peer.ts';
import { CONCURRENCY, QUEUE, schedulingOn, WORKER_OPTS } from './bullmq.ts';

const { Queue, Worker } = withBackend(createPostgresBackend);

// The schema is created by BullMQ's own migrations, run on first connect (`migrate: true`).
const connection = (schema: string) => ({ connectionString: PG_URL, schema, migrate: true });

export const bullmqPostgres: Peer = {
  info: {
    key: 'bullmq-postgres',
    label: 'BullMQ · PostgreSQL',
    settings: `BullMQ's PostgreSQL backend: delayed jobs (addBulk of 1,000 / add), Worker concurrency ${CONCURRENCY}, removeOnComplete`,
  },
  async openDriver(schema) {
    const queue = new Queue(QUEUE, { connection: connection(schema) });
    await queue.waitUntilReady();
    return {
      ...schedulingOn(queue),
      async close() {
        await queue.close();
        await dropSchema(schema);
      },
    };
  },
  async startWorker(schema, deliver, concurrency) {
    const worker = new Worker<JobData>(QUEUE, (job) => deliver(job.data), {
      connection: connection(schema),
      ...WORKER_OPTS,
      concurrency: concurrency ?? CONCURRENCY,
    });
    worker.on('error', (err) => console.error('bullmq (postgres) worker:', err.message));
    await worker.waitUntilReady();
    return { close: () => worker.close() };
  },
};
