/**
 * A delivery thread (see delivery-threads.ts): one HttpChannel with its own undici pool, driven by
 * calls (core/thread-rpc.ts, concurrent): DeliveryThreadProtocol. `start` builds the channel and
 * warms the thread (warmUp below) before it answers, so before the node says it is ready;
 * each `deliver` runs at once, its outcome sent back with the others settled within
 * OUTCOME_FLUSH_MS; `abort` aborts the deliveries of a caller's signal; `close` closes the pool,
 * and the thread exits.
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { AddressPolicy } from '../../core/address.ts';
import { newWebhookSecret } from '../../core/ids.ts';
import { serveRpc } from '../../core/thread-rpc.ts';
import type { DeliveryOutcome } from '../channel.ts';
import type { DeliveryThreadProtocol } from './delivery-threads.ts';
import { HttpChannel } from './http-channel.ts';

/**
 * Outcomes wait up to this long to travel together: a message costs the same few microseconds for
 * one outcome as for a hundred, and at thousands of deliveries a second one message per tick was
 * ~9 % of this thread's time. The delivery itself is not delayed, only the recording of its outcome.
 */
const OUTCOME_FLUSH_MS = 1;

/** Deliveries of the warm-up, in each of its rounds, all at once. */
const WARM_UP_DELIVERIES = 16;
const WARM_UP_ROUNDS = 3;

/**
 * Runs the delivery path a few times against a loopback server of this thread's own, with a
 * channel of its own (the real one never connects to loopback unless allowed): the first
 * deliveries of a fresh thread were ~100 ms slow (undici's client code loaded, its HTTP parser
 * compiled from WebAssembly, the signing and response paths compiled by V8), and those were the
 * first events of a node's first second. Costs a few tens of ms at start; a failure only means a
 * cold thread, never a thread that does not start.
 */
async function warmUp(): Promise<void> {
  const receiver = createServer((req, res) => {
    req.resume();
    req.on('end', () => res.writeHead(204).end());
  });
  try {
    await new Promise<void>((resolve, reject) => {
      receiver.once('error', reject);
      receiver.listen(0, '127.0.0.1', resolve);
    });
    const target = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/warm-up`;
    const warm = new HttpChannel({
      policy: new AddressPolicy(['127.0.0.1']),
      connectionsPerOrigin: WARM_UP_DELIVERIES,
    });
    const secrets = [{ secret: newWebhookSecret(), expiresAt: null }];
    try {
      for (let round = 0; round < WARM_UP_ROUNDS; round++) {
        await Promise.all(
          Array.from({ length: WARM_UP_DELIVERIES }, (_, i) =>
            warm.deliver(
              {
                kind: 'http',
                tenantId: 'warm-up',
                id: `warm-up-${round}-${i}`,
                attempt: 1,
                payload: '{"warmUp":true}',
                headers: {},
                timeoutMs: 5_000,
                dueAt: Date.now(),
                target,
                secrets,
              },
              new AbortController().signal,
            ),
          ),
        );
      }
    } finally {
      await warm.close();
    }
  } catch {
    // A cold thread is slower for its first deliveries, nothing worse.
  } finally {
    receiver.closeAllConnections();
    receiver.close();
  }
}

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
