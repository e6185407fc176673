/**
 * graphile-worker 0.18 on the local PostgreSQL, in a fresh schema. `addJobs` (one call for the
 * batch) / `addJob` with `runAt = fireAt`; `run()` with the settings of the docs' performance
 * page (concurrentJobs 24, maxPoolSize 25, localQueue of 500, completeJobBatchDelay and
 * failJobBatchDelay 0). New jobs due now reach the worker by LISTEN/NOTIFY, but jobs due in the
 * future are found by polling: pollInterval is 100 ms (default 2 s; the docs advise a shorter
 * interval where future jobs must start promptly), which bounds its lateness.
 */
import { Logger, makeWorkerUtils, run, type Runner, type WorkerUtils } from 'graphile-worker';
import { dropSchema, PG_URL } from '../../lib/pg.ts';
import type { BenchEvent } from '../system.ts';
import type { JobData, Peer } from '../peer.ts';

const TASK = 'deliver';
const CONCURRENCY = 24;
const MAX_POOL_SIZE = 25;
const LOCAL_QUEUE_SIZE = 500;
const POLL_INTERVAL_MS = 100;

/** Errors only: its info lines per job would cost CPU and flood the bench's output. */
const logger = new Logger(() => (level, message) => {
  if (level === 'error') console.error(`graphile-worker: ${message}`);
});

function jobData(e: BenchEvent): JobData {
  return { id: e.id, fireAt: e.fireAt };
}

export const graphileWorker: Peer = {
  info: {
    key: 'graphile-worker',
    label: 'graphile-worker · PostgreSQL',
    settings: `addJobs of 1,000 / addJob with runAt; concurrency ${CONCURRENCY}, maxPoolSize ${MAX_POOL_SIZE}, localQueue ${LOCAL_QUEUE_SIZE}, completeJobBatchDelay 0, pollInterval ${POLL_INTERVAL_MS} ms`,
  },
  async openDriver(schema) {
    const utils: WorkerUtils = await makeWorkerUtils({ connectionString: PG_URL, schema, logger });
    await utils.migrate();
    return {
      async scheduleBatch(events) {
        await utils.addJobs(events.map((e) => ({ identifier: TASK, payload: jobData(e), runAt: new Date(e.fireAt) })));
      },
      async scheduleOne(e) {
        await utils.addJob(TASK, jobData(e), { runAt: new Date(e.fireAt) });
      },
      async close() {
        await utils.release();
        await dropSchema(schema);
      },
    };
  },
  async startWorker(schema, deliver, concurrency) {
    const runner: Runner = await run({
      connectionString: PG_URL,
      schema,
      concurrency: concurrency ?? CONCURRENCY,
      maxPoolSize: MAX_POOL_SIZE,
      pollInterval: POLL_INTERVAL_MS,
      noHandleSignals: true,
      logger,
      taskList: { [TASK]: (payload) => deliver(payload as JobData) },
      preset: { worker: { localQueue: { size: LOCAL_QUEUE_SIZE }, completeJobBatchDelay: 0, failJobBatchDelay: 0 } },
    });
    return { close: () => runner.stop() };
  },
};
