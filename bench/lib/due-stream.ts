/**
 * A paced due stream, shared by `precision` and `paced`: R events/s due over a span, scheduled in
 * 100 ms ticks, each tick's events (due in a 100 ms window LEAD_MS later, spread evenly over it)
 * in batch calls; then a wait until the receiver has them all (or the drain bound, or a stall).
 * The receiver (its own process: a webhook receiver, a broker consumer or a pull consumer)
 * measures lateness = receivedAt - fireAt.
 */
import { CpuWindow, type CpuSpent } from './machine.ts';
import type { ReceiverProcess } from './receiver-process.ts';
import type { ReceiverStats } from './receiver-child.ts';
import type { BatchTally } from './schedule.ts';
import { sleep } from './stats.ts';
import { BATCH_SIZE, benchEvents, type System } from '../systems/system.ts';
import { waitForDeliveries, type WaitEnd } from '../scenarios/wait.ts';

export const TICK_MS = 100;
/** How long before its due time each event is scheduled (plus up to one tick). */
export const LEAD_MS = 5_000;
/** Bound on the wait for deliveries after the last due time. */
const DRAIN_MS_MAX = 30_000;
const STALL_MS = 15_000;

export interface DueStreamOptions {
  rate: number;
  /** Due times of the warm-up, before the measured span, at the same rate (0 for none). */
  warmupMs: number;
  /** The measured span of due times. */
  durationMs: number;
  /** Event ids are `<prefix><i>`. */
  idPrefix: string;
  /** The process name of the system's database server, for CPU per event (null: none). */
  databaseServer: string | null;
}

export interface DueStream {
  total: number;
  tally: BatchTally;
  /** The first due time, and the first one measured (after the warm-up). */
  firstDueAt: number;
  measuredFromAt: number;
  lastDueAt: number;
  /** How late the scheduling loop's worst tick started: the bench's own health. */
  tickLateMsMax: number;
  waited: WaitEnd;
  stats: ReceiverStats;
  /** Lateness of the events due in the warm-up and in the measured span, with the latter's due times. */
  warmup: number[];
  measured: number[];
  measuredFireAt: number[];
  /** CPU over the measured span, per event due in it. */
  cpu: CpuSpent;
}

/** Runs the stream through `system` (its scheduleBatch and its firing process' CPU) to `rx`. */
export async function runDueStream(
  system: Pick<System, 'scheduleBatch' | 'cpuSeconds'>,
  rx: ReceiverProcess,
  o: DueStreamOptions,
): Promise<DueStream> {
  const spanMs = o.warmupMs + o.durationMs;
  const total = Math.floor((o.rate * spanMs) / 1000);
  const startAt = Date.now() + TICK_MS;
  const firstDueAt = startAt + LEAD_MS;
  const measuredFromAt = firstDueAt + o.warmupMs;
  const dueAt = (j: number) => firstDueAt + Math.floor((j * 1000) / o.rate);
  const tally: BatchTally = { acknowledged: 0, failed: 0 };
  const calls: Promise<void>[] = [];
  let tickLateMsMax = 0;
  let cpu: CpuWindow | null = null;
  for (let k = 0; k * TICK_MS < spanMs; k++) {
    const tickAt = startAt + k * TICK_MS;
    await sleep(Math.max(0, tickAt - Date.now()));
    tickLateMsMax = Math.max(tickLateMsMax, Date.now() - tickAt);
    if (cpu === null && Date.now() >= measuredFromAt) cpu = new CpuWindow(() => system.cpuSeconds(), o.databaseServer);
    // Events j with j * 1000 / rate in [k * TICK_MS, (k + 1) * TICK_MS): due in this tick's window.
    const from = Math.ceil((k * TICK_MS * o.rate) / 1000);
    const to = Math.min(total, Math.ceil(((k + 1) * TICK_MS * o.rate) / 1000));
    for (let b = from; b < to; b += BATCH_SIZE)
      calls.push(system.scheduleBatch(benchEvents(o.idPrefix, b, Math.min(to, b + BATCH_SIZE), dueAt), tally));
  }
  await Promise.all(calls);
  if (cpu === null) {
    await sleep(Math.max(0, measuredFromAt - Date.now()));
    cpu = new CpuWindow(() => system.cpuSeconds(), o.databaseServer);
  }
  const lastDueAt = dueAt(total - 1);
  const waited = await waitForDeliveries(rx, tally.acknowledged, lastDueAt + DRAIN_MS_MAX, STALL_MS);
  const stats = await rx.stats();
  const warmup: number[] = [];
  const measured: number[] = [];
  const measuredFireAt: number[] = [];
  stats.fireAtMs.forEach((fireAt, i) => {
    if (fireAt < measuredFromAt) warmup.push(stats.latenessMs[i]);
    else {
      measured.push(stats.latenessMs[i]);
      measuredFireAt.push(fireAt);
    }
  });
  // Per event due in the measured window; the window also holds the scheduling of most of them.
  const cpuSpent = cpu.spent(measured.length, (stats.lastAt ?? Date.now()) - measuredFromAt);
  return {
    total,
    tally,
    firstDueAt,
    measuredFromAt,
    lastDueAt,
    tickLateMsMax,
    waited,
    stats,
    warmup,
    measured,
    measuredFireAt,
    cpu: cpuSpent,
  };
}
