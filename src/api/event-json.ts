/** Store records as the API shows them: times as RFC 3339 UTC strings, durations as strings, payload parsed. */
import { formatDuration } from '../core/duration.ts';
import type { RetryPolicy } from '../core/backoff.ts';
import type { EventRecord, TransitionRecord } from '../core/event.ts';
import type { DestinationRecord } from '../store/store.ts';
import type { EventJsonOutput } from './schemas/events.ts';
import type { DestinationJsonOutput } from './schemas/destinations.ts';

export function isoTime(ms: number): string {
  return new Date(ms).toISOString();
}

export function retryJson(policy: RetryPolicy | null) {
  if (!policy) return null;
  return {
    maxAttempts: policy.maxAttempts,
    minBackoff: formatDuration(policy.minBackoffMs),
    maxBackoff: formatDuration(policy.maxBackoffMs),
    coefficient: policy.coefficient,
  };
}

function parsePayload(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    // The API stores only JSON it produced; text that does not parse came from elsewhere: show it as is.
    return text;
  }
}

export function toEventJson(e: EventRecord): EventJsonOutput {
  return {
    id: e.id,
    state: e.state,
    version: e.version,
    fireAt: isoTime(e.fireAt),
    dueAt: isoTime(e.dueAt),
    destination: 'name' in e.destination ? e.destination.name : { url: e.destination.url },
    payload: parsePayload(e.payload),
    headers: e.headers,
    group: e.group,
    retry: retryJson(e.retry),
    expireAt: e.expireAt === null ? null : isoTime(e.expireAt),
    tags: e.tags,
    attempts: e.attempts,
    lastStatus: e.lastStatus,
    lastError: e.lastError,
    createdAt: isoTime(e.createdAt),
    updatedAt: isoTime(e.updatedAt),
  };
}

export function toTransitionJson(t: TransitionRecord) {
  return {
    seq: t.seq,
    at: isoTime(t.at),
    kind: t.kind,
    fromState: t.fromState,
    toState: t.toState,
    attempt: t.attempt,
    status: t.status,
    error: t.error,
    durationMs: t.durationMs,
    latenessMs: t.latenessMs,
    detail: t.detail,
  };
}

/** A destination without its secrets. */
export function toDestinationJson(d: DestinationRecord): DestinationJsonOutput {
  const c = d.config;
  return {
    name: d.name,
    url: c.url,
    headers: c.headers,
    timeout: formatDuration(c.timeoutMs),
    retry: retryJson(c.retry),
    rateLimit: c.rateLimitPerSecond === null ? null : { perSecond: c.rateLimitPerSecond },
    maxConcurrency: c.maxConcurrency,
    createdAt: isoTime(d.createdAt),
    updatedAt: isoTime(d.updatedAt),
  };
}

/** The ETag of an event: its version, quoted. */
export function etag(e: EventRecord): string {
  return `"${e.version}"`;
}
