/**
 * Due wake-ups between the nodes of a PostgreSQL cluster (Store.dueWakeups), on LISTEN/NOTIFY.
 *
 *   node A: API commits events due soon ──announce──▶ SELECT pg_notify(channel, batch), …
 *   every node: one LISTEN connection ──notification──▶ listener(refs) ──▶ its scheduler takes
 *                                                        the refs of its own shards into its timer
 *
 * One channel per schema (a hash of its name: channel names are identifiers of at most 63 bytes).
 * A notification carries at most PAYLOAD_CHARS_MAX characters (PostgreSQL's limit is 8,000
 * bytes), so an announcement is split into as many as it needs, all sent in one statement. A
 * listener connection that fails is opened again after a delay that doubles up to
 * RECONNECT_MS_MAX; what was announced meanwhile is found by the scheduler's overdue sweep.
 */
import { createHash } from 'node:crypto';
import pg from 'pg';
import type { DueRef, DueWakeups } from '../store.ts';
import { rethrowUnavailable } from './db.ts';

export const PAYLOAD_CHARS_MAX = 7_000;
const RECONNECT_MS_MIN = 250;
export const RECONNECT_MS_MAX = 10_000;

/** A ref on the wire: [tenantId, id, version, dueAt, shard, group, queue]. */
type WireRef = [string, string, number, number, number, string | null, string];

export function dueChannel(schema: string): string {
  return `belfry_due_${createHash('sha256').update(schema).digest('hex').slice(0, 24)}`;
}

/** Splits refs into JSON payloads of at most PAYLOAD_CHARS_MAX characters each. */
export function duePayloads(refs: DueRef[]): string[] {
  const payloads: string[] = [];
  let parts: string[] = [];
  let chars = 2;
  for (const r of refs) {
    const part = JSON.stringify([r.tenantId, r.id, r.version, r.dueAt, r.shard, r.group, r.queue] satisfies WireRef);
    if (parts.length > 0 && chars + part.length + 1 > PAYLOAD_CHARS_MAX) {
      payloads.push(`[${parts.join(',')}]`);
      parts = [];
      chars = 2;
    }
    parts.push(part);
    chars += part.length + 1;
  }
  if (parts.length > 0) payloads.push(`[${parts.join(',')}]`);
  return payloads;
}

/** The refs of one payload; an unreadable payload (not ours) gives none. */
export function refsOfPayload(payload: string): DueRef[] {
  let wire: unknown;
  try {
    wire = JSON.parse(payload);
  } catch {
    return [];
  }
  if (!Array.isArray(wire)) return [];
  const refs: DueRef[] = [];
  for (const w of wire) {
    if (!Array.isArray(w) || w.length !== 7) continue;
    const [tenantId, id, version, dueAt, shard, group, queue] = w as WireRef;
    if (typeof tenantId !== 'string' || typeof id !== 'string' || typeof queue !== 'string') continue;
    if (
      !Number.isInteger(version) ||
      !Number.isFinite(dueAt) ||
      !Number.isInteger(shard) ||
      (group !== null && typeof group !== 'string')
    )
      continue;
    refs.push({ tenantId, id, version, dueAt, shard, group, queue });
  }
  return refs;
}

export class PostgresDueWakeups implements DueWakeups {
  private readonly channel: string;

  constructor(
    private readonly pool: pg.Pool,
    /** For the listener's own connection (not a pooled one: LISTEN holds it). */
    private readonly url: string,
    schema: string,
  ) {
    this.channel = dueChannel(schema);
  }

  async announce(refs: DueRef[]): Promise<void> {
    if (refs.length === 0) return;
    await this.pool
      .query('SELECT pg_notify($1, p) FROM unnest($2::text[]) AS p', [this.channel, duePayloads(refs)])
      .catch(rethrowUnavailable);
  }

  async subscribe(
    listener: (refs: DueRef[]) => void,
    onError: (err: Error) => void,
  ): Promise<{ close(): Promise<void> }> {
    let closed = false;
    let client: pg.Client | null = null;
    let retryTimer: NodeJS.Timeout | null = null;
    let delayMs = RECONNECT_MS_MIN;

    const connect = async (): Promise<void> => {
      const c = new pg.Client({ connectionString: this.url });
      c.on('notification', (msg) => {
        if (msg.channel === this.channel && msg.payload) listener(refsOfPayload(msg.payload));
      });
      c.on('error', (err) => lost(c, err));
      c.on('end', () => lost(c, new Error('the LISTEN connection ended')));
      await c.connect();
      await c.query(`LISTEN ${this.channel}`);
      if (closed) {
        await c.end().catch(() => {});
        return;
      }
      client = c;
      delayMs = RECONNECT_MS_MIN;
    };

    const lost = (c: pg.Client, err: Error): void => {
      if (closed || client !== c) return;
      client = null;
      c.end().catch(() => {});
      onError(err);
      retry();
    };

    const retry = (): void => {
      if (closed || retryTimer) return;
      retryTimer = setTimeout(() => {
        retryTimer = null;
        connect().catch((err: Error) => {
          onError(err);
          retry();
        });
      }, delayMs);
      retryTimer.unref();
      delayMs = Math.min(delayMs * 2, RECONNECT_MS_MAX);
    };

    // Not listening yet (the server just went away) is not fatal: the sweep covers, and it retries.
    await connect().catch((err: Error) => {
      onError(err);
      retry();
    });
    return {
      close: async () => {
        closed = true;
        if (retryTimer) clearTimeout(retryTimer);
        const c = client;
        client = null;
        await c?.end().catch(() => {});
      },
    };
  }
}
