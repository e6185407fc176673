/**
 * The Channel conformance suite: one set of cases every channel runs against its real server on
 * this machine (HTTP: a loopback receiver; brokers: the machine's Redis, NATS, RabbitMQ and a
 * librdkafka mock cluster). Each harness makes its own stream / subject / queue / topic and
 * removes it after.
 *
 * Cases: payload bytes and headers · order within a group · acknowledged means stored (every
 * delivered message is there, nothing else) · a server that refuses → discard · a server that is
 * down → retry · a server that never answers → retry within the timeout.
 */
import assert from 'node:assert/strict';
import net from 'node:net';
import { after, before, describe, it } from 'node:test';
import {
  brokerDueEvent,
  type BrokerDueEvent,
  type Channel,
  type DeliveryOutcome,
  type DueEvent,
  type DueEventCommon,
} from '../channel.ts';

/** Where a conformance event goes: a webhook's URL (signed with SECRET), or a broker's target. */
export type SinkFields = { kind?: 'http'; target: string } | Pick<BrokerDueEvent, 'kind' | 'target' | 'poolKey'>;

/** The secret conformance webhooks are signed with. */
export const SECRET = 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw';

/** One message as the consumer saw it. */
export interface ReceivedMessage {
  body: Buffer;
  headers: Record<string, string>;
  /** Kafka's key; absent elsewhere. */
  key?: string;
}

/** A fresh place on the real server and a way to read what reached it. */
export interface Sink {
  /** What an event needs to go there: a webhook's URL, or a broker's kind, target and pool key. */
  fields: SinkFields;
  /** The messages received so far, waiting until at least `count` are there or `timeoutMs` pass. */
  read(count: number, timeoutMs: number): Promise<ReceivedMessage[]>;
  cleanup(): Promise<void>;
}

export interface ChannelHarness {
  channel: Channel;
  sink(): Promise<Sink>;
  /** Fields that make the server refuse for good (no such stream/exchange/topic, not authorised). */
  refusing(): Promise<Sink['fields']>;
  /** Fields pointing at `port` on loopback, where nothing listens or nothing answers. */
  at(port: number): Sink['fields'];
  /** The event id a message carries (belfry-event-id; webhook-id for HTTP). */
  idOf(msg: ReceivedMessage): string;
  /** True when messages carry the belfry-* headers (brokers). */
  belfryHeaders: boolean;
  close(): Promise<void>;
}

let seq = 0;

export function dueEvent(fields: SinkFields, o: Partial<DueEventCommon> = {}): DueEvent {
  const now = Date.now();
  const common: DueEventCommon = {
    tenantId: 'tenant-conformance',
    id: `evt-${process.pid}-${++seq}`,
    attempt: 1,
    payload: '{"orderId":8812,"note":"d\u00e9j\u00e0 vu \u2713","n":[1,2.5,null]}',
    headers: { 'x-kind': 'timeout' },
    timeoutMs: 5_000,
    dueAt: now,
    fireAt: now,
    group: null,
    ...o,
  };
  if ('poolKey' in fields) return brokerDueEvent(common, fields.target, fields.poolKey);
  return { ...common, kind: 'http', target: fields.target, secrets: [{ secret: SECRET, expiresAt: null }] };
}

/** A loopback port where nothing listens: bound, then released. */
export async function closedPort(): Promise<number> {
  const server = net.createServer();
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const port = (server.address() as net.AddressInfo).port;
  await new Promise<void>((r) => server.close(() => r()));
  return port;
}

