/** The CLI in-process, against a fake fetch: routing, request shapes, output and exit codes. */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { Io } from './command.ts';
import { runCli } from './main.ts';
import { PACKAGE_VERSION } from '../../test/support/package.ts';

interface Sent {
  method: string;
  url: string;
  headers: Record<string, string>;
  body: unknown;
}

interface Reply {
  status: number;
  body?: unknown;
  text?: string;
}

/** An Io that records what the CLI prints and sends, answering every request with `reply`. */
function fakeIo(reply: Reply, env: Record<string, string> = {}) {
  const sent: Sent[] = [];
  const out: string[] = [];
  const err: string[] = [];
  const io: Io = {
    env: { BELFRY_API_KEY: 'tenant-key', BELFRY_ADMIN_KEY: 'admin-key', ...env },
    out: (text) => void out.push(text),
    err: (text) => void err.push(text),
    readFile: async (path) => {
      if (path === 'payload.json') return '{"fromFile":true}';
      throw new Error('ENOENT');
    },
    fetch: async (input, init) => {
      const headers = Object.fromEntries(new Headers(init?.headers).entries());
      const body = typeof init?.body === 'string' ? JSON.parse(init.body) : undefined;
      sent.push({ method: init?.method ?? 'GET', url: String(input), headers, body });
      const text = reply.text ?? (reply.body === undefined ? '' : JSON.stringify(reply.body));
      return new Response(text, { status: reply.status, headers: { 'content-type': 'application/json' } });
    },
  };
  return { io, sent, out: () => out.join('\n'), err: () => err.join('\n') };
}

const EVENT = {
  id: 'order-1-timeout',
  state: 'scheduled',
  version: 1,
  fireAt: '2099-01-01T00:00:00.000Z',
  dueAt: '2099-01-01T00:00:00.000Z',
  destination: { url: 'https://example.com/hook' },
  payload: { orderId: 1 },
  headers: {},
  group: null,
  type: 'order.timeout',
  attempts: 0,
  lastStatus: null,
  lastError: null,
  createdAt: '2026-01-01T00:00:00.000Z',
  updatedAt: '2026-01-01T00:00:00.000Z',
};

test('events schedule posts the body built from the flags', async () => {
  const f = fakeIo({ status: 201, body: EVENT });
  const code = await runCli(
    [
      'events',
      'schedule',
      '--destination',
      'https://example.com/hook',
      '--fire-at',
      '2099-01-01T00:00:00Z',
      '--payload',
      '{"orderId":1}',
      '--id',
      'order-1-timeout',
      '--group',
      'g',
      '--type',
      'order.timeout',
      '--header',
      'x-a=1',
      '--header',
      'x-b=k=v',
    ],
    f.io,
  );
  assert.equal(code, 0, f.err());
  assert.equal(f.sent.length, 1);
  const [req] = f.sent;
  assert.equal(req.method, 'POST');
  assert.equal(req.url, 'http://127.0.0.1:7070/v1/events');
  assert.equal(req.headers.authorization, 'Bearer tenant-key');
  assert.equal(req.headers['content-type'], 'application/json');
  assert.deepEqual(req.body, {
    id: 'order-1-timeout',
    destination: { url: 'https://example.com/hook' },
    fireAt: '2099-01-01T00:00:00Z',
    payload: { orderId: 1 },
    group: 'g',
    type: 'order.timeout',
    headers: { 'x-a': '1', 'x-b': 'k=v' },
  });
  assert.match(f.out(), /^scheduled\n/);
  assert.match(f.out(), /^type\s+order\.timeout$/m);
  assert.match(f.out(), /^destination\s+https:\/\/example\.com\/hook$/m);
});

test('events schedule sends a destination name as is, epoch ms and ms delays as numbers', async () => {
  const f = fakeIo({ status: 201, body: EVENT });
  assert.equal(await runCli(['events', 'schedule', '--destination', 'orders', '--fire-at', '4102444800000'], f.io), 0);
  assert.deepEqual(f.sent[0].body, { destination: 'orders', fireAt: 4102444800000 });
  assert.equal(
    await runCli(
      ['events', 'schedule', '--destination', 'orders', '--delay', '1500', '--payload-file', 'payload.json'],
      f.io,
    ),
    0,
  );
  assert.deepEqual(f.sent[1].body, { destination: 'orders', delay: 1500, payload: { fromFile: true } });
});

test('events schedule says so when the same id and body were already stored', async () => {
  const f = fakeIo({ status: 200, body: EVENT });
  assert.equal(await runCli(['events', 'schedule', '--destination', 'orders', '--delay', '5m', '--id', 'x'], f.io), 0);
  assert.match(f.out(), /^already scheduled/);
});

