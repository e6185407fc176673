/** Request bodies for tests that push the API's size bounds. */
import { bearer, type TestApp } from './app.ts';

/**
 * A `POST /v1/events/batch` body of 1,000 events whose payloads are small objects (the costliest
 * content per byte a batch accepts), padded so the body is within 64 bytes of `bytes`.
 */
export function largestBatch(prefix: string, bytes: number): string {
  const item = { a: 1, b: 'two', c: [1, 2, 3], d: { e: true } };
  const perEvent = Math.floor(bytes / 1_000);
  const events = Array.from({ length: 1_000 }, (_, i) => {
    const base = {
      id: `${prefix}-${String(i).padStart(4, '0')}`,
      destination: 'orders',
      delay: '1h',
      payload: { items: [] as unknown[], pad: '' },
    };
    const baseBytes = JSON.stringify(base).length + 1;
    const itemBytes = JSON.stringify(item).length + 1;
    base.payload.items = Array(Math.floor((perEvent - baseBytes - 64) / itemBytes)).fill(item);
    base.payload.pad = 'p'.repeat(Math.max(0, perEvent - JSON.stringify(base).length - 1 - 64));
    return JSON.stringify(base);
  });
  const body = `{"events":[${events.join(',')}]}`;
  return body.slice(0, -2) + ' '.repeat(Math.max(0, bytes - 64 - body.length)) + ']}';
}

/** The destination `orders` the batches above name, at an address nothing answers (their events are an hour away). */
export async function putOrdersDestination(t: TestApp): Promise<void> {
  const put = await t.app.inject({
    method: 'PUT',
    url: '/v1/destinations/orders',
    headers: bearer(t.tenantKey),
    payload: { url: 'http://127.0.0.1:9/x' },
  });
  if (put.statusCode !== 201) throw new Error(`PUT /v1/destinations/orders answered ${put.statusCode}: ${put.body}`);
}

/** `POST /v1/events/batch` with `body` as it is, with the tenant's key. */
export function postBatch(t: TestApp, body: string) {
  return t.app.inject({
    method: 'POST',
    url: '/v1/events/batch',
    headers: { ...bearer(t.tenantKey), 'content-type': 'application/json' },
    payload: body,
  });
}
