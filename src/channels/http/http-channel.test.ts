import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import tls from 'node:tls';
import { after, before, describe, it } from 'node:test';
import { SimClock } from '../../core/clock.ts';
import {
  startReceiver,
  type ReceivedRequest,
  type Receiver,
  type ReceiverResponse,
} from '../../../test/support/receiver.ts';
import { selfSignedCertificate } from '../../../test/support/certificate.ts';
import type { DeliveryOutcome, HttpDueEvent } from '../channel.ts';
import { HttpChannel, parseRetryAfterMs, RETRY_AFTER_MS_MAX } from './http-channel.ts';
import { verifySignature } from './signing.ts';

const SECRET = 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw';
const OLD_SECRET = 'whsec_' + Buffer.alloc(32, 9).toString('base64');

function dueEvent(target: string, overrides: Partial<HttpDueEvent> = {}): HttpDueEvent {
  return {
    tenantId: 'tenant-1',
    id: 'evt-1',
    attempt: 1,
    payload: '{"orderId":8812}',
    headers: {},
    kind: 'http',
    target,
    secrets: [{ secret: SECRET, expiresAt: null }],
    timeoutMs: 5_000,
    dueAt: 0,
    ...overrides,
  };
}

/** The receivers listen on loopback, which the private-address guard refuses unless allowed. */
const LOOPBACK = ['127.0.0.1', '::1'];

const noAbort = () => new AbortController().signal;

/** Routes by path: `/status/<code>` answers that code; `/hang` never answers. */
function routes(req: ReceivedRequest): ReceiverResponse {
  const path = req.path.split('?')[0];
  if (path === '/hang') return { status: 200, hang: true };
  if (path === '/redirect') return { status: 302, headers: { location: '/moved' } };
  if (path === '/long-error') return { status: 500, body: 'E'.repeat(5_000) };
  if (path === '/big-ok') return { status: 200, body: 'y'.repeat(2 * 1024 * 1024) };
  if (path === '/retry-after-seconds') return { status: 429, headers: { 'retry-after': '7' } };
  if (path === '/retry-after-date') return { status: 503, headers: { 'retry-after': 'Thu, 01 Jan 2026 00:00:30 GMT' } };
  if (path === '/retry-after-on-500') return { status: 500, headers: { 'retry-after': '7' } };
  const m = /^\/status\/(\d{3})$/.exec(path);
  if (m) return { status: Number(m[1]), body: `answer ${m[1]}` };
  return { status: 200, body: 'ok' };
}

