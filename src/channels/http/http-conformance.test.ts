/** The HTTP webhook channel through the Channel conformance suite, against loopback receivers. */
import { startReceiver, type Receiver } from '../../../test/support/receiver.ts';
import { channelConformance, type ReceivedMessage } from '../conformance/suite.ts';
import { HttpChannel } from './index.ts';

channelConformance('http', async () => {
  const receivers: Receiver[] = [];
  const channel = new HttpChannel({ allowHosts: ['127.0.0.1'] });
  const toMessage = (r: Receiver['requests'][number]): ReceivedMessage => {
    const headers: Record<string, string> = {};
    for (const [k, v] of Object.entries(r.headers))
      if (v !== undefined) headers[k] = Array.isArray(v) ? v.join(', ') : v;
    return { body: Buffer.from(r.body, 'utf8'), headers };
  };
  return {
    channel,
    belfryHeaders: false,
    idOf: (m) => m.headers['webhook-id'],
    async sink() {
      const receiver = await startReceiver();
      receivers.push(receiver);
      return {
        fields: { target: `${receiver.url}/hooks` },
        async read(count, timeoutMs) {
          await receiver.waitFor((reqs) => reqs.length >= count, timeoutMs).catch(() => {});
          return receiver.requests.map(toMessage);
        },
        cleanup: () => receiver.close(),
      };
    },
    async refusing() {
      // A receiver that answers 404: a permanent refusal for a webhook.
      const receiver = await startReceiver({ behavior: () => ({ status: 404 }) });
      receivers.push(receiver);
      return { target: `${receiver.url}/gone` };
    },
    at: (port) => ({ target: `http://127.0.0.1:${port}/hooks` }),
    async close() {
      await channel.close();
      for (const r of receivers) await r.close().catch(() => {});
    },
  };
});
