/**
 * The echo receiver of `belfry dev` (never of `belfry start`): a webhook receiver on loopback for
 * trying Belfry. It verifies each delivery's Standard Webhooks signature with the secrets it is
 * given (the `echo` destination's, the dev tenant's for inline URLs), answers it, prints it as one
 * readable line, and keeps the last RECENT_MAX for `GET /` and `GET /deliveries/{id}`.
 *
 *   POST <any path>[?status=503]    a delivery: 204 when verified (or the status asked for, to try
 *                                   retries: 5xx, 408 and 429 are retried, other 4xx discarded), 401 when not
 *   GET  /                          the recent deliveries, newest first
 *   GET  /deliveries/{id}[?wait=30s] the latest delivery of that webhook-id, waiting for it up to `wait`
 *
 * Everything is bounded: the body read, the deliveries kept, the payload kept of each, the ids
 * remembered to tell a repeat, the waiters and their wait.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { parseDurationMs } from '../core/duration.ts';
import { verifyWebhook, WebhookVerificationError } from '@belfry/client';

/** Deliveries kept for `GET /`. */
export const RECENT_MAX = 100;
/** Bytes of a request body read; past it 413 (Belfry's payloads are 256 KiB by default). */
export const BODY_BYTES_MAX = 1024 * 1024;
/** Characters of a payload kept with a delivery, and shown on its line. */
const PAYLOAD_CHARS_KEPT = 16 * 1024;
const PAYLOAD_CHARS_SHOWN = 200;
/** webhook-ids remembered to mark a repeat (a retry, or a duplicate). */
const SEEN_IDS_MAX = 10_000;
/** Requests parked on `?wait=` at once, and the longest wait. */
const WAITERS_MAX = 100;
const WAIT_MS_MAX = 60_000;

export interface EchoDelivery {
  /** webhook-id: the event id. */
  id: string | null;
  receivedAt: string;
  path: string;
  /** The status the receiver answered. */
  status: number;
  verified: boolean;
  /** Why it did not verify. */
  reason?: string;
  /** belfry-type, when the event has one. */
  type?: string;
  /** This webhook-id came before: a retry or a duplicate (delivery is at least once). */
  repeat: boolean;
  /** The body as JSON, or as text when it is not JSON; cut at PAYLOAD_CHARS_KEPT characters. */
  payload: unknown;
  truncated?: true;
}

export interface EchoOptions {
  host: string;
  port: number;
  /** The signing secrets a delivery may be signed with (whsec_...). */
  secrets: () => readonly string[];
  /** Called with each delivery's line. */
  print: (line: string) => void;
}

interface Waiter {
  id: string;
  done: (delivery: EchoDelivery | null) => void;
}

export class EchoReceiver {
  private readonly recent: EchoDelivery[] = [];
  private readonly seen = new Set<string>();
  private readonly waiters = new Set<Waiter>();
  private server: Server | null = null;

  constructor(private readonly opts: EchoOptions) {}

  /** Listens; resolves with its base URL. */
  async start(): Promise<string> {
    const server = createServer((req, res) => void this.handle(req, res));
    this.server = server;
    await new Promise<void>((resolve, reject) => {
      server.once('error', (err) =>
        reject(
          new Error(
            `the echo receiver cannot listen on ${this.opts.host}:${this.opts.port}: ${err.message} (--echo-port picks another port, 0 any free one)`,
          ),
        ),
      );
      server.listen(this.opts.port, this.opts.host, () => resolve());
    });
    return this.url;
  }

  get url(): string {
    const { port } = this.server!.address() as AddressInfo;
    const host = this.opts.host.includes(':') ? `[${this.opts.host}]` : this.opts.host;
    return `http://${host}:${port}`;
  }

  /** Requests parked on `?wait=`. */
  get waiting(): number {
    return this.waiters.size;
  }

  /** The deliveries kept, newest first. */
  deliveries(): EchoDelivery[] {
    return [...this.recent].reverse();
  }

  async close(): Promise<void> {
    for (const waiter of this.waiters) waiter.done(null);
    this.waiters.clear();
    const server = this.server;
    if (!server) return;
    await new Promise<void>((resolve) => server.close(() => resolve()));
    server.closeAllConnections();
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = new URL(req.url ?? '/', 'http://echo');
    if (req.method === 'POST') return this.receive(req, res, url);
    if (req.method === 'GET' && url.pathname === '/')
      return json(res, 200, { deliveries: this.deliveries(), kept: RECENT_MAX });
    const match = /^\/deliveries\/([^/]+)$/.exec(url.pathname);
    if (req.method === 'GET' && match) return this.lookup(res, decodeURIComponent(match[1]), url);
    json(res, 404, {
      error: 'not found: POST a delivery to any path; GET / lists the recent ones; GET /deliveries/{id}?wait=30s',
    });
  }

