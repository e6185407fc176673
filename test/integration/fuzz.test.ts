/**
 * Hostile input: a seeded stream of generated requests against every endpoint of a real
 * listening API (malformed and truncated JSON, wrong types, huge numbers, invalid dates, negative
 * delays, unicode and control characters in ids, oversize bodies, duplicate keys, deep nesting,
 * prototype keys, wrong content types, bad keys), plus raw-socket clients that lie about
 * Content-Length, hang up mid-body or dribble a byte at a time.
 *
 * Checks: never a 5xx and never an error logged; every 4xx is the error shape; the server is
 * healthy afterwards; and the store holds exactly the events whose creation was acknowledged.
 *
 * Replay a failure with BELFRY_FUZZ_SEED=<seed> (printed on failure); BELFRY_FUZZ_REQUESTS sets
 * the count (default 10,000); BELFRY_FUZZ_TRACE=<file> appends every request sent to that file
 * as a JSON line. Headers an HTTP client library refuses to send (control characters) go over
 * raw sockets instead: undici wedges a pooled connection on them.
 */
import assert from 'node:assert/strict';
import { appendFileSync } from 'node:fs';
import { connect, type Socket } from 'node:net';
import { Writable } from 'node:stream';
import { after, before, describe, it } from 'node:test';
import { pino, type Logger } from 'pino';
import { Pool } from 'undici';
import { ADMIN_KEY, makeTestApp, type TestApp } from '../support/app.ts';

const SEED = Number(process.env.BELFRY_FUZZ_SEED ?? Math.floor(Math.random() * 2 ** 31));
const REQUESTS = Number(process.env.BELFRY_FUZZ_REQUESTS ?? 10_000);
const CONCURRENCY = 16;
const SLOW_CLIENTS = 24;
const RAW_CLIENTS = 60;
const BODY_BYTES_MAX = 64 * 1024;

/** mulberry32: a small, fast, seedable PRNG. */
function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** encodeURIComponent that also takes lone surrogates (as their UTF-8 replacement bytes would be sent raw). */
function enc(text: string): string {
  try {
    return encodeURIComponent(text);
  } catch {
    return encodeURIComponent(text.replace(/[\ud800-\udfff]/g, '')) + '%ED%A0%80';
  }
}

/** One generated request, as bytes on the wire. */
interface FuzzRequest {
  method: string;
  path: string;
  headers: Record<string, string>;
  body?: string | Buffer;
  /** Which tenant the key names, when it is a valid tenant key: its creations are tracked. */
  tenant?: 'a' | 'b';
  kind: string;
}

class Gen {
  constructor(
    readonly r: () => number,
    readonly ctx: { keyA: string; keyB: string; tenantA: string; tenantB: string; knownIds: string[] },
  ) {}

  int(n: number): number {
    return Math.floor(this.r() * n);
  }
  pick<T>(xs: readonly T[]): T {
    return xs[this.int(xs.length)];
  }
  chance(p: number): boolean {
    return this.r() < p;
  }

  /** Ids: mostly valid, often hostile. */
  id(): string {
    return this.pick([
      () => `ev-${this.int(400)}`,
      () => (this.ctx.knownIds.length > 0 ? this.pick(this.ctx.knownIds) : 'ev-0'),
      () => 'x'.repeat(this.pick([0, 1, 199, 200, 201, 5000])),
      () =>
        this.pick([
          'é',
          'ä¸­æ–‡',
          '\u202eevil',
          '😀',
          'a b',
          'a/b',
          '../..',
          '%2e%2e',
          'a?b',
          'a#b',
          '%00',
          'a\u0000b',
          'a\nb',
          'a\tb',
          '\u0007',
          '\uffff',
          '\ud800',
        ]),
      () => String(this.int(1e9)),
      () => `${this.pick(['', '.', '..', '~', '@', ':'])}${this.int(10)}`,
    ])();
  }

