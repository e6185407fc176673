/**
 * pg-boss 12 on the local PostgreSQL, in a fresh schema. `insert` (one statement for the batch) /
 * `send` with `startAfter = fireAt`; four `work()` pollers (each call adds one, as the docs say)
 * fetching up to 1,000 jobs per poll every 0.5 s (pg-boss's minimum polling interval), fetching
 * again at once while a fetch comes back full (`burstWhenBatchFull`, new in 12), each batch's jobs
 * delivered concurrently. Polling bounds its lateness: a job becomes visible at the next poll
 * after its startAfter (LISTEN/NOTIFY, also in 12, wakes workers when a job is created, which
 * does not help a job that falls due later).
 */
import { PgBoss } from 'pg-boss';
import { dropSchema, PG_URL } from '../../lib/pg.ts';
import type { JobData, Peer } from '../peer.ts';

const QUEUE = 'bench';
const WORKERS = 4;
const BATCH_SIZE = 1_000;
const POLLING_INTERVAL_S = 0.5;
/** Connections per pg-boss instance (its default). */
const POOL_MAX = 10;

async function open(schema: string, maintenance: boolean): Promise<PgBoss> {
  const boss = new PgBoss({ connectionString: PG_URL, schema, max: POOL_MAX, supervise: maintenance, schedule: false });
  boss.on('error', (err) => console.error('pg-boss:', err.message));
  await boss.start();
  return boss;
}

export const pgBoss: Peer = {
  info: {
    key: 'pg-boss',
    label: 'pg-boss · PostgreSQL',
    settings: `insert of 1,000 / send with startAfter; ${WORKERS} work() pollers, batchSize ${BATCH_SIZE}, pollingIntervalSeconds ${POLLING_INTERVAL_S} (the minimum), burstWhenBatchFull`,
  },
  async openDriver(schema) {
    const boss = await open(schema, false);
    await boss.createQueue(QUEUE);
    return {
      async scheduleBatch(events) {
        await boss.insert(
          QUEUE,
          events.map((e) => ({
            data: { id: e.id, fireAt: e.fireAt } satisfies JobData,
            startAfter: new Date(e.fireAt),
          })),
        );
      },
      async scheduleOne(e) {
        await boss.send(QUEUE, { id: e.id, fireAt: e.fireAt } satisfies JobData, { startAfter: new Date(e.fireAt) });
      },
      async close() {
        await boss.stop({ graceful: false });
        await dropSchema(schema);
      },
    };
  },
  async startWorker(schema, deliver) {
    const boss = await open(schema, true);
    for (let i = 0; i < WORKERS; i++) {
      await boss.work<JobData>(
        QUEUE,
        { batchSize: BATCH_SIZE, pollingIntervalSeconds: POLLING_INTERVAL_S, burstWhenBatchFull: true },
        async (jobs) => {
          await Promise.all(jobs.map((job) => deliver(job.data)));
        },
      );
    }
    return { close: () => boss.stop({ graceful: false }) };
  },
};