test('command-line mistakes exit 2 without sending anything', async () => {
  const cases: string[][] = [
    ['events', 'schedule'],
    ['events', 'schedule', '--destination', 'd', '--delay', '5x'],
    ['events', 'schedule', '--destination', 'd', '--fire-at', 'tomorrow'],
    ['events', 'schedule', '--destination', 'd', '--fire-at', '2099-01-01T00:00:00Z', '--delay', '5m'],
    ['events', 'schedule', '--destination', 'd', '--payload', '{nope'],
    ['events', 'schedule', '--destination', 'd', '--payload-file', 'missing.json'],
    ['events', 'schedule', '--destination', 'd', '--header', 'novalue'],
    ['events', 'schedule', '--destination', 'd', '--bogus'],
    ['events', 'get'],
    ['events', 'get', 'a', 'b'],
    ['events', 'list', '--limit', '1001'],
    ['events', 'nope'],
    ['events', 'edit', 'e1'],
    ['events', 'edit', 'e1', '--fire-at', 'soon'],
    ['events', 'edit', 'e1', '--delay', '5m', '--if-match', 'abc'],
    ['events', 'replay'],
    ['schedules', 'edit', 's1'],
    ['destinations', 'put', 'd'],
    ['destinations', 'put', 'd', '--target-url', 'https://x.example', '--max-concurrency', '0'],
    ['destinations', 'put', 'd', '--file', 'payload.json', '--kind', 'pull'],
    ['destinations', 'rotate-secret', 'd', '--grace-period', 'long'],
    ['sources', 'put', 's', '--topic', 't'],
    ['sources', 'list', 'extra'],
    ['pull', 'claim', 'q', '--max', '101'],
    ['pull', 'ack', 'e1'],
    ['tenants', 'edit', 't1', '--durability', 'loose'],
    ['tenants', 'get'],
    ['keys', 'revoke'],
    ['keys', 'rotate', 't1', 'k1', 'k2'],
    ['forecast', '--by', 'node'],
    ['forecast', 'extra'],
    ['nope'],
    [],
  ];
  for (const argv of cases) {
    const f = fakeIo({ status: 200, body: {} });
    assert.equal(await runCli(argv, f.io), 2, argv.join(' '));
    assert.equal(f.sent.length, 0, argv.join(' '));
    assert.notEqual(f.err(), '', argv.join(' '));
  }
});

test('a missing key is a usage error naming the variable', async () => {
  const f = fakeIo({ status: 200, body: {} });
  f.io.env = {};
  assert.equal(await runCli(['tenants', 'create', 'acme'], f.io), 2);
  assert.match(f.err(), /BELFRY_ADMIN_KEY/);
  assert.equal(await runCli(['events', 'get', 'x'], f.io), 2);
  assert.match(f.err(), /BELFRY_API_KEY/);
});

test('--help prints the usage on stdout and exits 0, everywhere', async () => {
  for (const argv of [['--help'], ['events', '--help'], ['events', 'schedule', '--help'], ['keys', 'create', '-h']]) {
    const f = fakeIo({ status: 200, body: {} });
    assert.equal(await runCli(argv, f.io), 0, argv.join(' '));
    assert.match(f.out(), /^Usage: belfry/, argv.join(' '));
    assert.equal(f.sent.length, 0);
  }
});

test('API errors print code, message and details on stderr and exit 1', async () => {
  const f = fakeIo({
    status: 409,
    body: {
      error: {
        code: 'conflict',
        message: 'event already succeeded',
        details: [{ field: 'state', message: 'succeeded', state: 'succeeded' }],
      },
    },
  });
  assert.equal(await runCli(['events', 'cancel', 'e1', '--if-match', '"3"'], f.io), 1);
  assert.equal(f.sent[0].method, 'DELETE');
  assert.equal(f.sent[0].headers['if-match'], '"3"');
  assert.equal(f.out(), '');
  assert.equal(
    f.err(),
    'error: conflict (HTTP 409): event already succeeded\n  - state: succeeded {"state":"succeeded"}',
  );
});

test('a detail that repeats the message is not printed twice', async () => {
  const f = fakeIo({
    status: 400,
    body: {
      error: {
        code: 'invalid_request',
        message: 'destination: unknown',
        details: [{ field: 'destination', message: 'unknown' }],
      },
    },
  });
  assert.equal(await runCli(['events', 'get', 'e1'], f.io), 1);
  assert.equal(f.err(), 'error: invalid_request (HTTP 400): destination: unknown');
});

