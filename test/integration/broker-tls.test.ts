/**
 * TLS means TLS: a destination that names TLS (`rediss://`, `amqps://`, NATS `tls://`, Kafka
 * `ssl: true`, and a Kafka source with `ssl: true`) never falls back to plaintext, and no
 * credential crosses the network in clear unless the destination says so explicitly.
 *
 * A plain TCP listener on loopback records the first bytes each connection sends. Dialled with a
 * TLS URL carrying credentials, the client's first bytes must be a TLS handshake record (0x16
 * 0x03: a ClientHello), the attempt must fail (nothing is delivered), and the credential's bytes
 * must appear nowhere in what the listener got. NATS servers speak first, so the listener plays
 * three parts there: silent (the client must send nothing), a plain INFO that offers no TLS (a
 * downgrade: the client must send nothing at all), and a plain INFO that requires TLS (the client's
 * next bytes must be a ClientHello). Two controls show that the recorder sees a credential when one
 * is sent in clear by choice (Redis AUTH, NATS CONNECT, with allowInsecureCredentials). A target
 * stored without the opt-in (before the rule) is refused at connect: discarded, no connection made.
 * And the NATS client's TLS works end to end against a nats-server with TLS and a login.
 */
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import net from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { jetstreamManager } from '@nats-io/jetstream';
import { connect as natsConnect } from '@nats-io/transport-node';
import { AddressPolicy } from '../../src/core/address.ts';
import type { BrokerTarget } from '../../src/core/destination.ts';
import { brokerDueEvent, type Channel, type DeliveryOutcome, type DueEvent } from '../../src/channels/channel.ts';
import { closedPort } from '../../src/channels/conformance/suite.ts';
import { AmqpChannel } from '../../src/channels/amqp/index.ts';
import { KafkaChannel } from '../../src/channels/kafka/index.ts';
import { NatsChannel } from '../../src/channels/nats/index.ts';
import { RedisChannel } from '../../src/channels/redis/index.ts';
import { KafkaSourceReader } from '../../src/sources/kafka/reader.ts';
import type { SourceRecord } from '../../src/store/sources.ts';
import { blackHole, type BlackHole } from '../support/black-hole.ts';
import { selfSignedCertificate } from '../support/certificate.ts';
import { waitUntil } from '../support/node.ts';

const SECRET = 'tls-secret-pw-93f1';
const SECRET_BYTES = Buffer.from(SECRET);
const policy = new AddressPolicy(['127.0.0.1']);
const signal = new AbortController().signal;
let n = 0;

function event(target: BrokerTarget, timeoutMs = 1_000): DueEvent {
  return brokerDueEvent(
    {
      tenantId: 'tenant-tls',
      id: `evt-tls-${++n}`,
      attempt: 1,
      payload: '{"order":1}',
      headers: {},
      timeoutMs,
      dueAt: Date.now(),
    },
    target,
    `tls-${n}`,
  );
}

/** A TLS record of type handshake (a ClientHello, for a client's first bytes). */
const isTlsHandshake = (b: Buffer | undefined) => b !== undefined && b.length >= 2 && b[0] === 0x16 && b[1] === 0x03;
const sawSecret = (hole: BlackHole) => hole.firstBytes.some((b) => b.includes(SECRET_BYTES));

async function deliverTo(channel: Channel, target: BrokerTarget, timeoutMs?: number): Promise<DeliveryOutcome> {
  try {
    return await channel.deliver(event(target, timeoutMs), signal);
  } finally {
    await channel.close();
  }
}

const TLS_TARGETS: [string, () => Channel, (port: number) => BrokerTarget][] = [
  [
    'redis (rediss://)',
    () => new RedisChannel({ policy }),
    (port) => ({ kind: 'redis', url: `rediss://belfry:${SECRET}@127.0.0.1:${port}`, stream: 's', maxLen: null }),
  ],
  [
    'amqp (amqps://)',
    () => new AmqpChannel({ policy }),
    (port) => ({ kind: 'amqp', url: `amqps://belfry:${SECRET}@127.0.0.1:${port}`, exchange: 'x', routingKey: 'k' }),
  ],
  [
    'kafka (ssl: true, SASL PLAIN)',
    () => new KafkaChannel({ policy }),
    (port) => ({
      kind: 'kafka',
      brokers: [`127.0.0.1:${port}`],
      topic: 't',
      ssl: true,
      sasl: { mechanism: 'plain', username: 'belfry', password: SECRET },
    }),
  ],
];

