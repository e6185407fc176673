/**
 * The private-address guard at connect, for every broker channel: an address the policy denies
 * is never connected to, and the delivery is discarded with the reason; `--allow-hosts` opens it.
 * Kafka's brokers named by the cluster's metadata pass the same guard as the bootstrap servers.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { AddressPolicy } from '../../core/address.ts';
import type { BrokerTarget } from '../../core/destination.ts';
import { startMockKafka, type MockKafka } from '../../../test/support/kafka/mock-cluster.ts';
import type { Channel } from '../channel.ts';
import { AmqpChannel } from '../amqp/index.ts';
import { dueEvent } from '../conformance/suite.ts';
import { KafkaChannel } from '../kafka/index.ts';
import { NatsChannel } from '../nats/index.ts';
import { RedisChannel } from '../redis/index.ts';

const signal = new AbortController().signal;
let n = 0;
const fields = (target: BrokerTarget) => ({ kind: target.kind, target, poolKey: `guard-${++n}` });

const TARGETS: [string, (policy: AddressPolicy) => Channel, (host: string) => BrokerTarget][] = [
  [
    'redis',
    (policy) => new RedisChannel({ policy }),
    (host) => ({ kind: 'redis', url: `redis://${host}:6379`, stream: 'belfry-guard-test', maxLen: null }),
  ],
  [
    'nats',
    (policy) => new NatsChannel({ policy }),
    (host) => ({ kind: 'nats', servers: [`nats://${host}:4222`], subject: 'belfry.guard.test', token: null }),
  ],
  [
    'amqp',
    (policy) => new AmqpChannel({ policy }),
    (host) => ({ kind: 'amqp', url: `amqp://${host}:5672`, exchange: 'belfry-guard-test', routingKey: 'x' }),
  ],
  [
    'kafka',
    (policy) => new KafkaChannel({ policy }),
    (host) => ({ kind: 'kafka', brokers: [`${host}:9092`], topic: 'belfry-guard-test', sasl: null, ssl: false }),
  ],
];

describe('broker channels: the address guard at connect', () => {
  for (const [kind, make, target] of TARGETS) {
    // Kafka brokers are host:port without IPv6 literals (refused at registration).
    for (const host of kind === 'kafka' ? ['127.0.0.1', 'localhost'] : ['127.0.0.1', 'localhost', '[::1]']) {
      it(`${kind}: refuses ${host} without --allow-hosts (discard, address denied)`, async () => {
        const channel = make(new AddressPolicy([]));
        try {
          const outcome = await channel.deliver(dueEvent(fields(target(host)), { timeoutMs: 3_000 }), signal);
          assert.equal(outcome.kind, 'discard', JSON.stringify(outcome));
          assert.match((outcome as { reason: string }).reason, /address denied/);
        } finally {
          await channel.close();
        }
      });
    }
  }
});

describe('kafka: brokers named by the cluster pass the guard too', () => {
  let mock: MockKafka;
  before(async () => {
    mock = await startMockKafka(1);
    await mock.createTopic('belfry-guard-topic', 1);
  });
  after(async () => {
    await mock?.stop();
  });

  it('delivers when --allow-hosts opens the address the cluster names', async () => {
    const channel: Channel = new KafkaChannel({ policy: new AddressPolicy(['127.0.0.1']) });
    try {
      const outcome = await channel.deliver(
        dueEvent(
          fields({
            kind: 'kafka',
            brokers: mock.bootstrap.split(','),
            topic: 'belfry-guard-topic',
            sasl: null,
            ssl: false,
          }),
        ),
        signal,
      );
      assert.equal(outcome.kind, 'delivered', JSON.stringify(outcome));
    } finally {
      await channel.close();
    }
  });

  it('refuses a broker the metadata names at a denied address, though the bootstrap name was allowed', async () => {
    // "localhost" is allowed by name; the cluster answers with its brokers at 127.0.0.1, which is not.
    const channel: Channel = new KafkaChannel({ policy: new AddressPolicy(['localhost']) });
    const port = mock.bootstrap.split(',')[0].split(':')[1];
    try {
      const outcome = await channel.deliver(
        dueEvent(
          fields({
            kind: 'kafka',
            brokers: [`localhost:${port}`],
            topic: 'belfry-guard-topic',
            sasl: null,
            ssl: false,
          }),
          { timeoutMs: 3_000 },
        ),
        signal,
      );
      assert.notEqual(outcome.kind, 'delivered', JSON.stringify(outcome));
      assert.match((outcome as { reason: string }).reason, /address denied|allow-hosts/, JSON.stringify(outcome));
    } finally {
      await channel.close();
    }
  });
});
