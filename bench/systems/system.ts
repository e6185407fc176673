/**
 * The seam between scenarios and the systems they measure: Belfry on SQLite or PostgreSQL, and
 * the peers (BullMQ, pg-boss, graphile-worker). A scenario schedules `BenchEvent`s through a
 * `System` and reads what arrived at its receiver; it never knows which system it drives.
 *
 * Every system delivers an event by POSTing `{ id?, fireAt }` to the same loopback receiver with
 * the event's id in the `webhook-id` header, so lateness (receivedAt - fireAt) is measured the
 * same way for all of them.
 */
import type { BatchTally } from '../lib/schedule.ts';

export interface BenchEvent {
  /** Unique within a run; the receiver de-duplicates by it. */
  id: string;
  /** Due time, epoch ms. */
  fireAt: number;
}

export type SystemKey =
  | 'belfry-sqlite'
  | 'belfry-postgres'
  | 'bullmq'
  | 'bullmq-postgres'
  | 'pg-boss'
  | 'graphile-worker';

export const SYSTEM_KEYS: readonly SystemKey[] = [
  'belfry-sqlite',
  'belfry-postgres',
  'bullmq',
  'bullmq-postgres',
  'pg-boss',
  'graphile-worker',
];

/**
 * The process name of each system's database server, whose CPU counts toward its CPU per event;
 * null for Belfry on SQLite (the database runs inside the node).
 */
export const DATABASE_SERVER: Readonly<Record<SystemKey, 'postgres' | 'redis-server' | null>> = {
  'belfry-sqlite': null,
  'belfry-postgres': 'postgres',
  bullmq: 'redis-server',
  'bullmq-postgres': 'postgres',
  'pg-boss': 'postgres',
  'graphile-worker': 'postgres',
};

export interface SystemInfo {
  key: SystemKey;
  /** For tables: "Belfry · SQLite", "BullMQ · Redis". */
  label: string;
  /** The settings used, as one line for the report. */
  settings: string;
}

export interface SystemOptions {
  /** Where fired events are POSTed; null when the scenario fires nothing (ingest). */
  receiverUrl: string | null;
  /** A broker destination body (`--channel`) to deliver to instead of the receiver's URL (Belfry only). */
  destination?: Record<string, unknown> | null;
  /** Client connections (Belfry: keep-alive HTTP connections to the node). */
  connections: number;
  /**
   * Deliveries in flight at most (Belfry: the destination's maxConcurrency; a peer: its worker's
   * concurrency, and at most this many POSTs at once); each system's own default when absent.
   */
  maxConcurrency?: number;
}

export interface System {
  info: SystemInfo;
  /** Schedules events in one request / call; the tally counts those durably acknowledged. */
  scheduleBatch(events: BenchEvent[], tally: BatchTally): Promise<void>;
  /**
   * As scheduleBatch, asking for no echo of the events (Belfry: `Prefer: return=minimal`). Only
   * systems whose batch call answers the events have it; the ingest scenario measures it beside.
   */
  scheduleBatchMinimal?(events: BenchEvent[], tally: BatchTally): Promise<void>;
  /** Schedules one event in its own request / call; throws when it is not acknowledged. */
  scheduleOne(event: BenchEvent): Promise<void>;
  /** CPU seconds used so far by the process that fires and delivers (NaN where unknown). */
  cpuSeconds(): number;
  /** CPU seconds used so far by each instance of its database, by name, where it tells them apart (Belfry on Citus). */
  databaseCpuSeconds?(): Record<string, number>;
  /** Peak RSS of that process so far, in bytes. */
  peakRssBytes(): number;
  /** Warnings and errors the system logged (Belfry's node log), for the report. */
  logIssues?(): unknown[];
  /** Stops everything the system started and removes its data (temp dir, schema, Redis keys). */
  stop(): Promise<void>;
}

/** The largest number of events a batch call carries (Belfry's API bound; the same for the peers). */
export const BATCH_SIZE = 1_000;

/** Events [from, to) due at `dueAt(i)`, with ids `<prefix><i>`. */
export function benchEvents(prefix: string, from: number, to: number, dueAt: (i: number) => number): BenchEvent[] {
  const events: BenchEvent[] = new Array(Math.max(0, to - from));
  for (let i = from; i < to; i++) events[i - from] = { id: `${prefix}${i}`, fireAt: dueAt(i) };
  return events;
}