  time(): unknown {
    return this.pick([
      () => new Date(Date.UTC(2026, 0, 1) + this.int(1e10)).toISOString(),
      () => Date.UTC(2026, 0, 1) + this.int(1e9),
      () =>
        this.pick([
          '2026-02-30T00:00:00Z',
          '2026-13-01T00:00:00Z',
          '2026-01-01',
          '2026-01-01T25:00:00Z',
          'yesterday',
          '',
          'T',
          '1e3',
          '9999-12-31T23:59:59.999Z',
          '0000-01-01T00:00:00Z',
          '2026-01-01T00:00:00+99:99',
          '2026-01-01T00:00:00.1234567891Z',
        ]),
      () => this.pick([-1, 0, 1.5, 1e308, -1e308, Number.MAX_SAFE_INTEGER, 2 ** 63, -(2 ** 53)]),
      () => this.pick([null, true, [], {}, { $date: 1 }]),
    ])();
  }

  duration(): unknown {
    return this.pick([
      () => `${this.int(120)}${this.pick(['ms', 's', 'm', 'h', 'd'])}`,
      () => this.int(100_000),
      () => this.pick(['-5s', '-1', '5', '5 m', '1.5s', '5w', '99999999999999d', 'P1D', '', '٣s', '1e3s']),
      () => this.pick([-5, -0.5, 1e308, NaN, 2 ** 60, null, {}, []]),
    ])();
  }

  payload(depthMax = 6): unknown {
    if (depthMax <= 0) return this.int(10);
    return this.pick([
      () => ({ orderId: this.int(10_000), note: this.str() }),
      () => this.str(),
      // biome-ignore lint/correctness/noPrecisionLoss: a number JSON carries that JavaScript cannot hold exactly is a case
      () => this.pick([0, -0, 1e308, -1e-308, 123456789012345678901234567890, true, false, null]),
      () => Array.from({ length: this.int(5) }, () => this.payload(depthMax - 1)),
      () => ({ [this.str()]: this.payload(depthMax - 1), __proto__x: 1 }),
      () => 'p'.repeat(this.pick([10, 2_000, 3_000, 70_000])),
    ])();
  }

  str(): string {
    return this.pick([
      '',
      'ok',
      'é',
      '\u0000',
      '\u001f',
      '"quote"',
      '\\',
      '<script>',
      '😀'.repeat(10),
      '\ud800',
      'x'.repeat(this.int(300)),
    ]);
  }

  headersMap(): unknown {
    return this.pick([
      () => ({ 'x-kind': 'timeout' }),
      () => ({
        [this.pick(['Host', 'content-length', 'webhook-signature', 'bad header', 'x\r\ny', '', 'x'.repeat(101), 'ok'])]:
          this.pick(['v', 'a\r\nx-injected: 1', 'é', 'v'.repeat(5000), '']),
      }),
      () => this.pick([[], 'x', 5, null]),
      () => Object.fromEntries(Array.from({ length: this.pick([49, 50, 51]) }, (_, i) => [`x-h${i}`, 'v'])),
    ])();
  }

  destination(): unknown {
    return this.pick([
      () => 'orders',
      () => 'missing',
      () => ({
        url: this.pick([
          'https://hooks.example.com/x',
          'http://127.0.0.1:9/x',
          'http://169.254.169.254/',
          'http://[::ffff:10.0.0.1]/',
          'http://2130706433/',
          'ftp://x',
          'javascript:alert(1)',
          'not a url',
          'http://' + 'a'.repeat(3000),
          'https://exa mple.com',
        ]),
      }),
      () => ({ url: 'https://hooks.example.com/x', extra: 1 }),
      () => this.pick([5, null, [], '', 'x'.repeat(101), 'bad/name']),
    ])();
  }

  retry(): unknown {
    return this.pick([
      () => ({
        maxAttempts: this.int(200) - 50,
        minBackoff: this.duration(),
        maxBackoff: this.duration(),
        coefficient: this.pick([0, 1, 2, 11, 1e308, -1]),
      }),
      () => ({ maxAttempts: 3 }),
      () => ({ unknown: true }),
      () => this.pick(['3', [], null]),
    ])();
  }

