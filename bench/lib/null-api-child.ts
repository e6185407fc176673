/**
 * A JSON API that does nothing: the ceiling of single-event requests over HTTP on this machine.
 * Fastify (as Belfry's API), no logger, no auth, no validation, no store: POST /v1/events parses
 * the body and answers 201 with the body Belfry would answer (toEventJson of the event, so the
 * response is as large), and the etag header. Sends its port to the parent over IPC.
 */
import Fastify from 'fastify';
import { toEventJson } from '../../src/api/event-json.ts';
import { createdRecord } from '../../src/store/core/event-writes.ts';

interface Body {
  id: string;
  fireAt: number;
  destination: string;
  payload: unknown;
}

const app = Fastify({ logger: false });
app.post<{ Body: Body }>('/v1/events', async (request, reply) => {
  const b = request.body;
  const event = createdRecord(
    {
      tenantId: 't',
      id: b.id,
      shard: 0,
      fireAt: b.fireAt,
      destination: { name: b.destination },
      payload: JSON.stringify(b.payload),
      headers: {},
      group: null,
      retry: null,
      expireAt: null,
      tags: {},
      type: null,
      requestHash: '',
    },
    1,
    Date.now(),
  );
  reply.status(201).header('etag', '"1"');
  return toEventJson(event);
});
await app.listen({ host: '127.0.0.1', port: 0 });
const address = app.server.address();
process.send!({ port: typeof address === 'object' && address !== null ? address.port : 0 });
process.on('disconnect', () => void app.close().then(() => process.exit(0)));
