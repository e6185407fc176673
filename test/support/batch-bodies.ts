/** Request bodies for tests that push the API's size bounds. */

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