  /** An event body: mostly plausible, with one to three fields broken. */
  event(): Record<string, unknown> {
    const e: Record<string, unknown> = { destination: 'orders', payload: { n: this.int(1000) } };
    if (this.chance(0.7)) e.id = this.chance(0.8) ? `ev-${this.int(2_000)}` : this.id();
    if (this.chance(0.5)) e.delay = `${this.int(600)}s`;
    // biome-ignore lint/suspicious/noDuplicateElseIf: two draws: half delay, a quarter fireAt, a quarter neither
    else if (this.chance(0.5)) e.fireAt = new Date(Date.UTC(2026, 0, 1) + this.int(1e9)).toISOString();
    const mutations = this.int(4);
    for (let i = 0; i < mutations; i++) {
      this.pick([
        () => (e.id = this.id()),
        () => (e.fireAt = this.time()),
        () => (e.delay = this.duration()),
        () => (e.destination = this.destination()),
        () => (e.payload = this.payload()),
        () => (e.headers = this.headersMap()),
        () => (e.group = this.chance(0.5) ? this.id() : this.pick([5, null, []])),
        () => (e.retry = this.retry()),
        () => (e.expireAfter = this.duration()),
        () =>
          (e.tags = this.pick([
            { team: 'x' },
            { ['bad key!']: 'v' },
            { t: 5 },
            'x',
            Object.fromEntries(Array.from({ length: 40 }, (_, k) => [`t${k}`, 'v'])),
          ])),
        () => (e[this.pick(['unknown', 'Id', 'fire_at', '__proto__', 'constructor', ''])] = 1),
        () => delete e.destination,
      ])();
    }
    return e;
  }

  /** JSON text of `value`, sometimes broken on purpose. */
  json(value: unknown): { text: string; broken: string } {
    const text = JSON.stringify(value) ?? 'null';
    const broken = this.pick([
      () => '',
      () => text,
      () => text.slice(0, this.int(text.length)),
      () => text.replace(/^\{/, '{"id":"dup-1","id":"dup-2",'),
      () => '\ufeff' + text,
      () => text.replace(/:/, ': NaN, "x":'),
      () => text.replace(/\}$/, ',}'),
      () => '{"payload":' + '['.repeat(this.pick([99, 101, 1_000, 20_000])) + ']'.repeat(this.int(3)) + '}',
      () =>
        '{"destination":"orders","payload":' +
        '{"a":'.repeat(this.pick([50, 150, 5_000])) +
        '1' +
        '}'.repeat(this.pick([50, 150, 5_000])) +
        '}',
      () => '{"destination":"orders","payload":1e999}',
      () => '{"destination":"orders","payload":-1e999,"id":"inf"}',
      () => '{"__proto__":{"admin":true},"destination":"orders"}',
      () => '{"constructor":{"prototype":{"x":1}},"destination":"orders"}',
      () => '{"destination":"orders","payload":"' + 'x'.repeat(BODY_BYTES_MAX + 10) + '"}',
      () => '\u0000\u0001\u0002',
      () => 'null',
      () => '[]',
      () => '"string"',
      () => '12345678901234567890',
      () => '{"destination":"orders","id":"\\ud800"}',
      () => '{"destination":"orders","id":"\\u0000"}',
    ])();
    return { text, broken };
  }

  /** A key for the request: mostly tenant A, sometimes B, the admin key, or garbage. */
  key(): { auth: string | undefined; tenant?: 'a' | 'b' } {
    const roll = this.r();
    if (roll < 0.82) return { auth: `Bearer ${this.ctx.keyA}`, tenant: 'a' };
    if (roll < 0.88) return { auth: `Bearer ${this.ctx.keyB}`, tenant: 'b' };
    if (roll < 0.93) return { auth: `Bearer ${ADMIN_KEY}` };
    return {
      auth: this.pick([
        undefined,
        '',
        'Bearer',
        'Basic abc',
        `Bearer ${this.ctx.keyA}x`,
        'Bearer bk_' + 'A'.repeat(43),
        `bearer ${'x'.repeat(600)}`,
        'Bearer \u00e9',
      ]),
    };
  }