describe('HttpChannel against a loopback receiver', () => {
  let receiver: Receiver;
  let channel: HttpChannel;

  before(async () => {
    receiver = await startReceiver({ behavior: routes });
    channel = new HttpChannel({ allowHosts: LOOPBACK });
  });
  after(async () => {
    await channel.close();
    await receiver.close();
  });

  it('delivers a 2xx with the payload, user headers and a verifiable signature', async () => {
    const event = dueEvent(`${receiver.url}/hooks/belfry?x=1`, {
      id: 'evt-signed',
      secrets: [
        { secret: SECRET, expiresAt: null },
        { secret: OLD_SECRET, expiresAt: Date.now() + 60_000 },
      ],
      headers: { 'X-Team': 'checkout', 'x-kind': 'timeout' },
    });
    const beforeSec = Math.floor(Date.now() / 1000);
    const outcome = await channel.deliver(event, noAbort());
    assert.equal(outcome.kind, 'delivered');
    assert.equal(outcome.status, 200);
    assert.ok(outcome.durationMs >= 0);

    const req = receiver.requests.find((r) => r.headers['webhook-id'] === 'evt-signed');
    assert.ok(req, 'the receiver got the request');
    assert.equal(req.method, 'POST');
    assert.equal(req.path, '/hooks/belfry?x=1');
    assert.equal(req.body, event.payload);
    assert.deepEqual(req.json, { orderId: 8812 });
    assert.equal(req.headers['content-type'], 'application/json');
    assert.equal(req.headers['x-team'], 'checkout');
    assert.equal(req.headers['x-kind'], 'timeout');
    assert.match(String(req.headers['user-agent']), /^Belfry/);
    const timestamp = String(req.headers['webhook-timestamp']);
    assert.ok(Math.abs(Number(timestamp) - beforeSec) <= 2, `timestamp ${timestamp}`);
    const signatureHeader = String(req.headers['webhook-signature']);
    assert.equal(signatureHeader.split(' ').length, 2);
    for (const secret of [SECRET, OLD_SECRET]) {
      const verified = verifySignature({
        msgId: 'evt-signed',
        timestampSec: timestamp,
        body: req.body,
        signatureHeader,
        secret,
        nowSec: Math.floor(Date.now() / 1000),
      });
      assert.equal(verified, true, 'a receiver with either secret verifies');
    }
  });

  it('discards a delivery none of whose secrets is active: a webhook is never sent unsigned', async () => {
    const expired = [{ secret: OLD_SECRET, expiresAt: Date.now() - 1 }];
    for (const secrets of [[], expired]) {
      const outcome = await channel.deliver(dueEvent(`${receiver.url}/unsigned`, { secrets }), noAbort());
      assert.equal(outcome.kind, 'discard');
      assert.equal(
        outcome.kind === 'discard' && outcome.reason,
        'no active signing secret (rotate the signing secret, then replay)',
      );
    }
    assert.equal(receiver.requests.filter((r) => r.path === '/unsigned').length, 0);
    // Signs with the secrets active now only: an expired one no longer signs.
    const outcome = await channel.deliver(
      dueEvent(`${receiver.url}/rotated`, {
        id: 'evt-rotated',
        secrets: [{ secret: SECRET, expiresAt: null }, ...expired],
      }),
      noAbort(),
    );
    assert.equal(outcome.kind, 'delivered');
    const req = receiver.requests.find((r) => r.path === '/rotated');
    assert.ok(req);
    assert.equal(String(req.headers['webhook-signature']).split(' ').length, 1);
  });

  it('user headers cannot replace the webhook headers', async () => {
    const event = dueEvent(`${receiver.url}/spoofed`, {
      id: 'evt-spoofed',
      headers: { 'Webhook-Id': 'spoofed', 'webhook-signature': 'v1,forged', 'Content-Length': '1', Host: 'evil' },
      type: 'order.timeout',
    });
    const outcome = await channel.deliver(event, noAbort());
    assert.equal(outcome.kind, 'delivered');
    const req = receiver.requests.find((r) => r.path === '/spoofed');
    assert.ok(req);
    assert.equal(req.headers['webhook-id'], 'evt-spoofed');
    assert.equal(req.headers['belfry-type'], 'order.timeout', 'the event type travels as belfry-type');
    assert.notEqual(req.headers['webhook-signature'], 'v1,forged');
    assert.match(String(req.headers['webhook-signature']), /^v1,/);
    assert.equal(req.body, event.payload);
    assert.equal(req.headers.host, `127.0.0.1:${receiver.port}`);
  });

  it('classifies statuses: 5xx, 408, 429 retry; other 4xx discard', async () => {
    const expected: Array<[number, DeliveryOutcome['kind']]> = [
      [201, 'delivered'],
      [204, 'delivered'],
      [500, 'retry'],
      [502, 'retry'],
      [503, 'retry'],
      [408, 'retry'],
      [429, 'retry'],
      [400, 'discard'],
      [401, 'discard'],
      [404, 'discard'],
      [410, 'discard'],
      [422, 'discard'],
    ];
    for (const [status, kind] of expected) {
      const outcome = await channel.deliver(dueEvent(`${receiver.url}/status/${status}`), noAbort());
      assert.equal(outcome.kind, kind, `HTTP ${status}`);
      assert.equal(outcome.status, status);
      if (outcome.kind !== 'delivered') {
        assert.equal(outcome.reason, `HTTP ${status}: answer ${status}`);
      }
      if (outcome.kind === 'retry') assert.equal(outcome.retryAfterMs, undefined);
    }
  });

  it('honours Retry-After in seconds and as an HTTP-date on 429 and 503 only', async () => {
    const clock = new SimClock(Date.UTC(2026, 0, 1)); // the date in the route is 30 s later
    const simChannel = new HttpChannel({ clock, allowHosts: LOOPBACK });
    try {
      const seconds = await simChannel.deliver(dueEvent(`${receiver.url}/retry-after-seconds`), noAbort());
      assert.equal(seconds.kind, 'retry');
      assert.equal(seconds.status, 429);
      assert.equal(seconds.kind === 'retry' && seconds.retryAfterMs, 7_000);

      const date = await simChannel.deliver(dueEvent(`${receiver.url}/retry-after-date`), noAbort());
      assert.equal(date.kind, 'retry');
      assert.equal(date.status, 503);
      assert.equal(date.kind === 'retry' && date.retryAfterMs, 30_000);

      const on500 = await simChannel.deliver(dueEvent(`${receiver.url}/retry-after-on-500`), noAbort());
      assert.equal(on500.kind, 'retry');
      assert.equal(on500.kind === 'retry' && on500.retryAfterMs, undefined);
    } finally {
      await simChannel.close();
    }
  });

  it('does not follow a 302: discards it, naming the redirect', async () => {
    const outcome = await channel.deliver(dueEvent(`${receiver.url}/redirect`), noAbort());
    assert.equal(outcome.kind, 'discard');
    assert.equal(outcome.status, 302);
    assert.match(outcome.kind === 'discard' ? outcome.reason : '', /HTTP 302 to \/moved: redirects are not followed/);
    assert.equal(
      receiver.requests.some((r) => r.path === '/moved'),
      false,
    );
  });

  it('times out a hanging receiver after timeoutMs and retries', async () => {
    const timeoutMs = 300;
    const outcome = await channel.deliver(dueEvent(`${receiver.url}/hang`, { timeoutMs }), noAbort());
    assert.equal(outcome.kind, 'retry');
    assert.equal(outcome.kind === 'retry' && outcome.reason, 'timeout after 300ms');
    assert.ok(outcome.durationMs >= timeoutMs - 5, `durationMs ${outcome.durationMs}`);
    assert.ok(outcome.durationMs < timeoutMs + 1_000, `durationMs ${outcome.durationMs}`);
  });

  it('stops when the caller aborts, and retries', async () => {
    const controller = new AbortController();
    const pending = channel.deliver(dueEvent(`${receiver.url}/hang?abort`, { timeoutMs: 30_000 }), controller.signal);
    await receiver.waitFor((reqs) => reqs.some((r) => r.path === '/hang?abort'), 5_000);
    controller.abort();
    const outcome = await pending;
    assert.equal(outcome.kind, 'retry');
    assert.equal(outcome.kind === 'retry' && outcome.reason, 'aborted');
    assert.ok(outcome.durationMs < 5_000, `durationMs ${outcome.durationMs}`);
  });

  it('does not send at all when the signal is already aborted', async () => {
    const controller = new AbortController();
    controller.abort();
    const countBefore = receiver.count;
    const outcome = await channel.deliver(dueEvent(`${receiver.url}/never`), controller.signal);
    assert.equal(outcome.kind, 'retry');
    assert.equal(receiver.count, countBefore);
  });

  it('keeps the reason short: the body snippet is truncated', async () => {
    const outcome = await channel.deliver(dueEvent(`${receiver.url}/long-error`), noAbort());
    assert.equal(outcome.kind, 'retry');
    const reason = outcome.kind === 'retry' ? outcome.reason : '';
    assert.equal(reason, `HTTP 500: ${'E'.repeat(200)}…`);

    const small = new HttpChannel({ responseBodyBytesMax: 50, allowHosts: LOOPBACK });
    try {
      const clipped = await small.deliver(dueEvent(`${receiver.url}/long-error`), noAbort());
      assert.equal(clipped.kind === 'retry' && clipped.reason, `HTTP 500: ${'E'.repeat(50)}`);
    } finally {
      await small.close();
    }
  });

  it('delivers a 2xx with a body larger than the drain bound', async () => {
    const outcome = await channel.deliver(dueEvent(`${receiver.url}/big-ok`), noAbort());
    assert.equal(outcome.kind, 'delivered');
  });

  it('never throws: malformed targets, headers and secrets become discards', async () => {
    const cases: Array<[string, HttpDueEvent]> = [
      ['not a URL', dueEvent('not a url')],
      ['empty URL', dueEvent('')],
      ['ftp scheme', dueEvent('ftp://127.0.0.1/x')],
      ['header name with a space', dueEvent(receiver.url, { headers: { 'bad header': 'x' } })],
      ['header value with CRLF', dueEvent(receiver.url, { headers: { 'x-a': 'a\r\nx-injected: 1' } })],
      ['malformed secret', dueEvent(receiver.url, { secrets: [{ secret: 'whsec_%%%', expiresAt: null }] })],
    ];
    for (const [name, event] of cases) {
      const outcome = await channel.deliver(event, noAbort());
      assert.equal(outcome.kind, 'discard', name);
      assert.ok(outcome.kind === 'discard' && outcome.reason.length > 0, name);
    }
    // A nonsensical timeout falls back to the default instead of failing.
    const odd = await channel.deliver(dueEvent(`${receiver.url}/odd`, { timeoutMs: Number.NaN }), noAbort());
    assert.equal(odd.kind, 'delivered');
  });
});