describe('TLS means TLS: a TLS destination never speaks plaintext', () => {
  for (const [name, channel, target] of TLS_TARGETS) {
    it(`${name}: the first bytes are a ClientHello, the attempt fails, no credential in clear`, async () => {
      const hole = await blackHole();
      try {
        const outcome = await deliverTo(channel(), target(hole.port), 500);
        assert.equal(outcome.kind, 'retry', JSON.stringify(outcome));
        assert.ok(hole.accepted >= 1, 'it connected');
        for (const bytes of hole.firstBytes)
          assert.ok(
            isTlsHandshake(bytes),
            `a connection began with ${bytes.subarray(0, 8).toString('hex')}, not a TLS handshake`,
          );
        assert.equal(sawSecret(hole), false, 'a credential crossed in clear');
      } finally {
        await hole.close();
      }
    });
  }

  it("kafka source (ssl: true): the reader's first bytes are a ClientHello, no credential in clear", async () => {
    const hole = await blackHole();
    const source = {
      tenantId: 'tenant-tls',
      name: 'tls-source',
      version: 1,
      spec: {
        kind: 'kafka',
        brokers: [`127.0.0.1:${hole.port}`],
        topic: 't',
        groupId: 'g',
        deadLetterTopic: null,
        start: 'earliest',
        ssl: true,
        sasl: { mechanism: 'plain', username: 'belfry', password: SECRET },
      },
    } as unknown as SourceRecord;
    const reader = new KafkaSourceReader(
      {
        source,
        policy,
        now: () => Date.now(),
        report: async () => {},
        onCrash: () => {},
        sink: { admit: async () => ({ granted: 0, waitMs: 1_000 }), ingest: async () => [] },
      },
      { connectTimeoutMs: 500, sessionTimeoutMs: 6_000 },
    );
    const started = reader.start().catch(() => {});
    try {
      await waitUntil('the reader to send its first bytes', () => (hole.firstBytes[0]?.length ?? 0) > 0, 5_000);
      assert.ok(isTlsHandshake(hole.firstBytes[0]), `began with ${hole.firstBytes[0].subarray(0, 8).toString('hex')}`);
      assert.equal(sawSecret(hole), false);
    } finally {
      await reader.stop();
      await started;
      await hole.close();
    }
  });

  describe('nats (tls://): the server speaks first', () => {
    const natsTarget = (port: number): BrokerTarget => ({
      kind: 'nats',
      servers: [`tls://belfry:${SECRET}@127.0.0.1:${port}`],
      subject: 's',
      token: SECRET,
    });

    it('a silent server: the client sends nothing, and the attempt fails', async () => {
      const hole = await blackHole();
      try {
        const outcome = await deliverTo(new NatsChannel({ policy }), natsTarget(hole.port), 500);
        assert.equal(outcome.kind, 'retry');
        assert.ok(hole.accepted >= 1);
        assert.deepEqual(
          hole.firstBytes.map((b) => b.length),
          hole.firstBytes.map(() => 0),
          'nothing was sent',
        );
      } finally {
        await hole.close();
      }
    });

    it('a plain INFO that offers no TLS (a downgrade): refused before a single byte is sent', async () => {
      const hole = await blackHole(
        'INFO {"server_id":"x","version":"2.10.0","headers":true,"max_payload":1048576,"tls_required":false}\r\n',
      );
      try {
        const outcome = await deliverTo(new NatsChannel({ policy }), natsTarget(hole.port), 1_000);
        assert.equal(outcome.kind, 'retry');
        assert.match((outcome as { reason: string }).reason, /does not offer TLS/);
        assert.deepEqual(
          hole.firstBytes.map((b) => b.length),
          hole.firstBytes.map(() => 0),
          'nothing was sent',
        );
      } finally {
        await hole.close();
      }
    });

    it('a plain INFO that requires TLS: the next bytes are a ClientHello, no credential in clear', async () => {
      const hole = await blackHole(
        'INFO {"server_id":"x","version":"2.10.0","headers":true,"max_payload":1048576,"tls_required":true}\r\n',
      );
      try {
        const outcome = await deliverTo(new NatsChannel({ policy }), natsTarget(hole.port), 500);
        assert.equal(outcome.kind, 'retry');
        assert.ok(
          hole.firstBytes.length >= 1 && hole.firstBytes.every(isTlsHandshake),
          hole.firstBytes.map((b) => b.subarray(0, 8).toString('hex')).join(),
        );
        assert.equal(sawSecret(hole), false);
      } finally {
        await hole.close();
      }
    });
  });
});