  contentType(): string | undefined {
    return this.chance(0.9)
      ? 'application/json'
      : this.pick([
          undefined,
          'text/plain',
          'application/json; charset=latin1',
          'multipart/form-data; boundary=x',
          'application/x-www-form-urlencoded',
        ]);
  }

  query(): string {
    const params = [
      () => `state=${this.pick(['scheduled', 'canceled', 'bogus', '', 'SCHEDULED'])}`,
      () => `limit=${this.pick(['1', '1000', '1001', '0', '-1', 'abc', '1e3', '99999999999999999999'])}`,
      () => `cursor=${enc(this.pick(['', 'abc', 'x'.repeat(600), '{"a":1}', 'eyJzZXEiOjF9']))}`,
      () => `from=${enc(String(this.time()))}`,
      () => `to=${enc(String(this.time()))}`,
      () => `destination=${enc(this.pick(['orders', 'bad/name', '']))}`,
      () => `group=${enc(this.id())}`,
      () => `unknown=1`,
      () => `limit=1&limit=2`,
    ];
    return Array.from({ length: this.int(4) }, () => this.pick(params)()).join('&');
  }

  pathId(): string {
    const id = this.id();
    return this.chance(0.9) ? enc(id) : id.replace(/[^\x21-\x7e]/g, (c) => enc(c));
  }