describe('HttpChannel connection handling', () => {
  it('retries on a refused connection, naming the error', async () => {
    const closed = await startReceiver();
    const url = closed.url;
    await closed.close();
    const channel = new HttpChannel({ allowHosts: LOOPBACK });
    try {
      const outcome = await channel.deliver(dueEvent(`${url}/x`), noAbort());
      assert.equal(outcome.kind, 'retry');
      assert.match(outcome.kind === 'retry' ? outcome.reason : '', /ECONNREFUSED/);
    } finally {
      await channel.close();
    }
  });

  it('reuses keep-alive connections across many deliveries', async () => {
    const receiver = await startReceiver();
    const channel = new HttpChannel({ allowHosts: LOOPBACK });
    const bounded = new HttpChannel({ connectionsPerOrigin: 2, allowHosts: LOOPBACK });
    try {
      const workers = 10;
      const perWorker = 30;
      const run = (ch: HttpChannel, path: string) =>
        Promise.all(
          Array.from({ length: workers }, async (_, w) => {
            for (let i = 0; i < perWorker; i++) {
              const outcome = await ch.deliver(dueEvent(`${receiver.url}${path}`, { id: `k-${w}-${i}` }), noAbort());
              assert.equal(outcome.kind, 'delivered');
            }
          }),
        );
      await run(channel, '/pooled');
      const pooledSockets = new Set(receiver.requests.filter((r) => r.path === '/pooled').map((r) => r.socketId));
      assert.equal(receiver.count, workers * perWorker);
      // One socket per concurrent delivery, plus a few opened while a finished one was being
      // returned to the pool; nowhere near one per delivery.
      assert.ok(pooledSockets.size <= 2 * workers, `${pooledSockets.size} sockets for ${receiver.count} deliveries`);

      await run(bounded, '/bounded');
      const boundedSockets = new Set(receiver.requests.filter((r) => r.path === '/bounded').map((r) => r.socketId));
      assert.ok(boundedSockets.size <= 2, `${boundedSockets.size} sockets with connectionsPerOrigin 2`);
    } finally {
      await channel.close();
      await bounded.close();
      await receiver.close();
    }
  });
});

