/**
 * One broker delivery attempt under the event's timeout and the caller's signal, timed, with
 * every failure turned into an outcome (deliver() never throws): the channel names which errors
 * are a broker's permanent refusal (discard); everything else is transient (retry).
 */
import type { Clock } from '../../core/clock.ts';
import type { DeliveryOutcome, DueEventCommon } from '../channel.ts';
import { InsecureCredentialsError } from './config.ts';
import { isAddressDenied } from './guard.ts';
import { onSharedAbort } from '../shared-abort.ts';

export const TIMEOUT_MS_DEFAULT = 10_000;
/** Characters of a broker's error message kept in an outcome's reason. */
export const REASON_CHARS_MAX = 300;

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
 *
 * `send` gets `ended`, which rejects when the attempt gives up (a TimeoutError, or the signal's
 * reason): the connection pool stops waiting with it, so nothing of a finished attempt stays
 * queued behind a broker that does not answer, and closes a connection whose send timed out.
 */
export async function brokerAttempt(
  event: DueEventCommon,
  signal: AbortSignal,
  clock: Clock,
  kind: string,
  send: (ended: Promise<never>) => Promise<void>,
  permanent: (err: unknown) => boolean,
): Promise<DeliveryOutcome> {
  const startMs = clock.monotonicMs();
  const durationMs = () => Math.max(0, Math.round(clock.monotonicMs() - startMs));
  const timeoutMs = event.timeoutMs > 0 ? event.timeoutMs : TIMEOUT_MS_DEFAULT;
  if (signal.aborted) return { kind: 'retry', reason: 'aborted', durationMs: 0 };
  // Ends the attempt early: its timeout, or the caller's signal. The send itself is not stopped
  // (no broker client here takes a signal); its late result is ignored.
  let end!: (err: Error) => void;
  const stop = new Promise<never>((_, reject) => {
    end = reject;
  });
  stop.catch(() => {});
  const timer = setTimeout(() => end(new TimeoutError(timeoutMs)), timeoutMs);
  // No AbortController per attempt (no channel's send takes a signal): an AbortController, its
  // listener and the abort event of every finished attempt were a tenth of the event loop's time
  // while firing to a broker.
  const untrack = onSharedAbort(signal, end);
  try {
    await Promise.race([send(stop), stop]);
    return { kind: 'delivered', durationMs: durationMs() };
  } catch (err) {
    if (isAddressDenied(err))
      return { kind: 'discard', reason: `address denied: ${errorText(err)}`, durationMs: durationMs() };
    if (err instanceof InsecureCredentialsError)
      return { kind: 'discard', reason: `${kind}: ${errorText(err)}`, durationMs: durationMs() };
    if (err instanceof TimeoutError)
      return { kind: 'retry', reason: `${kind}: ${err.message}`, durationMs: durationMs() };
    if (signal.aborted) return { kind: 'retry', reason: 'aborted', durationMs: durationMs() };
    if (permanent(err))
      return { kind: 'discard', reason: `${kind} refused: ${errorText(err)}`, durationMs: durationMs() };
    return { kind: 'retry', reason: `${kind}: ${errorText(err)}`, durationMs: durationMs() };
  } finally {
    clearTimeout(timer);
    untrack();
  }
}
