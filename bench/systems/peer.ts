/**
 * A peer (BullMQ on Redis or PostgreSQL, pg-boss, graphile-worker) as a System. The bench process is the peer's client
 * (its library schedules jobs straight into Redis or PostgreSQL, as an application would); the
 * peer's worker runs in a child process of its own (peer-worker-child.ts), as Belfry's node does,
 * and POSTs each job's data to the receiver.
 *
 * Each run gets a fresh namespace (a Redis key prefix or a PostgreSQL schema), removed by stop().
 */
import type { ChildProcess } from 'node:child_process';
import { forkTs } from '../lib/fork-ts.ts';
import { peakRssBytes, processCpuSeconds } from '../lib/machine.ts';
import { freshSchemaName } from '../lib/pg.ts';
import type { BenchEvent, System, SystemInfo, SystemKey, SystemOptions } from './system.ts';

/** What a worker POSTs: the job's data. */
export interface JobData {
  id: string;
  fireAt: number;
}

/** The client side, in the bench process. */
export interface PeerDriver {
  /** One call carrying every event (addBulk / insert / addJobs); throws when not acknowledged. */
  scheduleBatch(events: BenchEvent[]): Promise<void>;
  scheduleOne(event: BenchEvent): Promise<void>;
  /** Closes connections and removes the namespace. */
  close(): Promise<void>;
}

export interface PeerWorker {
  close(): Promise<void>;
}

export interface Peer {
  info: SystemInfo;
  /** Creates the namespace (queue, schema) and connects a client. */
  openDriver(namespace: string): Promise<PeerDriver>;
  /**
   * In the worker child: starts a worker that calls `deliver` for each job due; `concurrency`, when
   * given, is its jobs in flight at most where the peer has such a setting (the child also holds
   * its POSTs to that many at once).
   */
  startWorker(namespace: string, deliver: (data: JobData) => Promise<void>, concurrency?: number): Promise<PeerWorker>;
}

export type PeerKey = Exclude<SystemKey, 'belfry-sqlite' | 'belfry-postgres'>;

/** Loaded on demand, so a run without a peer never imports its library. */
export async function loadPeer(key: PeerKey): Promise<Peer> {
  switch (key) {
    case 'bullmq':
      return (await import('./peers/bullmq.ts')).bullmq;
    case 'bullmq-postgres':
      return (await import('./peers/bullmq-postgres.ts')).bullmqPostgres;
    case 'pg-boss':
      return (await import('./peers/pg-boss.ts')).pgBoss;
    case 'graphile-worker':
      return (await import('./peers/graphile-worker.ts')).graphileWorker;
  }
}

const CHILD = new URL('./peer-worker-child.ts', import.meta.url);
const START_MS_MAX = 60_000;
const STOP_MS_MAX = 15_000;

export type WorkerChildMessage = { type: 'ready' } | { type: 'error'; message: string };

function startWorkerChild(
  key: PeerKey,
  namespace: string,
  receiverUrl: string,
  concurrency: number | undefined,
): Promise<ChildProcess> {
  const child = forkTs(CHILD, [key, namespace, receiverUrl, String(concurrency ?? '')]);
  return new Promise((resolve, reject) => {
    const fail = (err: Error) => {
      clearTimeout(timer);
      child.kill('SIGKILL');
      reject(err);
    };
    const timer = setTimeout(
      () => fail(new Error(`${key} worker did not start within ${START_MS_MAX}ms`)),
      START_MS_MAX,
    );
    child.once('exit', (code) => fail(new Error(`${key} worker exited before ready (code ${code})`)));
    child.once('message', (msg: WorkerChildMessage) => {
      if (msg.type !== 'ready') return fail(new Error(`${key} worker: ${msg.message}`));
      clearTimeout(timer);
      child.removeAllListeners('exit');
      resolve(child);
    });
  });
}

async function stopWorkerChild(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  if (child.connected) child.send({ type: 'close' });
  const timer = setTimeout(() => child.kill('SIGKILL'), STOP_MS_MAX);
  await exited;
  clearTimeout(timer);
}

export async function startPeer(key: PeerKey, opts: SystemOptions): Promise<System> {
  const peer = await loadPeer(key);
  const namespace = freshSchemaName(key);
  const driver = await peer.openDriver(namespace);
  let child: ChildProcess | null = null;
  try {
    if (opts.receiverUrl !== null)
      child = await startWorkerChild(key, namespace, opts.receiverUrl, opts.maxConcurrency);
  } catch (err) {
    await driver.close();
    throw err;
  }
  return {
    info:
      opts.maxConcurrency === undefined
        ? peer.info
        : { ...peer.info, settings: `${peer.info.settings}; at most ${opts.maxConcurrency} jobs in flight` },
    async scheduleBatch(events, tally) {
      try {
        await driver.scheduleBatch(events);
        tally.acknowledged += events.length;
      } catch (err) {
        tally.failed += events.length;
        tally.error ??= String(err);
      }
    },
    scheduleOne: (e) => driver.scheduleOne(e),
    cpuSeconds: () => (child ? processCpuSeconds(child.pid) : NaN),
    peakRssBytes: () => (child ? peakRssBytes(child.pid) : NaN),
    async stop() {
      if (child) await stopWorkerChild(child);
      await driver.close();
    },
  };
}
