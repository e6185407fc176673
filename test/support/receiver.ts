/**
 * A loopback webhook receiver for tests and benchmarks, on node:http with keep-alive.
 *
 * Every request is recorded (after its body arrives, before it is answered) and announced on an
 * emitter, so `waitFor` wakes as soon as its condition holds: no polling, no sleeps. `behavior`
 * decides the answer per request: a status, a delay, extra headers, a body, or `hang` (never
 * answer; the request stays open until the client gives up or close() runs).
 */
import { EventEmitter } from 'node:events';
import { createServer, type IncomingHttpHeaders, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';

export interface ReceivedRequest {
  method: string;
  path: string;
  headers: IncomingHttpHeaders;
  body: string;
  /** Date.now() when the body had fully arrived. */
  receivedAt: number;
  /** The body parsed as JSON, or null when it is not JSON. */
  json: unknown;
  /** Which connection carried it: 1 for the first socket the receiver accepted, and so on. */
  socketId: number;
}

export interface ReceiverResponse {
  status: number;
  /** Answer after this many ms (simulates a slow endpoint). */
  delayMs?: number;
  /** Never answer. */
  hang?: boolean;
  headers?: Record<string, string>;
  /** Response body; default empty. */
  body?: string;
  /** Called just before the response is written (after `delayMs`): the request is in flight until then. */
  onSend?: () => void;
}

export interface ReceiverOptions {
  behavior?: (req: ReceivedRequest) => ReceiverResponse;
  /** Bound on a request body; larger ones get 413 and are not recorded. Default 16 MiB. */
  bodyBytesMax?: number;
  /** Keep only a count, not the requests (a flood of them); `requests` stays empty. Default false. */
  countOnly?: boolean;
}

export interface Receiver {
  /** http://127.0.0.1:<port> */
  url: string;
  port: number;
  requests: ReceivedRequest[];
  /** Number of requests received. */
  readonly count: number;
  /** Number of distinct sockets (connections) accepted so far. */
  readonly socketCount: number;
  /** Resolves as soon as `predicate(requests)` holds; rejects once `timeoutMs` pass without it. */
  waitFor(predicate: (reqs: ReceivedRequest[]) => boolean, timeoutMs: number): Promise<void>;
  /** Stops listening and destroys every socket, hung ones included. */
  close(): Promise<void>;
}

const BODY_BYTES_MAX_DEFAULT = 16 * 1024 * 1024;

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return null;
  }
}

export async function startReceiver(opts: ReceiverOptions = {}): Promise<Receiver> {
  const behavior = opts.behavior ?? (() => ({ status: 200 }));
  const bodyBytesMax = opts.bodyBytesMax ?? BODY_BYTES_MAX_DEFAULT;
  const requests: ReceivedRequest[] = [];
  const emitter = new EventEmitter();
  let counted = 0;
  emitter.setMaxListeners(0);
  const sockets = new Set<Socket>();
  const socketIds = new WeakMap<Socket, number>();
  const delayTimers = new Set<NodeJS.Timeout>();
  let socketsSeen = 0;

  const answer = (res: ServerResponse, out: ReceiverResponse) => {
    if (out.hang) return;
    const send = () => {
      if (res.destroyed) return;
      out.onSend?.();
      res.writeHead(out.status, out.headers);
      res.end(out.body ?? '');
    };
    if (!out.delayMs) return send();
    const timer = setTimeout(() => {
      delayTimers.delete(timer);
      send();
    }, out.delayMs);
    delayTimers.add(timer);
  };

  const server = createServer({ keepAlive: true }, (req, res) => {
    const chunks: Buffer[] = [];
    let bytes = 0;
    req.on('data', (chunk: Buffer) => {
      bytes += chunk.length;
      if (bytes <= bodyBytesMax) chunks.push(chunk);
    });
    req.on('end', () => {
      if (bytes > bodyBytesMax) {
        res.writeHead(413).end();
        return;
      }
      const body = Buffer.concat(chunks).toString('utf8');
      const received: ReceivedRequest = {
        method: req.method ?? '',
        path: req.url ?? '',
        headers: req.headers,
        body,
        receivedAt: Date.now(),
        json: parseJson(body),
        socketId: socketIds.get(req.socket) ?? 0,
      };
      if (opts.countOnly) counted++;
      else requests.push(received);
      let out: ReceiverResponse;
      try {
        out = behavior(received);
      } catch (err) {
        out = { status: 500, body: `receiver behavior threw: ${String(err)}` };
      }
      answer(res, out);
      emitter.emit('request');
    });
  });
  server.on('connection', (socket: Socket) => {
    socketIds.set(socket, ++socketsSeen);
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  });

  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      server.off('error', reject);
      resolve();
    });
  });
  const port = (server.address() as AddressInfo).port;

  const waitFor = (predicate: (reqs: ReceivedRequest[]) => boolean, timeoutMs: number) =>
    new Promise<void>((resolve, reject) => {
      if (predicate(requests)) return resolve();
      const onRequest = () => {
        if (!predicate(requests)) return;
        cleanup();
        resolve();
      };
      const timer = setTimeout(() => {
        cleanup();
        reject(
          new Error(`receiver.waitFor: condition not met within ${timeoutMs}ms (${requests.length} requests received)`),
        );
      }, timeoutMs);
      const cleanup = () => {
        clearTimeout(timer);
        emitter.off('request', onRequest);
      };
      emitter.on('request', onRequest);
    });

  const close = async () => {
    for (const timer of delayTimers) clearTimeout(timer);
    delayTimers.clear();
    const closed = new Promise<void>((resolve) => server.close(() => resolve()));
    for (const socket of sockets) socket.destroy();
    server.closeAllConnections();
    await closed;
  };

  return {
    url: `http://127.0.0.1:${port}`,
    port,
    requests,
    get count() {
      return opts.countOnly ? counted : requests.length;
    },
    get socketCount() {
      return socketsSeen;
    },
    waitFor,
    close,
  };
}