  private async receive(req: IncomingMessage, res: ServerResponse, url: URL): Promise<void> {
    const body = await readBody(req);
    if (body === null) return json(res, 413, { error: `body over ${BODY_BYTES_MAX} bytes` });
    const asked = Number(url.searchParams.get('status'));
    const askedStatus = Number.isInteger(asked) && asked >= 200 && asked <= 599 ? asked : null;
    const headerOf = (name: string) => {
      const value = req.headers[name];
      return typeof value === 'string' ? value : undefined;
    };
    let reason: string | undefined;
    try {
      verifyWebhook(this.opts.secrets(), req.headers, body);
    } catch (err) {
      if (!(err instanceof WebhookVerificationError)) throw err;
      reason = err.message;
    }
    const id = headerOf('webhook-id') ?? null;
    const repeat = id !== null && this.seen.has(id);
    if (id !== null && !repeat) {
      this.seen.add(id);
      if (this.seen.size > SEEN_IDS_MAX) this.seen.delete(this.seen.values().next().value!);
    }
    const status = reason !== undefined ? 401 : (askedStatus ?? 204);
    const delivery: EchoDelivery = {
      id,
      receivedAt: new Date().toISOString(),
      path: url.pathname + url.search,
      status,
      verified: reason === undefined,
      ...(reason !== undefined ? { reason } : {}),
      ...(headerOf('belfry-type') !== undefined ? { type: headerOf('belfry-type') } : {}),
      repeat,
      ...payloadOf(body.toString('utf8')),
    };
    this.keep(delivery);
    this.opts.print(lineOf(delivery));
    if (status === 204) res.writeHead(204).end();
    else json(res, status, reason !== undefined ? { error: reason } : { status });
  }

  private keep(delivery: EchoDelivery): void {
    this.recent.push(delivery);
    if (this.recent.length > RECENT_MAX) this.recent.shift();
    for (const waiter of this.waiters) if (waiter.id === delivery.id) waiter.done(delivery);
  }

  private async lookup(res: ServerResponse, id: string, url: URL): Promise<void> {
    const found = this.latest(id);
    const waitText = url.searchParams.get('wait');
    const waitMs = waitText === null ? 0 : parseDurationMs(waitText);
    if (waitMs === null || waitMs > WAIT_MS_MAX)
      return json(res, 400, { error: `wait must be a duration of at most ${WAIT_MS_MAX / 1000}s, such as 30s` });
    if (found || waitMs === 0) return found ? json(res, 200, found) : notDelivered(res, id);
    if (this.waiters.size >= WAITERS_MAX)
      return json(res, 503, { error: `${WAITERS_MAX} requests are waiting already; try again` });
    const delivery = await new Promise<EchoDelivery | null>((resolve) => {
      const timer = setTimeout(() => waiter.done(null), waitMs);
      const waiter: Waiter = {
        id,
        done: (d) => {
          clearTimeout(timer);
          this.waiters.delete(waiter);
          resolve(d);
        },
      };
      this.waiters.add(waiter);
      res.once('close', () => waiter.done(null));
    });
    if (!res.writableEnded && !res.destroyed)
      return delivery ? json(res, 200, delivery) : notDelivered(res, id, waitText!);
  }

  private latest(id: string): EchoDelivery | undefined {
    for (let i = this.recent.length - 1; i >= 0; i--) if (this.recent[i].id === id) return this.recent[i];
    return undefined;
  }
}

/** The body, or null past BODY_BYTES_MAX (the rest is not read). */
async function readBody(req: IncomingMessage): Promise<Buffer | null> {
  const chunks: Buffer[] = [];
  let bytes = 0;
  for await (const chunk of req as AsyncIterable<Buffer>) {
    bytes += chunk.length;
    if (bytes > BODY_BYTES_MAX) return null;
    chunks.push(chunk);
  }
  return Buffer.concat(chunks);
}

function payloadOf(text: string): { payload: unknown; truncated?: true } {
  if (text.length > PAYLOAD_CHARS_KEPT) return { payload: text.slice(0, PAYLOAD_CHARS_KEPT), truncated: true };
  try {
    return { payload: text === '' ? null : JSON.parse(text) };
  } catch {
    return { payload: text };
  }
}

/** One delivery as one line: `echo 12:00:05.003  hello-1  signature ok  type order.timeout  {"hello":"belfry"}`. */
export function lineOf(d: EchoDelivery): string {
  const time = d.receivedAt.slice(11, 23);
  const payload = typeof d.payload === 'string' ? d.payload : JSON.stringify(d.payload);
  const shown = payload.length > PAYLOAD_CHARS_SHOWN ? `${payload.slice(0, PAYLOAD_CHARS_SHOWN)}…` : payload;
  const parts = [`echo ${time}`, d.id ?? '(no webhook-id)', d.verified ? 'signature ok' : `NOT VERIFIED: ${d.reason}`];
  if (d.type) parts.push(`type ${d.type}`);
  if (d.repeat) parts.push('again (a retry or duplicate)');
  if (d.status !== 204) parts.push(`answered ${d.status}`);
  parts.push(shown);
  return parts.join('  ');
}

function json(res: ServerResponse, status: number, body: unknown): void {
  res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body) + '\n');
}

function notDelivered(res: ServerResponse, id: string, waited?: string): void {
  json(res, 404, { error: `no delivery of ${id} among the last ${RECENT_MAX}${waited ? ` (waited ${waited})` : ''}` });
}
