/**
 * Info log lines for archived events, bounded per queue (tenant and destination): the first event
 * archived in a window of ARCHIVE_LOG_WINDOW_MS is logged on its own (`event archived`, with its
 * id and why); the others archived in that window are only counted, and the count is logged once
 * the window has passed (`events archived`, with the last id and why), when the next one is
 * archived or at the next sweep (the dispatcher sweeps as it records outcomes, at most once per
 * ARCHIVE_LOG_SWEEP_MS), or at the node's stop. So a destination whose whole backlog is archived
 * at once writes two lines a minute, not one per event; a lone archive is logged at once.
 *
 * A line says why as a fixed code (`why`) and the last HTTP status, never the outcome's text, which
 * may quote what the endpoint answered; the event's trace keeps it.
 *
 * No timer of its own: it runs only when called, so it adds nothing to a run on a simulated clock.
 */
import type { Logger } from 'pino';
import type { Clock } from '../core/clock.ts';
import { destinationNameOf, queueKeyOf } from '../core/queue.ts';

export const ARCHIVE_LOG_WINDOW_MS = 60_000;
export const ARCHIVE_LOG_SWEEP_MS = 1_000;
/** Windows kept at most; past it, the ones ended are logged and dropped first. */
export const ARCHIVE_LOG_WINDOWS_MAX = 10_000;

/** Why an event was archived: its attempts ran out, its expireAfter passed, or it fired too late (missedAfter). */
export type ArchiveCause = 'attempts_exhausted' | 'expired' | 'missed' | 'other';

/** The cause of an archive from the error the dispatcher recorded (outcome.ts and the missed rule write them). */
export function archiveCauseOf(error: string | undefined): ArchiveCause {
  if (error?.startsWith('attempts exhausted')) return 'attempts_exhausted';
  if (error?.startsWith('expired')) return 'expired';
  if (error?.startsWith('missed')) return 'missed';
  return 'other';
}

export interface ArchivedEvent {
  tenantId: string;
  id: string;
  /** The event's queue (`name:<destination>` or `url:<origin>`). */
  queue: string;
  attempts: number;
  why: ArchiveCause;
  /** The last attempt's HTTP status, if it had one. */
  status?: number;
}

interface Window {
  tenantId: string;
  queue: string;
  startedMs: number;
  /** Archived in this window after the one logged. */
  counted: number;
  last: ArchivedEvent | null;
}

/** Where a queue's events go, as a log line names it: a registered destination, or an inline URL's origin. */
export function queueLogFields(
  tenantId: string,
  queue: string,
): { tenantId: string; destination?: string; origin?: string } {
  const name = destinationNameOf(queue);
  return name !== null ? { tenantId, destination: name } : { tenantId, origin: queue.replace(/^url:/, '') };
}

export class ArchiveLog {
  private readonly windows = new Map<string, Window>();
  private lastSweepMs = -Infinity;

  constructor(
    private readonly logger: Logger,
    private readonly clock: Clock,
  ) {}

  archived(event: ArchivedEvent): void {
    const nowMs = this.clock.monotonicMs();
    const key = queueKeyOf(event.tenantId, event.queue);
    const open = this.windows.get(key);
    if (open && nowMs - open.startedMs < ARCHIVE_LOG_WINDOW_MS) {
      open.counted++;
      open.last = event;
      return;
    }
    if (open) this.end(key, open);
    if (this.windows.size >= ARCHIVE_LOG_WINDOWS_MAX) this.sweep(nowMs, true);
    const { id, attempts, why, status } = event;
    this.logger.info({ ...queueLogFields(event.tenantId, event.queue), id, attempts, why, status }, 'event archived');
    this.windows.set(key, { tenantId: event.tenantId, queue: event.queue, startedMs: nowMs, counted: 0, last: null });
  }

  /** Logs and drops the windows that have ended; at most once per ARCHIVE_LOG_SWEEP_MS unless `force`. */
  sweep(nowMs = this.clock.monotonicMs(), force = false): void {
    if (!force && nowMs - this.lastSweepMs < ARCHIVE_LOG_SWEEP_MS) return;
    this.lastSweepMs = nowMs;
    for (const [key, window] of this.windows)
      if (nowMs - window.startedMs >= ARCHIVE_LOG_WINDOW_MS) this.end(key, window);
  }

  /** Logs every count not logged yet and forgets every window (the node stops). */
  flush(): void {
    for (const [key, window] of this.windows) this.end(key, window);
  }

  private end(key: string, window: Window): void {
    this.windows.delete(key);
    if (window.counted === 0 || window.last === null) return;
    this.logger.info(
      {
        ...queueLogFields(window.tenantId, window.queue),
        count: window.counted,
        lastId: window.last.id,
        lastWhy: window.last.why,
        lastStatus: window.last.status,
      },
      'events archived',
    );
  }
}