test('a non-JSON error body is shown as text', async () => {
  const f = fakeIo({ status: 502, text: 'Bad Gateway' });
  assert.equal(await runCli(['events', 'get', 'e1'], f.io), 1);
  assert.equal(f.err(), 'error: http_error (HTTP 502): Bad Gateway');
});

test('an unreachable server exits 1 naming the URL', async () => {
  const f = fakeIo({ status: 200 });
  f.io.fetch = async () => {
    throw new TypeError('fetch failed', { cause: { code: 'ECONNREFUSED' } });
  };
  assert.equal(await runCli(['events', 'get', 'e1', '--url', 'http://127.0.0.1:1/'], f.io), 1);
  assert.equal(f.err(), 'error: cannot reach Belfry at http://127.0.0.1:1: ECONNREFUSED');
});

test('events list sends the filters as query parameters and prints a table and the cursor', async () => {
  const f = fakeIo({ status: 200, body: { events: [EVENT], nextCursor: 'c2' } }, { BELFRY_URL: 'http://belfry:9000' });
  const code = await runCli(
    ['events', 'list', '--state', 'scheduled', '--group', 'g', '--type', 'a.b', '--limit', '10', '--cursor', 'c1'],
    f.io,
  );
  assert.equal(code, 0, f.err());
  assert.equal(f.sent[0].url, 'http://belfry:9000/v1/events?state=scheduled&group=g&type=a.b&limit=10&cursor=c1');
  const lines = f.out().split('\n');
  assert.match(lines[0], /^ID\s+STATE\s+FIRE AT\s+DESTINATION\s+GROUP\s+ATTEMPTS\s+LAST STATUS$/);
  assert.match(
    lines[1],
    /^order-1-timeout\s+scheduled\s+2099-01-01T00:00:00.000Z\s+https:\/\/example.com\/hook\s+-\s+0\s+-$/,
  );
  assert.equal(lines.at(-1), 'more: --cursor c2');
});

test('events trace prints one row per transition', async () => {
  const transitions = [
    {
      seq: 1,
      at: '2026-01-01T00:00:00.000Z',
      kind: 'created',
      fromState: null,
      toState: 'scheduled',
      attempt: 0,
      status: null,
      error: null,
      durationMs: null,
      latenessMs: null,
      detail: null,
    },
    {
      seq: 2,
      at: '2026-01-01T00:01:00.000Z',
      kind: 'state',
      fromState: 'scheduled',
      toState: 'canceled',
      attempt: 0,
      status: null,
      error: null,
      durationMs: null,
      latenessMs: null,
      detail: { by: 'api' },
    },
  ];
  const f = fakeIo({ status: 200, body: { transitions } });
  assert.equal(await runCli(['events', 'trace', 'a/b'], f.io), 0, f.err());
  assert.equal(f.sent[0].url, 'http://127.0.0.1:7070/v1/events/a%2Fb/transitions');
  const lines = f.out().split('\n');
  assert.equal(lines.length, 3);
  assert.match(lines[2], /^2\s+\S+\s+state\s+scheduled -> canceled\s+0\s+-\s+-\s+-\s+\{"by":"api"\}$/);
});

test('--json prints the raw response body', async () => {
  const f = fakeIo({
    status: 201,
    body: { id: 'k1', key: 'bk_secret', prefix: 'bk_se', createdAt: '2026-01-01T00:00:00.000Z' },
  });
  assert.equal(await runCli(['keys', 'create', 't1', '--json'], f.io), 0);
  assert.equal(f.sent[0].url, 'http://127.0.0.1:7070/v1/tenants/t1/keys');
  assert.equal(f.sent[0].headers.authorization, 'Bearer admin-key');
  assert.deepEqual(JSON.parse(f.out()), {
    id: 'k1',
    key: 'bk_secret',
    prefix: 'bk_se',
    createdAt: '2026-01-01T00:00:00.000Z',
  });
});

test('keys create prints the key with a shown-once note', async () => {
  const f = fakeIo({
    status: 201,
    body: { id: 'k1', key: 'bk_secret', prefix: 'bk_se', createdAt: '2026-01-01T00:00:00.000Z' },
  });
  assert.equal(await runCli(['keys', 'create', 't1'], f.io), 0);
  assert.match(f.out(), /^key\s+bk_secret$/m);
  assert.match(f.err(), /shown once/);
});

test('tenants create posts the name with the admin key', async () => {
  const f = fakeIo({
    status: 201,
    body: { id: 't1', name: 'acme', createdAt: '2026-01-01T00:00:00.000Z', signingSecret: 'whsec_c2lnbg==' },
  });
  assert.equal(await runCli(['tenants', 'create', 'acme', '--key', 'flag-key'], f.io), 0);
  assert.deepEqual(f.sent[0].body, { name: 'acme' });
  assert.equal(f.sent[0].headers.authorization, 'Bearer flag-key');
  assert.match(f.out(), /^id\s+t1$/m);
  assert.match(f.out(), /^signing secret\s+whsec_c2lnbg==$/m);
  assert.match(f.err(), /shown once/);
});

