/** Waiting for a receiver to see every event, bounded by a deadline and by a stall. */
import type { ReceiverProcess } from '../lib/receiver-process.ts';
import { sleep } from '../lib/stats.ts';

const POLL_MS = 250;

/** Why the wait ended. */
export type WaitEnd = 'all delivered' | 'deadline' | 'stalled';

/**
 * Resolves once the receiver has `n` distinct events, at `deadline` (epoch ms), or once nothing
 * new arrived for `stallMs` after the first delivery (or after the wait began, when none came).
 */
export async function waitForDeliveries(
  rx: ReceiverProcess,
  n: number,
  deadline: number,
  stallMs: number,
): Promise<WaitEnd> {
  let last = -1;
  let lastChangeAt = Date.now();
  for (;;) {
    const { distinct } = await rx.count();
    if (distinct >= n) return 'all delivered';
    const now = Date.now();
    if (now >= deadline) return 'deadline';
    if (distinct !== last) {
      last = distinct;
      lastChangeAt = now;
    } else if (now - lastChangeAt >= stallMs) {
      return 'stalled';
    }
    await sleep(POLL_MS);
  }
}
