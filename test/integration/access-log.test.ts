/**
 * The access log: off by default (no line per request); on, one info line per answered request
 * with its method, route pattern (never the path's ids), status, duration and tenant id, for
 * answers of every kind (2xx, 4xx from validation and from auth, a 404 with no route).
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { pino } from 'pino';
import { ADMIN_KEY, bearer, makeTestApp } from '../support/app.ts';

/** A logger at info whose every line is kept, parsed. */
function capturingLogger() {
  const lines: Record<string, unknown>[] = [];
  const logger = pino({ level: 'info' }, { write: (line: string) => void lines.push(JSON.parse(line)) });
  return { logger, lines, requests: () => lines.filter((l) => l.msg === 'request') };
}

describe('access log', () => {
  test('off by default: requests write no line', async () => {
    const log = capturingLogger();
    const t = await makeTestApp({ logger: log.logger });
    try {
      const res = await t.app.inject({ method: 'GET', url: '/v1/events/nope', headers: bearer(t.tenantKey) });
      assert.equal(res.statusCode, 404);
      assert.equal((await t.app.inject({ method: 'GET', url: '/healthz' })).statusCode, 200);
      assert.deepEqual(log.requests(), []);
    } finally {
      await t.cleanup();
    }
  });

  test('on: one line per request with method, route, status, ms and tenant', async () => {
    const log = capturingLogger();
    const t = await makeTestApp({ logger: log.logger, accessLog: true });
    try {
      const before = log.requests().length; // the tenants and keys makeTestApp created
      assert.equal(before, 4);
      const calls = [
        { method: 'GET', url: '/v1/events/order-8812?x=1', headers: bearer(t.tenantKey) },
        { method: 'POST', url: '/v1/events', headers: bearer(t.tenantKey), payload: { delay: 'soon' } },
        { method: 'GET', url: '/v1/events', headers: bearer('bk_not-a-key') },
        { method: 'GET', url: `/v1/tenants/${t.tenantIdB}`, headers: bearer(ADMIN_KEY) },
        { method: 'GET', url: '/healthz' },
        { method: 'GET', url: '/no/such/route' },
      ] as const;
      const statuses: number[] = [];
      for (const call of calls) statuses.push((await t.app.inject(call)).statusCode);
      assert.deepEqual(statuses, [404, 400, 401, 200, 200, 404]);
      const lines = log.requests().slice(before);
      assert.equal(lines.length, calls.length, JSON.stringify(lines));
      const shown = lines.map(({ method, route, status, tenant, level }) => ({ method, route, status, tenant, level }));
      assert.deepEqual(shown, [
        { method: 'GET', route: '/v1/events/:id', status: 404, tenant: t.tenantId, level: 30 },
        { method: 'POST', route: '/v1/events', status: 400, tenant: t.tenantId, level: 30 },
        { method: 'GET', route: '/v1/events', status: 401, tenant: null, level: 30 },
        { method: 'GET', route: '/v1/tenants/:tenantId', status: 200, tenant: null, level: 30 },
        { method: 'GET', route: '/healthz', status: 200, tenant: null, level: 30 },
        { method: 'GET', route: null, status: 404, tenant: null, level: 30 },
      ]);
      for (const line of lines) {
        assert.equal(typeof line.ms, 'number', JSON.stringify(line));
        assert.ok((line.ms as number) >= 0 && (line.ms as number) < 60_000, JSON.stringify(line));
        // Neither the path's id, its query, nor any key reaches the line.
        assert.doesNotMatch(JSON.stringify(line), /order-8812|x=1|bk_|admin-test-key/);
      }
    } finally {
      await t.cleanup();
    }
  });
});