test('events edit sends a PATCH of the given fields with the version as the If-Match ETag', async () => {
  const f = fakeIo({ status: 200, body: { ...EVENT, version: 4 } });
  const code = await runCli(
    ['events', 'edit', 'a/b', '--delay', '90s', '--payload', '{"n":2}', '--no-type', '--if-match', '3'],
    f.io,
  );
  assert.equal(code, 0, f.err());
  assert.equal(f.sent[0].method, 'PATCH');
  assert.equal(f.sent[0].url, 'http://127.0.0.1:7070/v1/events/a%2Fb');
  assert.equal(f.sent[0].headers['if-match'], '"3"');
  assert.deepEqual(f.sent[0].body, { delay: '90s', payload: { n: 2 }, type: null });
  assert.match(f.out(), /^version\s+4$/m);
});

test('keys create without a tenant id creates a key of the calling tenant with its API key', async () => {
  const f = fakeIo({
    status: 201,
    body: { id: 'k2', key: 'bk_own', prefix: 'bk_ow', createdAt: '2026-01-01T00:00:00.000Z' },
  });
  assert.equal(await runCli(['keys', 'create'], f.io), 0, f.err());
  assert.equal(f.sent[0].method, 'POST');
  assert.equal(f.sent[0].url, 'http://127.0.0.1:7070/v1/keys');
  assert.equal(f.sent[0].headers.authorization, 'Bearer tenant-key');
  assert.match(f.out(), /^key\s+bk_own$/m);
  assert.match(f.err(), /shown once/);
});

test('destinations put builds the body of its kind from the flags', async () => {
  const f = fakeIo({ status: 201, body: { name: 'events', kind: 'kafka', brokers: ['b1:9092'], topic: 't' } });
  const code = await runCli(
    [
      'destinations',
      'put',
      'events',
      '--kind',
      'kafka',
      '--brokers',
      'b1:9092, b2:9092',
      '--topic',
      't',
      '--ssl',
      '--timeout',
      '3000',
      '--max-attempts',
      '4',
      '--backoff-coefficient',
      '1.5',
    ],
    f.io,
  );
  assert.equal(code, 0, f.err());
  assert.equal(f.sent[0].method, 'PUT');
  assert.equal(f.sent[0].url, 'http://127.0.0.1:7070/v1/destinations/events');
  assert.deepEqual(f.sent[0].body, {
    kind: 'kafka',
    brokers: ['b1:9092', 'b2:9092'],
    topic: 't',
    ssl: true,
    timeout: 3000,
    retry: { maxAttempts: 4, coefficient: 1.5 },
  });
  assert.match(f.out(), /^target\s+b1:9092 topic t$/m);
});

test('an API error of an SDK call prints code, message and details and exits 1', async () => {
  const f = fakeIo({
    status: 404,
    body: {
      error: {
        code: 'not_found',
        message: 'no destination named "x"',
        details: [{ field: 'name', message: 'not found' }],
      },
    },
  });
  assert.equal(await runCli(['destinations', 'get', 'x'], f.io), 1);
  assert.equal(f.out(), '');
  assert.equal(f.err(), 'error: not_found (HTTP 404): no destination named "x"\n  - name: not found');
});

test('an unreachable server exits 1 naming the URL, for an SDK call too', async () => {
  const f = fakeIo({ status: 200 });
  f.io.fetch = async () => {
    throw new TypeError('fetch failed', { cause: { code: 'ECONNREFUSED' } });
  };
  assert.equal(await runCli(['tenants', 'list', '--url', 'http://127.0.0.1:1'], f.io), 1);
  assert.equal(f.err(), 'error: cannot reach Belfry at http://127.0.0.1:1: ECONNREFUSED');
});

test('--version and -v print the version of package.json on stdout and exit 0; an argument after it is a usage error', async () => {
  for (const flag of ['--version', '-v', 'version']) {
    const f = fakeIo({ status: 500 });
    assert.equal(await runCli([flag], f.io), 0, flag);
    assert.equal(f.out(), PACKAGE_VERSION, flag);
    assert.equal(f.err(), '', flag);
    assert.equal(f.sent.length, 0, `${flag} calls no API`);
  }
  const f = fakeIo({ status: 500 });
  assert.equal(await runCli(['--version', 'extra'], f.io), 2);
  assert.equal(f.out(), '');
  assert.match(f.err(), /unexpected argument: extra/);
});
