/**
 * The NATS JetStream channel: one JetStream publish per attempt; the stream's publish ack (it
 * stored the message) is the acknowledgement.
 *
 * Outcomes: a PubAck → delivered · no stream listens on the subject (503 no responders), a
 * permissions or authorisation violation → discard · a denied address → discard · anything else
 * (connection refused, reconnecting, no ack in time) → retry.
 *
 * One connection per destination (ConnectionPool). While a server is away the client reconnects
 * by itself to the addresses that passed the guard (cluster gossip is ignored: a server cannot
 * point Belfry at other hosts); publishes meanwhile time out and are retried.
 */
import { connect, headers as natsHeaders, type JetStreamClient, type NatsConnection } from 'nats';
import type { AddressPolicy } from '../../core/address.ts';
import { SystemClock, type Clock } from '../../core/clock.ts';
import type { NatsTarget } from '../../core/destination.ts';
import type { Channel, DeliveryOutcome, DueEvent } from '../channel.ts';
import { brokerAttempt } from '../broker/attempt.ts';
import { guardedAddress } from '../broker/guard.ts';
import { messageBody, messageHeaders } from '../broker/message.ts';
import { checkBrokerUrl, redactUrl, type KindSpec } from '../broker/config.ts';
import { ConnectionPool } from '../broker/pool.ts';

export interface NatsChannelOptions {
  policy: AddressPolicy;
  clock?: Clock;
  idleMs?: number;
  connectTimeoutMs?: number;
}

/** A pooled connection and its JetStream client. */
interface Link {
  nc: NatsConnection;
  js: JetStreamClient;
}

const PERMANENT_CODES = new Set(['503', 'PERMISSIONS_VIOLATION', 'AUTHORIZATION_VIOLATION']);
const RECONNECT_WAIT_MS = 500;

export class NatsChannel implements Channel {
  private readonly clock: Clock;
  private readonly pool: ConnectionPool<Link>;

  constructor(private readonly opts: NatsChannelOptions) {
    this.clock = opts.clock ?? new SystemClock();
    this.pool = new ConnectionPool<Link>({ clock: this.clock, idleMs: opts.idleMs, close: (l) => l.nc.close() });
  }

  async deliver(event: DueEvent, signal: AbortSignal): Promise<DeliveryOutcome> {
    const target = event.broker!.target as NatsTarget;
    const key = event.broker!.poolKey;
    return brokerAttempt(event, signal, this.clock, 'nats', async () => {
      await this.pool.with(key, JSON.stringify(target), () => this.open(key, target), async ({ js }) => {
        const h = natsHeaders();
        for (const [k, v] of Object.entries(messageHeaders(event))) h.set(k, v);
        await js.publish(target.subject, messageBody(event), { headers: h, timeout: event.timeoutMs });
      });
    }, (err) => PERMANENT_CODES.has(String((err as { code?: unknown })?.code)));
  }

  forget(poolKey: string): void {
    this.pool.drop(poolKey);
  }

  private async open(key: string, target: NatsTarget): Promise<Link> {
    let user: string | undefined;
    let pass: string | undefined;
    const servers: string[] = [];
    for (const server of target.servers) {
      const url = new URL(server);
      if (url.username !== '' && user === undefined) {
        user = decodeURIComponent(url.username);
        pass = decodeURIComponent(url.password);
      }
      const address = await guardedAddress(this.opts.policy, url.hostname);
      servers.push(`${address.includes(':') ? `[${address}]` : address}:${url.port === '' ? 4222 : url.port}`);
    }
    const nc = await connect({
      servers,
      user,
      pass,
      token: target.token ?? undefined,
      timeout: this.opts.connectTimeoutMs ?? 10_000,
      reconnect: true,
      maxReconnectAttempts: -1,
      reconnectTimeWait: RECONNECT_WAIT_MS,
      ignoreClusterUpdates: true,
      name: 'belfry',
    });
    const link: Link = { nc, js: nc.jetstream() };
    void nc.closed().then(() => this.pool.dropIf(key, link));
    return link;
  }

  async close(): Promise<void> {
    await this.pool.closeAll();
  }
}

/** Registration of a `nats` destination: `servers` (nats:// or tls:// URLs), `subject`, optional `token`. */
export const natsSpec: KindSpec<NatsTarget, { servers: string[]; subject: string; token?: string }> = {
  parse(body, policy) {
    body.servers.forEach((s, i) => checkBrokerUrl(`servers.${i}`, s, ['nats:', 'tls:'], policy));
    return { kind: 'nats', servers: body.servers, subject: body.subject, token: body.token ?? null };
  },
  json: (t) => ({ servers: t.servers.map(redactUrl), subject: t.subject }),
};
