/**
 * A peer's worker in a process of its own: `peer-worker-child.ts <peer> <namespace> <receiverUrl>`.
 * Each job due is POSTed to the receiver over keep-alive connections, with the job's id in the
 * `webhook-id` header (as Belfry sends its event id), and fails when the receiver does not
 * answer 2xx. Stops on a "close" message or when the parent goes away.
 */
import { Pool } from 'undici';
import { loadPeer, type JobData, type PeerKey, type WorkerChildMessage } from './peer.ts';

/** Connections to the receiver: as many as Belfry's destination may use. */
const RECEIVER_CONNECTIONS = 256;
const REQUEST_MS_MAX = 10_000;

const [key, namespace, receiverUrl, concurrencyArg] = process.argv.slice(2) as [PeerKey, string, string, string];
/** Jobs in flight at most (empty: the peer's own setting alone bounds them). */
const concurrency = concurrencyArg ? Number(concurrencyArg) : undefined;
const pool = new Pool(receiverUrl, {
  connections: RECEIVER_CONNECTIONS,
  pipelining: 1,
  headersTimeout: REQUEST_MS_MAX,
  bodyTimeout: REQUEST_MS_MAX,
});

let inFlight = 0;
const waiting: (() => void)[] = [];

/** POSTs the job, at most `concurrency` at once (a job waits for a slot). */
async function deliverBounded(data: JobData): Promise<void> {
  if (concurrency === undefined) return deliver(data);
  while (inFlight >= concurrency) await new Promise<void>((resolve) => waiting.push(resolve));
  inFlight++;
  try {
    await deliver(data);
  } finally {
    inFlight--;
    waiting.shift()?.();
  }
}

async function deliver(data: JobData): Promise<void> {
  const res = await pool.request({
    method: 'POST',
    path: '/',
    headers: { 'content-type': 'application/json', 'webhook-id': data.id },
    body: JSON.stringify(data),
  });
  await res.body.dump();
  if (res.statusCode < 200 || res.statusCode > 299) throw new Error(`receiver answered ${res.statusCode}`);
}

try {
  const peer = await loadPeer(key);
  const worker = await peer.startWorker(namespace, deliverBounded, concurrency);
  let closing = false;
  const close = async () => {
    if (closing) return;
    closing = true;
    await worker.close().catch((err: unknown) => console.error(`${key} worker close:`, err));
    await pool.close();
    process.exit(0);
  };
  process.on('message', (msg: { type: string }) => {
    if (msg.type === 'close') void close();
  });
  process.on('disconnect', () => void close());
  process.send!({ type: 'ready' } satisfies WorkerChildMessage);
} catch (err) {
  process.send!({ type: 'error', message: String(err) } satisfies WorkerChildMessage);
  process.exit(1);
}
