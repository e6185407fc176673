/**
 * One broker delivery attempt under the event's timeout and the caller's signal, timed, with
 * every failure turned into an outcome (deliver() never throws): the channel names which errors
 * are a broker's permanent refusal (discard); everything else is transient (retry).
 */
import type { Clock } from '../../core/clock.ts';
import type { DeliveryOutcome, DueEvent } from '../channel.ts';
import { isAddressDenied } from './guard.ts';

export const TIMEOUT_MS_DEFAULT = 10_000;
/** Characters of a broker's error message kept in an outcome's reason. */
export const REASON_CHARS_MAX = 300;

/**
 * The deadlines in flight under each caller signal. A dispatcher shares one signal across many
 * deliveries: one 'abort' listener per signal (not one per delivery, which Node's EventTarget
 * adds and removes in time linear in the listeners present) aborts them all.
 */
const inflightBySignal = new WeakMap<AbortSignal, Set<AbortController>>();

function track(signal: AbortSignal, deadline: AbortController): () => void {
  let set = inflightBySignal.get(signal);
  if (!set) {
    const created = new Set<AbortController>();
    inflightBySignal.set(signal, created);
    signal.addEventListener('abort', () => {
      for (const d of created) d.abort(new Error('aborted'));
    }, { once: true });
    set = created;
  }
  set.add(deadline);
  const held = set;
  return () => held.delete(deadline);
}

export class TimeoutError extends Error {
  constructor(ms: number) {
    super(`timeout after ${ms}ms`);
    this.name = 'TimeoutError';
  }
}

/** The text of an error, bounded; never a URL's credentials (callers pass no URLs into errors). */
export function errorText(err: unknown): string {
  const e = err as { message?: unknown; code?: unknown } | null;
  const message = typeof e?.message === 'string' && e.message !== '' ? e.message : String(err);
  const code = typeof e?.code === 'string' && !message.includes(e.code) ? ` (${e.code})` : '';
  return (message + code).replace(/\/\/[^/@\s]*:[^/@\s]*@/g, '//***@').slice(0, REASON_CHARS_MAX);
}

/**
 * Runs `send` racing the timeout and the signal. `permanent(err)` names the broker's refusals:
 * those discard; a denied address discards; everything else (network, no ack, timeout) retries.
 */
export async function brokerAttempt(
  event: DueEvent,
  signal: AbortSignal,
  clock: Clock,
  kind: string,
  send: (deadline: AbortSignal) => Promise<void>,
  permanent: (err: unknown) => boolean,
): Promise<DeliveryOutcome> {
  const startMs = clock.monotonicMs();
  const durationMs = () => Math.max(0, Math.round(clock.monotonicMs() - startMs));
  const timeoutMs = event.timeoutMs > 0 ? event.timeoutMs : TIMEOUT_MS_DEFAULT;
  const deadline = new AbortController();
  let timer: NodeJS.Timeout | undefined;
  if (signal.aborted) return { kind: 'retry', reason: 'aborted', durationMs: 0 };
  const untrack = track(signal, deadline);
  try {
    const stop = new Promise<never>((_, reject) => {
      timer = setTimeout(() => {
        const err = new TimeoutError(timeoutMs);
        deadline.abort(err);
        reject(err);
      }, timeoutMs);
      deadline.signal.addEventListener('abort', () => reject(deadline.signal.reason), { once: true });
    });
    stop.catch(() => {});
    await Promise.race([send(deadline.signal), stop]);
    return { kind: 'delivered', durationMs: durationMs() };
  } catch (err) {
    if (isAddressDenied(err)) return { kind: 'discard', reason: `address denied: ${errorText(err)}`, durationMs: durationMs() };
    if (err instanceof TimeoutError) return { kind: 'retry', reason: `${kind}: ${err.message}`, durationMs: durationMs() };
    if (signal.aborted) return { kind: 'retry', reason: 'aborted', durationMs: durationMs() };
    if (permanent(err)) return { kind: 'discard', reason: `${kind} refused: ${errorText(err)}`, durationMs: durationMs() };
    return { kind: 'retry', reason: `${kind}: ${errorText(err)}`, durationMs: durationMs() };
  } finally {
    clearTimeout(timer);
    untrack();
    if (!deadline.signal.aborted) deadline.abort(new Error('done'));
  }
}
