/**
 * A delivery thread's warm-up (delivery-thread-worker.ts runs it before the thread answers
 * `start`): the delivery path run many times against a loopback server of its own.
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { AddressPolicy } from '../../core/address.ts';
import { newWebhookSecret } from '../../core/ids.ts';
import { CONNECTIONS_PER_ORIGIN_DEFAULT, HttpChannel } from './http-channel.ts';

/**
 * Deliveries of the warm-up, in each of its rounds, all at once: as many as the connections a
 * burst opens to one origin (CONNECTIONS_PER_ORIGIN_DEFAULT), so the warm-up opens as many too.
 */
export const WARM_UP_DELIVERIES = CONNECTIONS_PER_ORIGIN_DEFAULT;
/**
 * Rounds of the warm-up: 1,280 deliveries in all, enough for V8 to optimise the delivery path
 * (3 rounds of 16 left it to the first events). They take 150-250 ms on a 2-core machine.
 */
export const WARM_UP_ROUNDS = 20;
/** Bound on the warm-up: no round starts after it, so on a slow machine it stops after the round that passes it. */
export const WARM_UP_MS_MAX = 1_000;

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
export async function warmUp({
  deliveries = WARM_UP_DELIVERIES,
  rounds = WARM_UP_ROUNDS,
  msMax = WARM_UP_MS_MAX,
} = {}): Promise<{ delivered: number }> {
  let delivered = 0;
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
      connectionsPerOrigin: deliveries,
    });
    const secrets = [{ secret: newWebhookSecret(), expiresAt: null }];
    try {
      const deadline = performance.now() + msMax;
      for (let round = 0; round < rounds && performance.now() < deadline; round++) {
        const outcomes = await Promise.all(
          Array.from({ length: deliveries }, (_, i) =>
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
        delivered += outcomes.filter((o) => o.kind === 'delivered').length;
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
  return { delivered };
}
