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
import { CONNECTIONS_PER_ORIGIN_DEFAULT, HttpChannel } from './http-channel.ts';

/**
 * Outcomes wait up to this long to travel together: a message costs the same few microseconds for
 * one outcome as for a hundred, and at thousands of deliveries a second one message per tick was
 * ~9 % of this thread's time. The delivery itself is not delayed, only the recording of its outcome.
 */
const OUTCOME_FLUSH_MS = 1;

/**
 * Deliveries of the warm-up, in each of its rounds, all at once: as many as the connections a
 * burst opens to one origin (CONNECTIONS_PER_ORIGIN_DEFAULT), so the warm-up opens as many too.
 */
const WARM_UP_DELIVERIES = CONNECTIONS_PER_ORIGIN_DEFAULT;
/**
 * Rounds of the warm-up: 1,280 deliveries in all, enough for V8 to optimise the delivery path
 * (3 rounds of 16 left it to the first events). They take 150-250 ms on a 2-core machine.
 */
const WARM_UP_ROUNDS = 20;
/** Bound on the warm-up: on a slow machine it stops after the round that passes it. */
const WARM_UP_MS_MAX = 1_000;

/**
 * Runs the delivery path many times against a loopback server of this thread's own, with a
 * channel of its own (the real one never connects to loopback unless allowed): the first
 * deliveries of a fresh thread were ~100 ms slow (undici's client code loaded, its HTTP parser
 * compiled from WebAssembly, the signing and response paths compiled by V8, a burst of new
 * connections), and those were the first events of a node's first second. With 48 deliveries
 * here the first 500 ms of a 5,000/s stream still ran at p99 126-178 ms; with 1,280, 63-120 ms
 * (`npm run bench -- precision --rate 5000`, the two alternated). Costs 150-250 ms at start,
 * at most about WARM_UP_MS_MAX; a failure only means a cold thread, never a thread that does not
 * start.
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
      const deadline = performance.now() + WARM_UP_MS_MAX;
      for (let round = 0; round < WARM_UP_ROUNDS && performance.now() < deadline; round++) {
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
