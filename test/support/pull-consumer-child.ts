/**
 * A pull consumer process for end-to-end tests: runs `belfry/client`'s consumer on one
 * destination and prints one JSON line per handler start and end (`{"ev":"start"|"end", "id",
 * "g", "s", "attempt", "at"}`, `at` in epoch ms), so the test can check order and overlap across
 * processes. Each handler takes HANDLER_MS (± half). Env: BELFRY_URL, BELFRY_KEY, BELFRY_DEST,
 * BELFRY_VISIBILITY, HANDLER_MS. Stops gracefully on SIGTERM.
 */
import { BelfryClient } from '@belfry/client';

const env = (name: string): string => {
  const v = process.env[name];
  if (!v) throw new Error(`${name} is not set`);
  return v;
};
const handlerMs = Number(process.env.HANDLER_MS ?? 100);
const out = (line: Record<string, unknown>) => process.stdout.write(JSON.stringify({ ...line, at: Date.now() }) + '\n');

const client = new BelfryClient({ baseUrl: env('BELFRY_URL'), apiKey: env('BELFRY_KEY') });
const consumer = client.consumer(env('BELFRY_DEST'), {
  concurrency: 4,
  visibilityTimeout: env('BELFRY_VISIBILITY'),
  wait: '1s',
});
consumer.on('*', async (event) => {
  const { g, s } = event.payload as { g: string | null; s: number };
  out({ ev: 'start', id: event.id, g, s, attempt: event.attempt });
  await new Promise((r) => setTimeout(r, handlerMs / 2 + Math.random() * handlerMs));
  out({ ev: 'end', id: event.id, g, s, attempt: event.attempt });
});
await consumer.start();
out({ ev: 'ready' });
process.once('SIGTERM', () => {
  void consumer.stop().then(() => process.exit(0));
});