describe('HttpChannel over TLS', () => {
  it('offers only http/1.1 in the TLS handshake (undici 8 would offer h2 by default)', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'belfry-http-alpn-'));
    const offered: string[][] = [];
    let server: tls.Server | null = null;
    const channel = new HttpChannel({ allowHosts: LOOPBACK });
    try {
      const { keyPath, certPath } = selfSignedCertificate(dir, 'IP:127.0.0.1');
      const tlsServer = tls.createServer({
        key: readFileSync(keyPath),
        cert: readFileSync(certPath),
        ALPNCallback: ({ protocols }) => {
          offered.push(protocols);
          return protocols.includes('http/1.1') ? 'http/1.1' : undefined;
        },
      });
      server = tlsServer;
      tlsServer.on('secureConnection', (socket) => socket.destroy());
      await new Promise<void>((resolve) => tlsServer.listen(0, '127.0.0.1', resolve));
      const { port } = tlsServer.address() as AddressInfo;
      // The certificate is self-signed, so the delivery itself fails; the handshake's offer is the point.
      const outcome = await channel.deliver(dueEvent(`https://127.0.0.1:${port}/alpn`), noAbort());
      assert.equal(outcome.kind, 'retry');
      assert.deepEqual(offered, [['http/1.1']]);
    } finally {
      await channel.close();
      server?.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('parseRetryAfterMs', () => {
  const nowMs = Date.UTC(2026, 0, 1);
  it('reads delay-seconds and HTTP-dates, bounded; ignores garbage', () => {
    assert.equal(parseRetryAfterMs(undefined, nowMs), undefined);
    assert.equal(parseRetryAfterMs('0', nowMs), 0);
    assert.equal(parseRetryAfterMs(' 120 ', nowMs), 120_000);
    assert.equal(parseRetryAfterMs('Thu, 01 Jan 2026 00:01:00 GMT', nowMs), 60_000);
    assert.equal(parseRetryAfterMs('Wed, 31 Dec 2025 23:00:00 GMT', nowMs), 0);
    assert.equal(parseRetryAfterMs('9999999999', nowMs), RETRY_AFTER_MS_MAX);
    assert.equal(parseRetryAfterMs('-5', nowMs), undefined);
    assert.equal(parseRetryAfterMs('soon', nowMs), undefined);
  });
});
