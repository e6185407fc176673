/**
 * The client's retries and errors against a loopback server that answers 503, 429 or nothing on
 * purpose (the remote party's behaviour is the only thing faked here).
 */
import assert from 'node:assert/strict';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, beforeEach, describe, test } from 'node:test';
import { BelfryClient } from './client.ts';
import { ROUTES } from './routes.ts';
import { BelfryApiError, parseRetryAfterMs, Transport, type TransportOptions } from './transport.ts';

interface Seen {
  method: string;
  url: string;
  body: string;
  userAgent: string | undefined;
}

/** Answers request n (from 0) with script[n], or the last entry for every request past the script. */
type Answer = (req: IncomingMessage, res: ServerResponse) => void;
let script: Answer[] = [];
let seen: Seen[] = [];
let server: Server;
let baseUrl: string;

const ok: Answer = (_req, res) => res.writeHead(200, { 'content-type': 'application/json' }).end('{"status":"ok"}');
const status =
  (code: number, headers: Record<string, string> = {}, body = ''): Answer =>
  (_req, res) =>
    res.writeHead(code, { 'content-type': 'application/json', ...headers }).end(body);
const hangUp: Answer = (req) => req.socket.destroy();

before(async () => {
  server = createServer((req, res) => {
    let body = '';
    req.on('data', (c) => (body += c));
    req.on('end', () => {
      seen.push({ method: req.method!, url: req.url!, body, userAgent: req.headers['user-agent'] });
      (script[Math.min(seen.length - 1, script.length - 1)] ?? ok)(req, res);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
after(
  () =>
    new Promise<void>((resolve) => {
      server.close(() => resolve());
      server.closeAllConnections();
    }),
);
beforeEach(() => {
  seen = [];
  script = [];
});

function transport(extra: Partial<TransportOptions> = {}): { t: Transport; waits: number[] } {
  const waits: number[] = [];
  const t = new Transport({
    baseUrl,
    apiKey: 'k',
    sleep: async (ms) => void waits.push(ms),
    random: () => 0.5,
    ...extra,
  });
  return { t, waits };
}

async function rejection(p: Promise<unknown>): Promise<BelfryApiError> {
  try {
    await p;
  } catch (err) {
    assert.ok(err instanceof BelfryApiError, `a BelfryApiError, not ${String(err)}`);
    return err;
  }
  assert.fail('expected the call to fail');
}

describe('Transport retries', () => {
  test('a 503 with Retry-After is waited out for real, then the call succeeds with the same body', async () => {
    script = [status(503, { 'retry-after': '1' }, '{"error":{"code":"unavailable","message":"try again"}}'), ok];
    const t = new Transport({ baseUrl, apiKey: 'k' });
    const startedMs = performance.now();
    const res = await t.call(ROUTES.eventCreate, { body: { id: 'e1', destination: 'd' } });
    const elapsedMs = performance.now() - startedMs;
    assert.equal(res.status, 200);
    assert.equal(res.attempts, 2);
    assert.ok(elapsedMs >= 990, `waited the 1 s Retry-After (${elapsedMs.toFixed(0)} ms)`);
    assert.equal(seen.length, 2);
    assert.equal(seen[0].body, seen[1].body, 'the same bytes both times');
  });

  test('429 is retried for any route, honouring Retry-After, up to attemptsMax tries', async () => {
    script = [
      status(
        429,
        { 'retry-after': '2' },
        '{"error":{"code":"rate_limited","message":"slow down","details":[{"limit":"scheduleRequestsPerSecond"}]}}',
      ),
    ];
    const { t, waits } = transport({ retry: { attemptsMax: 3 } });
    const err = await rejection(t.call(ROUTES.bulkCreate, { body: {} }));
    assert.equal(err.status, 429);
    assert.equal(err.code, 'rate_limited');
    assert.equal(err.message, 'slow down');
    assert.deepEqual(err.details, [{ limit: 'scheduleRequestsPerSecond' }]);
    assert.equal(err.attempts, 3);
    assert.equal(err.retryAfterMs, 2_000);
    assert.deepEqual(waits, [2_000, 2_000]);
    assert.equal(seen.length, 3);
  });

  test('the total wait is bounded: a Retry-After past waitMsMax ends the call at once with the error', async () => {
    script = [status(503, { 'retry-after': '10' }), ok];
    const { t, waits } = transport({ retry: { waitMsMax: 15_000 } });
    assert.equal((await t.call(ROUTES.eventGet, { params: { id: 'a' } })).status, 200, '10 s fits in 15 s');
    assert.deepEqual(waits, [10_000]);
    seen = [];
    script = [status(503, { 'retry-after': '10' })];
    const err = await rejection(
      transport({ retry: { waitMsMax: 15_000 } }).t.call(ROUTES.eventGet, { params: { id: 'a' } }),
    );
    assert.equal(err.status, 503);
    assert.equal(err.attempts, 2, 'the second 10 s would pass 15 s');
    assert.equal(seen.length, 2);
  });

  test('a Retry-After given as an HTTP date is honoured', async () => {
    assert.equal(parseRetryAfterMs('Wed, 21 Oct 2026 07:28:05 GMT', Date.UTC(2026, 9, 21, 7, 28, 0)), 5_000);
    assert.equal(parseRetryAfterMs('3', 0), 3_000);
    assert.equal(parseRetryAfterMs('soon', 0), undefined);
    assert.equal(parseRetryAfterMs(null, 0), undefined);
  });

  test('without Retry-After the wait is an exponential backoff with jitter, capped', async () => {
    script = [status(503)];
    const { t, waits } = transport({ retry: { attemptsMax: 6, backoffMsMin: 100, backoffMsMax: 1_000 } });
    await rejection(t.call(ROUTES.destinationList));
    assert.deepEqual(waits, [50, 100, 200, 400, 500], 'half (random 0.5) of min × 2^n, at most max');
  });

  test('a 503 to a route that is not idempotent is not retried (it may have acted)', async () => {
    script = [status(503, { 'retry-after': '0' })];
    const { t } = transport();
    const err = await rejection(t.call(ROUTES.bulkCreate, { body: {} }));
    assert.equal(err.status, 503);
    assert.equal(seen.length, 1);
  });

  test('a 4xx other than 429 is not retried, and a body that is not JSON becomes the message', async () => {
    script = [status(404, { 'content-type': 'text/html' }, '<h1>not here</h1>')];
    const err = await rejection(transport().t.call(ROUTES.eventGet, { params: { id: 'a' } }));
    assert.equal(err.status, 404);
    assert.equal(err.code, 'http_404');
    assert.equal(err.message, '<h1>not here</h1>');
    assert.equal(seen.length, 1);
  });

  test('a network error is retried for an idempotent route only', async () => {
    script = [hangUp, ok];
    const { t } = transport();
    assert.equal((await t.call(ROUTES.eventGet, { params: { id: 'a' } })).attempts, 2);
    seen = [];
    script = [hangUp, ok];
    const err = await rejection(t.call(ROUTES.eventReplay, { params: { id: 'a' } }));
    assert.equal(err.status, 0);
    assert.equal(err.code, 'network_error');
    assert.ok(err.cause, 'the underlying error is kept');
    assert.equal(seen.length, 1);
  });

  test('a try with no answer within timeoutMs fails with code timeout', async () => {
    script = [() => {}]; // never answers
    const { t } = transport({ timeoutMs: 100, retry: { attemptsMax: 2 } });
    const err = await rejection(t.call(ROUTES.eventGet, { params: { id: 'a' } }));
    assert.equal(err.code, 'timeout');
    assert.equal(err.attempts, 2);
  });

  test('path parameters are encoded and query values given as Dates are sent as RFC 3339', async () => {
    script = [ok];
    await transport().t.call(ROUTES.eventList, {
      query: { from: new Date(Date.UTC(2026, 0, 1)), state: 'scheduled', cursor: undefined },
    });
    await transport().t.call(ROUTES.eventGet, { params: { id: 'a b/c' } });
    assert.deepEqual(
      seen.map((s) => s.url),
      ['/v1/events?from=2026-01-01T00%3A00%3A00.000Z&state=scheduled', '/v1/events/a%20b%2Fc'],
    );
  });

  test('a node that is not ready answers /readyz with 503: the client returns its reasons, once, and says who it is', async () => {
    script = [status(503, {}, '{"status":"not_ready","reasons":["store unreachable"]}')];
    const belfry = new BelfryClient({ baseUrl: `${baseUrl}/`, apiKey: 'k', retry: { attemptsMax: 3 } });
    assert.deepEqual(await belfry.operations.ready(), { status: 'not_ready', reasons: ['store unreachable'] });
    assert.equal(seen.length, 1, 'not retried: the answer is the readiness');
    assert.equal(seen[0].url, '/readyz');
    assert.equal(seen[0].userAgent, 'belfry-client');
  });
});
