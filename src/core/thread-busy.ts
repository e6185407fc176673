/**
 * Busy time of the node's threads, for /metrics (belfry_thread_busy_seconds_total): the time each
 * thread's event loop was not waiting for work (performance.eventLoopUtilization's `active`, which
 * counts synchronous work too: SQLite's statements and fsyncs, a delivery thread's TLS and
 * signing). The thread whose rate nears 1 second per second is the one that bounds the node
 * (docs/operations.md): the store thread while ingesting, the event loop or a delivery thread
 * while firing.
 */
import { performance } from 'node:perf_hooks';
import type { Worker } from 'node:worker_threads';

export interface BusyThread {
  /** The `thread` label: event-loop, sqlite-store, delivery-0, ... */
  name: string;
  /** The thread itself (its Worker): a thread started again under the same name counts from zero. */
  key: object;
  /** Milliseconds busy since the thread started. */
  activeMs(): number;
}

/** What runs threads of its own names them (SqliteThreadStore, HttpThreadChannel). */
export interface HasBusyThreads {
  busyThreads(): BusyThread[];
}

const EVENT_LOOP = {};

export function eventLoopThread(): BusyThread {
  return { name: 'event-loop', key: EVENT_LOOP, activeMs: () => performance.eventLoopUtilization().active };
}

export function workerThread(name: string, worker: Worker): BusyThread {
  return { name, key: worker, activeMs: () => worker.performance.eventLoopUtilization().active };
}

/** The threads of `owner` if it names any (a store or channel without threads names none). */
export function busyThreadsOf(owner: unknown): BusyThread[] {
  const named = owner as Partial<HasBusyThreads> | null | undefined;
  return typeof named?.busyThreads === 'function' ? named.busyThreads() : [];
}