  request(): FuzzRequest {
    const { auth, tenant } = this.key();
    const headers: Record<string, string> = {};
    if (auth !== undefined) headers.authorization = auth;
    const withBody = (value: unknown): Pick<FuzzRequest, 'body' | 'headers'> => {
      const { text, broken } = this.json(value);
      const ct = this.contentType();
      const h = { ...headers };
      if (ct !== undefined) h['content-type'] = ct;
      if (this.chance(0.15)) h['if-match'] = this.pick(['"1"', '*', 'W/"2"', 'garbage', '"99999999999999999999"']);
      return { headers: h, body: this.chance(0.7) ? text : broken };
    };
    const id = this.pathId();
    const name = this.pick(['orders', 'other', 'bad%2Fname', 'x'.repeat(101), 'é', '..', enc('a b')]);
    const routes: [number, () => Omit<FuzzRequest, 'tenant'>][] = [
      [30, () => ({ kind: 'create', method: 'POST', path: '/v1/events', ...withBody(this.event()) })],
      [
        8,
        () => ({
          kind: 'batch',
          method: 'POST',
          path: '/v1/events/batch',
          ...withBody({
            events: Array.from({ length: this.pick([0, 1, 3, 20, 21]) }, () =>
              this.chance(0.9) ? this.event() : this.pick([null, 'x', 5]),
            ),
          }),
        }),
      ],
      [8, () => ({ kind: 'get', method: 'GET', path: `/v1/events/${id}`, headers })],
      [8, () => ({ kind: 'list', method: 'GET', path: `/v1/events?${this.query()}`, headers })],
      [
        8,
        () => ({
          kind: 'patch',
          method: 'PATCH',
          path: `/v1/events/${id}`,
          ...withBody(
            this.pick([
              { delay: this.duration() },
              { fireAt: this.time() },
              { payload: this.payload() },
              { headers: this.headersMap() },
              { destination: this.destination() },
              {},
              { id: 'x' },
            ]),
          ),
        }),
      ],
      [
        5,
        () => ({
          kind: 'cancel',
          method: 'DELETE',
          path: `/v1/events/${id}`,
          headers: this.chance(0.2) ? { ...headers, 'if-match': this.pick(['"1"', 'x']) } : headers,
        }),
      ],
      [4, () => ({ kind: 'trace', method: 'GET', path: `/v1/events/${id}/transitions`, headers })],
      [4, () => ({ kind: 'replay', method: 'POST', path: `/v1/events/${id}/replay`, headers })],
      [
        6,
        () => ({
          kind: 'destination-put',
          method: 'PUT',
          path: `/v1/destinations/${name}`,
          ...withBody({
            url: this.pick(['https://hooks.example.com/d', 'http://10.0.0.1/', 'x']),
            timeout: this.duration(),
            retry: this.retry(),
            rateLimit: this.pick([{ perSecond: 5 }, { perSecond: -1 }, { perSecond: 1e308 }, 5]),
            maxConcurrency: this.pick([1, 0, 1001, 1.5]),
            headers: this.headersMap(),
            secret: this.pick([undefined, 'whsec_short', 'whsec_' + 'A'.repeat(44)]),
          }),
        }),
      ],
      // 'orders' is never deleted: most creates name it, and they should mostly get past it.
      [
        3,
        () => ({
          kind: 'destination-get',
          method: name === 'orders' ? 'GET' : this.pick(['GET', 'DELETE']),
          path: `/v1/destinations/${name}`,
          headers,
        }),
      ],
      [2, () => ({ kind: 'destination-list', method: 'GET', path: '/v1/destinations', headers })],
      [
        2,
        () => ({
          kind: 'rotate-secret',
          method: 'POST',
          path: this.pick([`/v1/destinations/${name}/rotate-secret`, '/v1/signing-secret/rotate']),
          ...withBody(this.pick([{ gracePeriod: this.duration() }, { secret: 'nope' }, {}])),
        }),
      ],
      [2, () => ({ kind: 'limits', method: 'GET', path: '/v1/limits', headers })],
      [
        2,
        () => ({
          kind: 'keys',
          method: this.pick(['GET', 'DELETE', 'POST']),
          path: this.pick(['/v1/keys', `/v1/keys/${id}`, `/v1/keys/${id}/rotate`]),
          ...withBody(this.pick([{ gracePeriod: this.duration() }, {}])),
        }),
      ],
      [
        3,
        () => ({
          kind: 'admin',
          method: this.pick(['GET', 'POST', 'PATCH']),
          path: this.pick([
            '/v1/tenants',
            `/v1/tenants/${this.ctx.tenantB}`,
            `/v1/tenants/${id}`,
            `/v1/tenants/${id}/keys`,
          ]),
          ...withBody(
            this.pick([
              { name: this.str() },
              { limits: { payloadBytesMax: this.pick([0, 10, 1e12, '5', null]), scheduleAheadMax: this.duration() } },
              {},
            ]),
          ),
        }),
      ],
      [
        2,
        () => ({
          kind: 'ops',
          method: 'GET',
          path: this.pick([
            '/healthz',
            '/readyz',
            '/metrics',
            '/nope',
            '/v1/events/%',
            '/v1/events/%zz',
            '//v1//events',
            '/v1/events/' + 'x'.repeat(2_000),
          ]),
          headers,
        }),
      ],
      [
        1,
        () => ({
          kind: 'method',
          method: this.pick(['PUT', 'TRACE', 'OPTIONS', 'HEAD', 'PATCH']),
          path: this.pick(['/v1/events', '/v1/events/batch', '/v1/limits']),
          ...withBody({}),
        }),
      ],
    ];
    const total = routes.reduce((n, [w]) => n + w, 0);
    let roll = this.r() * total;
    for (const [w, make] of routes) {
      roll -= w;
      if (roll < 0) return { ...make(), tenant };
    }
    return { ...routes[0][1](), tenant };
  }
}

/** Collects every log line at warn or above: the API must log no error for client input. */
function logCollector(): { logger: Logger; errors: string[] } {
  const errors: string[] = [];
  const stream = new Writable({
    write(chunk, _enc, done) {
      const line = String(chunk);
      if (JSON.parse(line).level >= 50) errors.push(line);
      done();
    },
  });
  return { logger: pino({ level: 'warn' }, stream) as Logger, errors };
}

