// A delivery thread (see delivery-threads.ts): one HttpChannel with its own undici pool, driven by
// messages. Plain JavaScript that loads the TypeScript channel through tsx: a worker does not
// inherit the loader the CLI registers.
//
// workerData: { options: { allowHosts, connectionsPerOrigin, responseBodyBytesMax, userAgent } }.
// First message out: { ready: true } (or the thread exits with an error).
// Messages in: { deliver: [{ id, signal, event }] } | { abort: signalId, reason } | { close: true }.
// Messages out: [{ id, outcome }], the outcomes settled within OUTCOME_FLUSH_MS, in one message.
import { parentPort, workerData } from 'node:worker_threads';
import { register } from 'tsx/esm/api';

register();
const { HttpChannel } = await import('./http-channel.ts');
const { AddressPolicy } = await import('../../core/address.ts');

const { allowHosts, ...options } = workerData.options;
const channel = new HttpChannel({ ...options, policy: new AddressPolicy(allowHosts) });

/**
 * Outcomes wait up to this long to travel together: a message costs the same few microseconds for
 * one outcome as for a hundred, and at thousands of deliveries a second one message per tick was
 * ~9 % of this thread's time. The delivery itself is not delayed, only the recording of its outcome.
 */
const OUTCOME_FLUSH_MS = 1;

/** One controller per caller signal with deliveries in flight here; dropped when none are left. */
const signals = new Map();
let outbox = [];

function settle(id, outcome) {
  if (outbox.length === 0) setTimeout(flush, OUTCOME_FLUSH_MS);
  outbox.push({ id, outcome });
}

function flush() {
  const out = outbox;
  outbox = [];
  if (out.length > 0) parentPort.postMessage(out);
}

function signalOf(signalId) {
  let entry = signals.get(signalId);
  if (!entry) {
    entry = { controller: new AbortController(), inflight: 0 };
    signals.set(signalId, entry);
  }
  entry.inflight++;
  return entry;
}

parentPort.on('message', async (msg) => {
  if (msg.deliver) {
    for (const { id, signal, event } of msg.deliver) {
      const entry = signalOf(signal);
      channel.deliver(event, entry.controller.signal).then(
        (outcome) => settle(id, outcome),
        (err) => settle(id, { kind: 'retry', reason: `delivery thread error: ${err?.message ?? err}`, durationMs: 0 }),
      ).finally(() => {
        if (--entry.inflight === 0 && signals.get(signal) === entry) signals.delete(signal);
      });
    }
  } else if (msg.abort !== undefined) {
    signals.get(msg.abort)?.controller.abort(new Error(msg.reason ?? 'aborted'));
    signals.delete(msg.abort);
  } else if (msg.close) {
    await channel.close();
    flush();
    parentPort.close();
  }
});
parentPort.postMessage({ ready: true });