describe('credentials never go without TLS unless the destination says so', () => {
  it('controls: with allowInsecureCredentials, the recorder sees the credential (Redis AUTH, NATS CONNECT)', async () => {
    const redisHole = await blackHole();
    const natsHole = await blackHole(
      'INFO {"server_id":"x","version":"2.10.0","headers":true,"max_payload":1048576}\r\n',
    );
    try {
      const redis = {
        kind: 'redis',
        url: `redis://belfry:${SECRET}@127.0.0.1:${redisHole.port}`,
        stream: 's',
        maxLen: null,
        allowInsecureCredentials: true,
      } as BrokerTarget;
      const nats = {
        kind: 'nats',
        servers: [`nats://belfry:${SECRET}@127.0.0.1:${natsHole.port}`],
        subject: 's',
        token: null,
        allowInsecureCredentials: true,
      } as BrokerTarget;
      assert.equal((await deliverTo(new RedisChannel({ policy }), redis, 500)).kind, 'retry');
      assert.equal((await deliverTo(new NatsChannel({ policy }), nats, 500)).kind, 'retry');
      assert.equal(sawSecret(redisHole), true, 'the AUTH went in clear, as asked');
      assert.equal(sawSecret(natsHole), true, 'the CONNECT went in clear, as asked');
    } finally {
      await redisHole.close();
      await natsHole.close();
    }
  });

  it('a target stored without the opt-in (before the rule) is discarded at connect, and no connection is made', async () => {
    const hole = await blackHole('INFO {"server_id":"x","version":"2.10.0","headers":true}\r\n');
    try {
      const targets: [Channel, BrokerTarget][] = [
        [
          new RedisChannel({ policy }),
          { kind: 'redis', url: `redis://belfry:${SECRET}@127.0.0.1:${hole.port}`, stream: 's', maxLen: null },
        ],
        [
          new AmqpChannel({ policy }),
          { kind: 'amqp', url: `amqp://belfry:${SECRET}@127.0.0.1:${hole.port}`, exchange: 'x', routingKey: 'k' },
        ],
        [
          new NatsChannel({ policy }),
          { kind: 'nats', servers: [`nats://127.0.0.1:${hole.port}`], subject: 's', token: SECRET },
        ],
        [
          new KafkaChannel({ policy }),
          {
            kind: 'kafka',
            brokers: [`127.0.0.1:${hole.port}`],
            topic: 't',
            ssl: false,
            sasl: { mechanism: 'plain', username: 'u', password: SECRET },
          },
        ],
      ];
      for (const [channel, target] of targets) {
        const outcome = await deliverTo(channel, target, 500);
        assert.equal(outcome.kind, 'discard', `${target.kind}: ${JSON.stringify(outcome)}`);
        assert.match((outcome as { reason: string }).reason, /without TLS.*allowInsecureCredentials/);
        assert.doesNotMatch((outcome as { reason: string }).reason, new RegExp(SECRET));
      }
      assert.equal(hole.accepted, 0, 'no connection was made');
    } finally {
      await hole.close();
    }
  });
});

describe('nats: tls:// delivers through a nats-server with TLS and a login', () => {
  let dir: string;
  let server: ChildProcess | null = null;
  let port: number;
  let ca: string;
  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'belfry-nats-tls-'));
    // A self-signed certificate for 127.0.0.1 (the address the destination names) and localhost
    // (the name the test's own nats.js client checks when given an address).
    const { keyPath, certPath } = selfSignedCertificate(dir, 'IP:127.0.0.1,DNS:localhost');
    ca = readFileSync(certPath, 'utf8');
    port = await closedPort();
    server = spawn(
      '/usr/sbin/nats-server',
      [
        '-a',
        '127.0.0.1',
        '-p',
        String(port),
        '-js',
        '-sd',
        join(dir, 'js'),
        '--tls',
        '--tlscert',
        certPath,
        '--tlskey',
        keyPath,
        '--user',
        'belfry',
        '--pass',
        SECRET,
      ],
      { stdio: 'ignore' },
    );
    await waitUntil(
      'nats-server with TLS to accept connections',
      () =>
        new Promise<boolean>((resolve) => {
          const s = net.connect({ host: '127.0.0.1', port }, () => {
            s.destroy();
            resolve(true);
          });
          s.on('error', () => resolve(false));
        }),
      15_000,
      50,
    );
  });
  after(() => {
    server?.kill('SIGKILL');
    rmSync(dir, { recursive: true, force: true });
  });

  it('delivers over TLS (the certificate checked against 127.0.0.1), and stores the message', async () => {
    const admin = await natsConnect({ servers: `127.0.0.1:${port}`, tls: { ca }, user: 'belfry', pass: SECRET });
    try {
      const jsm = await jetstreamManager(admin);
      await jsm.streams.add({ name: 'belfry_tls', subjects: ['belfry.tls'] });
      const channel = new NatsChannel({ policy, tlsOptions: { ca } });
      const target: BrokerTarget = {
        kind: 'nats',
        servers: [`tls://belfry:${SECRET}@127.0.0.1:${port}`],
        subject: 'belfry.tls',
        token: null,
      };
      const outcome = await deliverTo(channel, target, 5_000);
      assert.equal(outcome.kind, 'delivered', JSON.stringify(outcome));
      assert.equal((await jsm.streams.info('belfry_tls')).state.messages, 1);
      // Without the CA the certificate is not trusted: no delivery, never a plaintext retry.
      const untrusted = await deliverTo(new NatsChannel({ policy }), target, 2_000);
      assert.equal(untrusted.kind, 'retry');
      assert.equal((await jsm.streams.info('belfry_tls')).state.messages, 1);
    } finally {
      await admin.close();
    }
  });
});