/** Writes raw bytes, optionally in dribbles, and resolves with the status line (or null if none came). */
function rawExchange(
  port: number,
  chunks: (string | Buffer)[],
  gapMs: number,
  endAfter: boolean,
  waitMs: number,
): Promise<string | null> {
  return new Promise((resolve) => {
    const socket: Socket = connect(port, '127.0.0.1');
    let reply = '';
    let settled = false;
    const done = () => {
      if (settled) return;
      settled = true;
      socket.destroy();
      resolve(reply ? reply.split('\r\n')[0] : null);
    };
    socket.on('data', (d) => {
      reply += d.toString('latin1');
      if (reply.includes('\r\n\r\n')) setTimeout(done, 5);
    });
    socket.on('error', done);
    socket.on('close', done);
    socket.on('connect', async () => {
      for (const c of chunks) {
        if (socket.destroyed) return;
        socket.write(c);
        if (gapMs > 0) await new Promise((r) => setTimeout(r, gapMs));
      }
      if (endAfter) socket.end();
      setTimeout(done, waitMs);
    });
  });
}

describe(`fuzz (seed ${SEED})`, () => {
  let t: TestApp;
  let port: number;
  const logs = logCollector();

  before(async () => {
    t = await makeTestApp({
      logger: logs.logger,
      limits: {
        payloadBytesMax: 2_048,
        batchEventsMax: 20,
        bodyBytesMax: BODY_BYTES_MAX,
        scheduleRequestsPerSecond: 1_000_000,
      },
    });
    await t.app.listen({ port: 0, host: '127.0.0.1' });
    port = (t.app.server.address() as { port: number }).port;
    const put = await t.app.inject({
      method: 'PUT',
      url: '/v1/destinations/orders',
      headers: { authorization: `Bearer ${t.tenantKey}` },
      payload: { url: 'https://hooks.example.com/orders' },
    });
    assert.equal(put.statusCode, 201);
    await t.app.inject({
      method: 'PUT',
      url: '/v1/destinations/orders',
      headers: { authorization: `Bearer ${t.tenantKeyB}` },
      payload: { url: 'https://hooks.example.com/orders' },
    });
  });
  after(() => t.cleanup());

  it(`answers ${REQUESTS} hostile requests with no 5xx, stays healthy, and stores exactly what it acknowledged`, async (ctx) => {
    const failures: string[] = [];
    const fail = (msg: string) => {
      if (failures.length < 20) failures.push(msg);
    };
    const accepted = { a: new Set<string>(), b: new Set<string>() };
    const knownIds: string[] = [];
    const gen = new Gen(prng(SEED), {
      keyA: t.tenantKey,
      keyB: t.tenantKeyB,
      tenantA: t.tenantId,
      tenantB: t.tenantIdB,
      knownIds,
    });
    const pool = new Pool(`http://127.0.0.1:${port}`, { connections: CONCURRENCY, pipelining: 1 });
    const statuses = new Map<number, number>();
    const kinds = new Map<string, number>();
    let sent = 0;
    let clientRefused = 0;

    // Generate every request up front from the seed, so a replay sends the same ones.
    const requests = Array.from({ length: REQUESTS }, () => gen.request());

    const worker = async () => {
      for (;;) {
        const req = requests[sent++];
        if (!req) return;
        let status: number;
        let text: string;
        if (process.env.BELFRY_FUZZ_TRACE)
          appendFileSync(
            process.env.BELFRY_FUZZ_TRACE,
            JSON.stringify({ n: sent, ...req, body: String(req.body ?? '') }) + '\n',
          );
        try {
          const res = await pool.request({
            method: req.method as 'GET',
            path: req.path,
            headers: req.headers,
            body: req.body,
            headersTimeout: 5_000,
            bodyTimeout: 5_000,
          });
          status = res.statusCode;
          text = await res.body.text();
        } catch (err) {
          // The client library itself refused to send it (an invalid header or path): not the server's doing.
          if (
            (err as { code?: string }).code === 'UND_ERR_INVALID_ARG' ||
            (err as { code?: string }).code === 'ERR_INVALID_CHAR'
          ) {
            clientRefused++;
            continue;
          }
          fail(`${req.kind} ${req.method} ${req.path.slice(0, 80)}: transport error ${(err as Error).message}`);
          continue;
        }
        statuses.set(status, (statuses.get(status) ?? 0) + 1);
        kinds.set(req.kind, (kinds.get(req.kind) ?? 0) + 1);
        if (status >= 500)
          fail(
            `${status} for ${req.kind} ${req.method} ${req.path.slice(0, 80)} body ${String(req.body ?? '').slice(0, 200)} → ${text.slice(0, 300)}`,
          );
        if (status >= 400 && req.method !== 'HEAD') {
          let ok = false;
          try {
            const e = JSON.parse(text).error;
            ok = typeof e.code === 'string' && typeof e.message === 'string';
          } catch {
            ok = false;
          }
          if (!ok)
            fail(
              `${status} without the error shape for ${req.kind} ${req.method} ${req.path.slice(0, 80)}: ${text.slice(0, 200)}`,
            );
        }
        if (req.tenant && req.method === 'POST' && req.path === '/v1/events' && status === 201) {
          const id = JSON.parse(text).id as string;
          accepted[req.tenant].add(id);
          knownIds.push(id);
        }
        if (req.tenant && req.path === '/v1/events/batch' && status === 200) {
          for (const r of JSON.parse(text).results) if (r.status === 'created') accepted[req.tenant].add(r.event.id);
        }
      }
    };

    // Slow and lying clients run alongside the flood.
    const auth = `Authorization: Bearer ${t.tenantKey}\r\n`;
    const body = JSON.stringify({ id: 'slow-never', destination: 'orders' });
    const raw = async () => {
      const results: (string | null)[] = [];
      for (let i = 0; i < RAW_CLIENTS; i++) {
        const head = `POST /v1/events HTTP/1.1\r\nHost: x\r\n${auth}Content-Type: application/json\r\n`;
        const cases: [(string | Buffer)[], boolean][] = [
          // Content-Length longer than the body, then hang up: a truncated body.
          [[`${head}Content-Length: 500\r\n\r\n${body.slice(0, 20)}`], true],
          // Content-Length shorter than the body: the rest is a garbage next request.
          [[`${head}Content-Length: 5\r\n\r\n${body}`], true],
          [[`${head}Content-Length: -1\r\n\r\n${body}`], true],
          [[`${head}Content-Length: 99999999999999999999\r\n\r\n${body}`], true],
          [[`${head}Content-Length: 1\r\nContent-Length: 2\r\n\r\n{}`], true],
          [[`${head}Transfer-Encoding: chunked\r\n\r\nzz\r\n${body}\r\n0\r\n\r\n`], true],
          [[`${head}Transfer-Encoding: chunked\r\nContent-Length: 3\r\n\r\n3\r\n{}}\r\n0\r\n\r\n`], true],
          [[`GARBAGE /v1/events HTTP/9.9\r\n\r\n`], true],
          [[`GET /v1/events HTTP/1.1\r\nHost: x\r\n${auth}X-Long: ${'a'.repeat(20_000)}\r\n\r\n`], true],
          [[`GET /v1/events/a\u0000b HTTP/1.1\r\nHost: x\r\n${auth}\r\n`], true],
          // Control characters in header values (HTTP client libraries refuse to send these).
          [
            [
              `POST /v1/events HTTP/1.1\r\nHost: x\r\n${auth}Content-Type: application/json\u0000\r\nContent-Length: 2\r\n\r\n{}`,
            ],
            true,
          ],
          [[`GET /v1/events HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer bk_\u0001\u007f\r\n\r\n`], true],
          [[`GET /v1/events HTTP/1.1\r\nHost: x\r\n${auth}If-Match: "1\r\n\r\n`], true],
          [[Buffer.from([0x16, 0x03, 0x01, 0x00, 0xff, 0x01])], true],
        ];
        const [chunks, end] = cases[i % cases.length];
        results.push(await rawExchange(port, chunks, 0, end, 150));
      }
      return results;
    };
    const slow = async () => {
      const runs = Array.from({ length: SLOW_CLIENTS }, (_, i) => {
        const slowBody = JSON.stringify({ id: `slow-${i}`, destination: 'orders' });
        const text = `POST /v1/events HTTP/1.1\r\nHost: x\r\n${auth}Content-Type: application/json\r\nContent-Length: ${slowBody.length}\r\nConnection: close\r\n\r\n${slowBody}`;
        const pieces = text.match(/[\s\S]{1,8}/g)!;
        // Half finish their request (slowly); half stop halfway and hang up.
        const sentPieces = i % 2 === 0 ? pieces : pieces.slice(0, Math.floor(pieces.length * 0.7));
        return rawExchange(port, sentPieces, 3, i % 2 !== 0, 2_000).then((line) => ({ i, line }));
      });
      return Promise.all(runs);
    };

    const [, rawLines, slowResults] = await Promise.all([
      Promise.all(Array.from({ length: CONCURRENCY }, worker)),
      raw(),
      slow(),
    ]);
    await pool.close();

    for (const line of rawLines) if (line && /^HTTP\/1\.1 5/.test(line)) fail(`raw client got ${line}`);
    for (const { i, line } of slowResults) {
      if (line && /^HTTP\/1\.1 5/.test(line)) fail(`slow client ${i} got ${line}`);
      if (i % 2 === 0) {
        if (line !== 'HTTP/1.1 201 Created') fail(`slow client ${i} that finished its request got ${line}`);
        else accepted.a.add(`slow-${i}`);
      }
    }

    // Healthy afterwards: liveness, readiness, and an ordinary request still works.
    assert.equal((await fetch(`http://127.0.0.1:${port}/healthz`)).status, 200);
    assert.equal((await fetch(`http://127.0.0.1:${port}/readyz`)).status, 200);
    const after = await fetch(`http://127.0.0.1:${port}/v1/events`, {
      method: 'POST',
      headers: { authorization: `Bearer ${t.tenantKey}`, 'content-type': 'application/json' },
      body: JSON.stringify({ id: 'after-fuzz', destination: { url: 'https://hooks.example.com/after' }, delay: '1h' }),
    });
    assert.equal(after.status, 201);
    accepted.a.add('after-fuzz');

    // The store holds exactly the events whose creation was acknowledged, per tenant.
    for (const [tenant, tenantId] of [
      ['a', t.tenantId],
      ['b', t.tenantIdB],
    ] as const) {
      const stored = new Set<string>();
      let cursor: string | undefined;
      do {
        const page = await t.store.eventList({ tenantId, limit: 1000, cursor });
        for (const e of page.events) stored.add(e.id);
        cursor = page.nextCursor ?? undefined;
      } while (cursor);
      const missing = [...accepted[tenant]].filter((id) => !stored.has(id));
      const unexpected = [...stored].filter((id) => !accepted[tenant].has(id));
      if (missing.length > 0) fail(`tenant ${tenant}: acknowledged but not stored: ${missing.slice(0, 5).join(', ')}`);
      if (unexpected.length > 0)
        fail(`tenant ${tenant}: stored but never acknowledged: ${unexpected.slice(0, 5).join(', ')}`);
    }
    for (const line of logs.errors.slice(0, 3)) fail(`error logged: ${line.slice(0, 300)}`);

    ctx.diagnostic(
      `seed ${SEED}: ${requests.length} requests (${clientRefused} refused by the client library), statuses ${JSON.stringify(Object.fromEntries([...statuses].sort()))}, created A ${accepted.a.size} B ${accepted.b.size}`,
    );
    assert.ok(statuses.get(201)! > 100, 'too few requests were valid: the fuzzer explores nothing');
    assert.ok(kinds.size >= 15, `only ${kinds.size} kinds of request reached the server`);
    assert.deepEqual(failures, [], `fuzz failures; replay with BELFRY_FUZZ_SEED=${SEED}`);
  });
});
