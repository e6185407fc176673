/**
 * A delivery thread (see delivery-threads.ts): one HttpChannel with its own undici pool, driven by
 * calls (core/thread-rpc.ts, concurrent): DeliveryThreadProtocol. `start` builds the channel and
 * warms the thread (warm-up.ts) before it answers, so before the node says it is ready;
 * each `deliver` runs at once, its outcome sent back with the others settled within
 * OUTCOME_FLUSH_MS; `abort` aborts the deliveries of a caller's signal; `close` closes the pool,
 * and the thread exits.
 */
import { AddressPolicy } from '../../core/address.ts';
import { serveRpc } from '../../core/thread-rpc.ts';
import type { DeliveryOutcome } from '../channel.ts';
import type { DeliveryThreadProtocol } from './delivery-threads.ts';
import { HttpChannel } from './http-channel.ts';
import { warmUp } from './warm-up.ts';

/**
 * Outcomes wait up to this long to travel together: a message costs the same few microseconds for
 * one outcome as for a hundred, and at thousands of deliveries a second one message per tick was
 * ~9 % of this thread's time. The delivery itself is not delayed, only the recording of its outcome.
 */
const OUTCOME_FLUSH_MS = 1;

let channel: HttpChannel | null = null;
/** One controller per caller signal with deliveries in flight here; dropped when none are left. */
const signals = new Map<number, { controller: AbortController; inflight: number }>();

function signalOf(signalId: number): { controller: AbortController; inflight: number } {
  let entry = signals.get(signalId);
  if (!entry) {
    entry = { controller: new AbortController(), inflight: 0 };
    signals.set(signalId, entry);
  }
  entry.inflight++;
  return entry;
}

const server = serveRpc<DeliveryThreadProtocol>(
  {
    async start({ allowHosts, ...options }) {
      await warmUp();
      channel = new HttpChannel({ ...options, policy: new AddressPolicy(allowHosts ?? []) });
    },
    async deliver(event, signalId): Promise<DeliveryOutcome> {
      if (!channel) return { kind: 'retry', reason: 'delivery thread not started', durationMs: 0 };
      const entry = signalOf(signalId);
      try {
        return await channel.deliver(event, entry.controller.signal);
      } catch (err) {
        return { kind: 'retry', reason: `delivery thread error: ${(err as Error)?.message ?? err}`, durationMs: 0 };
      } finally {
        if (--entry.inflight === 0 && signals.get(signalId) === entry) signals.delete(signalId);
      }
    },
    abort(signalId, reason) {
      signals.get(signalId)?.controller.abort(new Error(reason));
      signals.delete(signalId);
    },
    async close() {
      await channel?.close();
      // After this reply: the outcomes not yet sent go with it, then the port closes and the thread exits.
      setImmediate(() => server.close());
    },
  },
  { order: 'concurrent', replyFlushMs: OUTCOME_FLUSH_MS },
);
