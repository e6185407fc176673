/**
 * The Kafka channel against a real Kafka-protocol cluster (librdkafka's mock cluster, started by
 * the test), through the Channel conformance suite; KafkaJS consumes in a group to read back.
 */
import { Kafka, logLevel, type Consumer } from 'kafkajs';
import { AddressPolicy } from '../../core/address.ts';
import { startMockKafka, type MockKafka } from '../../../test/support/kafka/mock-cluster.ts';
import { channelConformance, type ReceivedMessage, type Sink } from '../conformance/suite.ts';
import { KafkaChannel } from './index.ts';

let n = 0;

function fields(brokers: string[], topic: string): Sink['fields'] {
  return {
    kind: 'kafka',
    target: { kind: 'kafka', brokers, topic, sasl: null, ssl: false },
    poolKey: `kafka-test-${++n}`,
  };
}

channelConformance('kafka', async () => {
  const mock: MockKafka = await startMockKafka(1);
  const brokers = mock.bootstrap.split(',');
  const kafka = new Kafka({ clientId: 'belfry-test', brokers, logLevel: logLevel.NOTHING });
  const consumers: Consumer[] = [];
  const channel = new KafkaChannel({ policy: new AddressPolicy(['127.0.0.1']) });
  return {
    channel,
    belfryHeaders: true,
    idOf: (m) => m.headers['belfry-event-id'],
    async sink() {
      const topic = `belfry-test-${process.pid}-${++n}`;
      // Three partitions: a group's order holds because its key keeps it on one.
      await mock.createTopic(topic, 3);
      const got: ReceivedMessage[] = [];
      const consumer = kafka.consumer({ groupId: `${topic}-reader` });
      consumers.push(consumer);
      await consumer.connect();
      await consumer.subscribe({ topic, fromBeginning: true });
      await consumer.run({
        eachMessage: async ({ message }) => {
          const headers: Record<string, string> = {};
          for (const [k, v] of Object.entries(message.headers ?? {})) headers[k] = String(v);
          got.push({ body: message.value ?? Buffer.alloc(0), headers, key: message.key?.toString() });
        },
      });
      return {
        fields: fields(brokers, topic),
        async read(count, timeoutMs) {
          const deadline = Date.now() + timeoutMs;
          while (got.length < count && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
          return got;
        },
        cleanup: () => consumer.disconnect(),
      };
    },
    async refusing() {
      // Metadata of this topic answers TOPIC_AUTHORIZATION_FAILED (29).
      const topic = `belfry-test-denied-${process.pid}-${++n}`;
      await mock.topicError(topic, 29);
      return fields(brokers, topic);
    },
    at: (port) => fields([`127.0.0.1:${port}`], 'belfry-test-nowhere'),
    async close() {
      await channel.close();
      for (const c of consumers) await c.disconnect().catch(() => {});
      await mock.stop();
    },
  };
});
