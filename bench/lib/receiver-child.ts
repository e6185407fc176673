/**
 * The loopback webhook receiver, run as its own process (forked by receiver-process.ts) so that
 * the driver's work cannot delay the timestamps it takes. Each delivery's payload carries the
 * event's `fireAt`; the receiver records `receivedAt - fireAt` for the first arrival of each event
 * id (the `webhook-id` header) and counts repeats as duplicates.
 */
import { startReceiver } from '../../test/support/receiver.ts';

export interface ReceiverStats {
  /** Requests received, duplicates included. */
  count: number;
  /** Distinct event ids received. */
  distinct: number;
  duplicates: number;
  /** Deliveries whose receivedAt was before the payload's fireAt. */
  early: number;
  /** Deliveries whose payload had no numeric fireAt. */
  unparsed: number;
  firstAt: number | null;
  lastAt: number | null;
  /** fireAt of each distinct event with a numeric fireAt, in arrival order... */
  fireAtMs: number[];
  /** ...and its receivedAt - fireAt (ms), at the same index. */
  latenessMs: number[];
}

export type ChildRequest = { seq: number; type: 'count' | 'stats' | 'close' };
export type ChildMessage = { type: 'ready'; url: string } | { seq: number; stats: ReceiverStats };

const stats: ReceiverStats = { count: 0, distinct: 0, duplicates: 0, early: 0, unparsed: 0, firstAt: null, lastAt: null, fireAtMs: [], latenessMs: [] };
const seen = new Set<string>();

const rx = await startReceiver({
  behavior: (req) => {
    // The support receiver keeps every request; the bench needs only the numbers above, so it
    // drops them at once to keep memory flat over hundreds of thousands of deliveries.
    rx.requests.length = 0;
    stats.count++;
    stats.firstAt ??= req.receivedAt;
    stats.lastAt = req.receivedAt;
    const id = String(req.headers['webhook-id']);
    if (seen.has(id)) {
      stats.duplicates++;
      return { status: 200 };
    }
    seen.add(id);
    stats.distinct++;
    const fireAt = (req.json as { fireAt?: unknown } | null)?.fireAt;
    if (typeof fireAt !== 'number') {
      stats.unparsed++;
      return { status: 200 };
    }
    if (req.receivedAt < fireAt) stats.early++;
    stats.fireAtMs.push(fireAt);
    stats.latenessMs.push(req.receivedAt - fireAt);
    return { status: 200 };
  },
});

process.on('message', (msg: ChildRequest) => {
  if (msg.type === 'close') {
    void rx.close().then(() => process.exit(0));
    return;
  }
  const reply: ChildMessage = { seq: msg.seq, stats: msg.type === 'stats' ? stats : { ...stats, fireAtMs: [], latenessMs: [] } };
  process.send!(reply);
});
process.on('disconnect', () => process.exit(0));
process.send!({ type: 'ready', url: rx.url } satisfies ChildMessage);