/** A loopback server that accepts connections and never says a word. */
export async function silentServer(): Promise<{ port: number; close(): Promise<void> }> {
  const sockets = new Set<net.Socket>();
  const server = net.createServer((s) => {
    sockets.add(s);
    s.on('error', () => {});
    s.on('close', () => sockets.delete(s));
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    port: (server.address() as net.AddressInfo).port,
    close: () => {
      for (const s of sockets) s.destroy();
      return new Promise<void>((r) => server.close(() => r()));
    },
  };
}

const READ_TIMEOUT_MS = 10_000;

function assertKind(outcome: DeliveryOutcome, kind: DeliveryOutcome['kind'], what: string): void {
  assert.equal(outcome.kind, kind, `${what}: ${JSON.stringify(outcome)}`);
}

export function channelConformance(name: string, makeHarness: () => Promise<ChannelHarness>): void {
  describe(`Channel conformance: ${name}`, () => {
    let h: ChannelHarness;
    const signal = new AbortController().signal;
    before(async () => {
      h = await makeHarness();
    });
    after(async () => {
      await h?.close();
    });

    it('delivers the payload bytes unchanged, with the event headers and the belfry headers', async () => {
      const sink = await h.sink();
      try {
        const e = dueEvent(sink.fields, {
          attempt: 3,
          group: 'order-8812',
          type: 'order.timeout',
          fireAt: Date.UTC(2026, 10, 22, 10, 21, 55, 123),
        });
        assertKind(await h.channel.deliver(e, signal), 'delivered', 'delivery');
        const [msg] = await sink.read(1, READ_TIMEOUT_MS);
        assert.ok(msg, 'the message arrived');
        assert.deepEqual(msg.body, Buffer.from(e.payload, 'utf8'), 'body = the payload bytes');
        assert.equal(msg.headers['x-kind'], 'timeout');
        assert.equal(h.idOf(msg), e.id);
        if (h.belfryHeaders) {
          assert.equal(msg.headers['belfry-event-id'], e.id);
          assert.equal(msg.headers['belfry-tenant-id'], e.tenantId);
          assert.equal(msg.headers['belfry-fire-at'], '2026-11-22T10:21:55.123Z');
          assert.equal(msg.headers['belfry-attempt'], '3');
          assert.equal(msg.headers['belfry-group'], 'order-8812');
          assert.equal(msg.headers['belfry-type'], 'order.timeout');
          if (msg.key !== undefined) assert.equal(msg.key, 'order-8812', 'the key is the group');
        }
      } finally {
        await sink.cleanup();
      }
    });

    it('keeps the events of a group in order, and keys an event without a group by its id', async () => {
      const sink = await h.sink();
      try {
        const events = Array.from({ length: 20 }, (_, i) =>
          dueEvent(sink.fields, { group: 'g-1', payload: `{"i":${i}}` }),
        );
        // As the dispatcher does: one event of a group at a time, the next after the previous ended.
        for (const e of events) assertKind(await h.channel.deliver(e, signal), 'delivered', e.id);
        const lone = dueEvent(sink.fields);
        assertKind(await h.channel.deliver(lone, signal), 'delivered', 'lone');
        const got = await sink.read(21, READ_TIMEOUT_MS);
        const grouped = got.filter((m) => h.idOf(m) !== lone.id);
        assert.deepEqual(
          grouped.map((m) => h.idOf(m)),
          events.map((e) => e.id),
        );
        const loneMsg = got.find((m) => h.idOf(m) === lone.id)!;
        if (h.belfryHeaders) assert.equal(loneMsg.headers['belfry-group'], undefined, 'no group, no belfry-group');
        if (h.belfryHeaders) assert.equal(loneMsg.headers['belfry-type'], undefined, 'no type, no belfry-type');
        if (loneMsg.key !== undefined) assert.equal(loneMsg.key, lone.id);
      } finally {
        await sink.cleanup();
      }
    });

    it('reports delivered only for what the server stored: every acknowledged message is there, nothing else', async () => {
      const sink = await h.sink();
      try {
        const events = Array.from({ length: 30 }, () => dueEvent(sink.fields));
        const outcomes = await Promise.all(events.map((e) => h.channel.deliver(e, signal)));
        outcomes.forEach((o, i) => assertKind(o, 'delivered', events[i].id));
        const got = await sink.read(30, READ_TIMEOUT_MS);
        assert.deepEqual(got.map((m) => h.idOf(m)).sort(), events.map((e) => e.id).sort());
      } finally {
        await sink.cleanup();
      }
    });

    it('discards when the server refuses for good', async () => {
      const outcome = await h.channel.deliver(dueEvent(await h.refusing()), signal);
      assertKind(outcome, 'discard', 'a permanent refusal');
      assert.ok('reason' in outcome && outcome.reason.length > 0);
    });

    it('retries when the server is down', async () => {
      const outcome = await h.channel.deliver(dueEvent(h.at(await closedPort()), { timeoutMs: 3_000 }), signal);
      assertKind(outcome, 'retry', 'nothing listening');
    });

    it('retries after its timeout when the server never answers', async () => {
      const silent = await silentServer();
      try {
        const started = Date.now();
        const outcome = await h.channel.deliver(dueEvent(h.at(silent.port), { timeoutMs: 500 }), signal);
        const tookMs = Date.now() - started;
        assertKind(outcome, 'retry', 'a silent server');
        assert.ok(tookMs >= 450 && tookMs < 3_000, `gave up after ${tookMs} ms, timeout 500 ms`);
      } finally {
        await silent.close();
      }
    });

    it('retries when its caller has aborted', async () => {
      const sink = await h.sink();
      try {
        const aborted = AbortSignal.abort();
        const outcome = await h.channel.deliver(dueEvent(sink.fields), aborted);
        assertKind(outcome, 'retry', 'an aborted delivery');
      } finally {
        await sink.cleanup();
      }
    });
  });
}
