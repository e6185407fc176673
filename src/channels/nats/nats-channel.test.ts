/** The NATS JetStream channel against the machine's nats-server (:4222), through the Channel conformance suite. */
import { jetstreamManager } from '@nats-io/jetstream';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { AddressPolicy } from '../../core/address.ts';
import { channelConformance, type Sink } from '../conformance/suite.ts';
import { NatsChannel } from './index.ts';

const NATS_URL = process.env.BELFRY_TEST_NATS_URL ?? 'nats://127.0.0.1:4222';
let n = 0;

function fields(server: string, subject: string): Sink['fields'] {
  return {
    kind: 'nats',
    target: { kind: 'nats', servers: [server], subject, token: null },
    poolKey: `nats-test-${++n}`,
  };
}

channelConformance('nats', async () => {
  const nc: NatsConnection = await connect({ servers: NATS_URL.replace('nats://', '') });
  const jsm = await jetstreamManager(nc);
  const streams: string[] = [];
  const channel = new NatsChannel({ policy: new AddressPolicy(['127.0.0.1']) });
  return {
    channel,
    belfryHeaders: true,
    idOf: (m) => m.headers['belfry-event-id'],
    async sink() {
      const name = `belfry_test_${process.pid}_${++n}`;
      const subject = `belfry.test.${process.pid}.${n}`;
      await jsm.streams.add({ name, subjects: [subject] });
      streams.push(name);
      return {
        fields: fields(NATS_URL, subject),
        async read(count, timeoutMs) {
          const deadline = Date.now() + timeoutMs;
          while ((await jsm.streams.info(name)).state.messages < count && Date.now() < deadline)
            await new Promise((r) => setTimeout(r, 20));
          const total = (await jsm.streams.info(name)).state.messages;
          const out = [];
          for (let seq = 1; seq <= total; seq++) {
            const m = await jsm.streams.getMessage(name, { seq });
            if (!m) throw new Error(`stream ${name} has no message ${seq}`);
            const headers: Record<string, string> = {};
            for (const k of m.header?.keys() ?? []) headers[k] = m.header!.get(k);
            out.push({ body: Buffer.from(m.data), headers });
          }
          return out;
        },
        cleanup: async () => void (await jsm.streams.delete(name).catch(() => false)),
      };
    },
    // No stream listens on this subject: JetStream answers 503 no responders.
    refusing: async () => fields(NATS_URL, `belfry.test.nostream.${process.pid}.${++n}`),
    at: (port) => fields(`nats://127.0.0.1:${port}`, 'belfry.test.nowhere'),
    async close() {
      await channel.close();
      for (const s of streams) await jsm.streams.delete(s).catch(() => false);
      await nc.close();
    },
  };
});
