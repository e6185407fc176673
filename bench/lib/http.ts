/** A keep-alive HTTP client for the driver: one undici Pool per scenario, JSON in and out. */
import { Pool } from 'undici';

/** Bound on every request: a node that stops answering fails the run instead of hanging it. */
export const REQUEST_MS_MAX = 60_000;

export interface JsonResponse {
  status: number;
  body: any;
}

export interface BenchClient {
  /** `body` may be a pre-serialised string, so building bodies stays out of a measured window. */
  call(
    method: 'GET' | 'POST' | 'PUT',
    path: string,
    body?: unknown,
    extraHeaders?: Record<string, string>,
  ): Promise<JsonResponse>;
  close(): Promise<void>;
}

export function createClient(url: string, key: string, connections: number): BenchClient {
  const pool = new Pool(url, {
    connections,
    pipelining: 1,
    keepAliveTimeout: 30_000,
    headersTimeout: REQUEST_MS_MAX,
    bodyTimeout: REQUEST_MS_MAX,
  });
  const headers = { authorization: `Bearer ${key}`, 'content-type': 'application/json' };
  return {
    async call(method, path, body, extraHeaders) {
      const res = await pool.request({
        method,
        path,
        headers: { ...(body === undefined ? { authorization: headers.authorization } : headers), ...extraHeaders },
        body: body === undefined ? undefined : typeof body === 'string' ? body : JSON.stringify(body),
      });
      const text = await res.body.text();
      return { status: res.statusCode, body: text ? JSON.parse(text) : null };
    },
    close: () => pool.close(),
  };
}

/** Runs `worker` on `concurrency` loops that share one counter of `total` jobs; resolves when all are done. */
export async function runConcurrently(
  total: number,
  concurrency: number,
  worker: (index: number) => Promise<void>,
): Promise<void> {
  let next = 0;
  const loop = async () => {
    while (next < total) await worker(next++);
  };
  await Promise.all(Array.from({ length: Math.min(concurrency, total) }, loop));
}
