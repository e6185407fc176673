/**
 * The CLI's commands of every API resource but schedules' basics (cli-schedules.test.ts), in process
 * (runCli with the real fetch) against a real in-process node: each command's table, its --json,
 * and an error: the API's (exit 1, its code and status on stderr) or the command line's (exit 2).
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { Io } from '../../src/cli/command.ts';
import { runCli } from '../../src/cli/main.ts';
import { belfryVersion } from '../../src/node/version.ts';
import { ADMIN_KEY, startTestNode, waitUntil, type TestNode } from '../support/node.ts';

/** Never called: every event here is claimed, fires far ahead, or goes to a pull destination. */
const HOOK = 'http://127.0.0.1:9/hook';
/** A secret in the Standard Webhooks form the API takes. */
const SECRET = `whsec_${Buffer.alloc(32, 7).toString('base64')}`;

let node: TestNode;

before(async () => {
  node = await startTestNode();
});
after(async () => {
  await node?.close();
});

interface Result {
  code: number;
  out: string;
  err: string;
}

/** Runs one command line with the node's URL and both keys in the environment; `files` are what --file reads. */
async function cli(argv: string[], opts: { env?: Record<string, string>; files?: Record<string, string> } = {}) {
  const out: string[] = [];
  const err: string[] = [];
  const io: Io = {
    env: { BELFRY_URL: node.url, BELFRY_API_KEY: node.tenantKey, BELFRY_ADMIN_KEY: ADMIN_KEY, ...opts.env },
    out: (t) => void out.push(t),
    err: (t) => void err.push(t),
    fetch: globalThis.fetch,
    readFile: async (path) => {
      const text = opts.files?.[path];
      if (text === undefined) throw new Error(`ENOENT: ${path}`);
      return text;
    },
  };
  const code = await runCli(argv, io);
  return { code, out: out.join('\n'), err: err.join('\n') } satisfies Result;
}

/** Runs a command that must succeed; returns its stdout. */
async function ok(argv: string[], opts?: Parameters<typeof cli>[1]): Promise<string> {
  const r = await cli(argv, opts);
  assert.equal(r.code, 0, `belfry ${argv.join(' ')} exited ${r.code}: ${r.err}`);
  return r.out;
}

/** Runs a command that must succeed with --json; returns the parsed answer. */
async function okJson(argv: string[], opts?: Parameters<typeof cli>[1]): Promise<any> {
  return JSON.parse(await ok([...argv, '--json'], opts));
}

/** Asserts the API refused the command: exit 1, nothing on stdout, the error's code and status on stderr. */
async function refused(argv: string[], status: number, pattern: RegExp): Promise<void> {
  const r = await cli(argv);
  assert.equal(r.code, 1, `belfry ${argv.join(' ')}: ${r.out}${r.err}`);
  assert.equal(r.out, '');
  assert.match(r.err, new RegExp(`^error: \\S+ \\(HTTP ${status}\\)`));
  assert.match(r.err, pattern);
}

/** Asserts a command-line mistake: exit 2, a message naming it and the command's --help. */
async function misused(argv: string[], pattern: RegExp): Promise<void> {
  const r = await cli(argv);
  assert.equal(r.code, 2, `belfry ${argv.join(' ')}: ${r.out}${r.err}`);
  assert.match(r.err, pattern);
  assert.match(r.err, new RegExp(`Run 'belfry ${argv[0]} ${argv[1]} --help' for usage\\.`));
}

describe('belfry destinations', () => {
  it('put from flags prints the destination and its generated secret once; get, list and health show it', async () => {
    const put = await cli([
      'destinations',
      'put',
      'orders',
      '--target-url',
      HOOK,
      '--header',
      'x-team=checkout',
      '--timeout',
      '5s',
      '--max-attempts',
      '3',
      '--min-backoff',
      '1s',
      '--max-backoff',
      '1m',
      '--rate-limit',
      '50',
      '--max-concurrency',
      '4',
    ]);
    assert.equal(put.code, 0, put.err);
    assert.match(put.out, /^name\s+orders$/m);
    assert.match(put.out, /^kind\s+http$/m);
    assert.match(put.out, new RegExp(`^target\\s+${HOOK}$`, 'm'));
    assert.match(put.out, /^headers\s+\{"x-team":"checkout"\}$/m);
    assert.match(put.out, /^retry\s+3 attempts, backoff 1s to 1m/m);
    assert.match(put.out, /^rate limit\s+50\/s$/m);
    assert.match(put.out, /^max concurrency\s+4$/m);
    assert.match(put.out, /^secret\s+whsec_\S+$/m);
    assert.match(put.err, /shown once/);

    const got = await okJson(['destinations', 'get', 'orders']);
    assert.equal(got.url, HOOK);
    assert.equal(got.timeout, '5s');
    assert.equal(got.maxConcurrency, 4);
    assert.equal(got.secret, undefined, 'a secret is never read back');
    const table = await ok(['destinations', 'get', 'orders']);
    assert.match(table, /^timeout\s+5s$/m);
    assert.doesNotMatch(table, /^secret/m);

    const list = await ok(['destinations', 'list']);
    assert.match(list.split('\n')[0], /^NAME\s+KIND\s+TARGET\s+TIMEOUT\s+MAX CONCURRENCY\s+UPDATED$/);
    assert.match(list, new RegExp(`^orders\\s+http\\s+${HOOK}\\s+5s\\s+4\\s+\\S+$`, 'm'));
    const listed = await okJson(['destinations', 'list']);
    assert.ok(listed.destinations.some((d: { name: string }) => d.name === 'orders'));

    const health = await okJson(['destinations', 'health', 'orders']);
    assert.equal(health.name, 'orders');
    assert.equal(typeof health.nodeId, 'string');
    assert.match(await ok(['destinations', 'health', 'orders']), /^answered by\s+\S+$/m);
  });

  it('put from a JSON file, with the given secret (none printed); rotate-secret prints the new one', async () => {
    const body = JSON.stringify({ url: HOOK, secret: SECRET, timeout: '2s' });
    const put = await cli(['destinations', 'put', 'billing', '--file', 'billing.json', '--json'], {
      files: { 'billing.json': body },
    });
    assert.equal(put.code, 0, put.err);
    const created = JSON.parse(put.out);
    assert.equal(created.kind, 'http');
    assert.equal(created.timeout, '2s');
    assert.equal(created.secret, undefined, 'a given secret is not echoed');
    assert.equal(put.err, '');

    const rotated = await cli(['destinations', 'rotate-secret', 'billing', '--grace-period', '1h']);
    assert.equal(rotated.code, 0, rotated.err);
    assert.match(rotated.out, /^secret\s+whsec_\S+$/m);
    assert.doesNotMatch(rotated.out, new RegExp(SECRET.replace(/[+/]/g, '\\$&')));
    assert.match(rotated.out, /^old secrets until\s+\d{4}-\d\d-\d\dT/m);
    assert.match(rotated.err, /shown once/);
    const again = await okJson(['destinations', 'rotate-secret', 'billing', '--secret', SECRET]);
    assert.equal(again.secret, SECRET);
  });

  it('delete prints what it deleted (nothing with --json); then get is a 404 naming the destination', async () => {
    await ok(['destinations', 'put', 'gone', '--kind', 'pull']);
    assert.equal(await ok(['destinations', 'delete', 'gone']), 'deleted destination gone');
    await refused(['destinations', 'get', 'gone'], 404, /no destination named "gone"/);
    await refused(['destinations', 'delete', 'gone'], 404, /not_found/);
    await ok(['destinations', 'put', 'gone2', '--kind', 'pull']);
    assert.equal(await ok(['destinations', 'delete', 'gone2', '--json']), '');
  });

  it('a body the API refuses is its 400 naming the field; flag mistakes exit 2 and send nothing', async () => {
    await refused(['destinations', 'put', 'k', '--kind', 'kafka', '--brokers', '127.0.0.1:9'], 400, /topic/);
    await misused(['destinations', 'put', 'x'], /--target-url <url> is required for a destination of kind http/);
    await misused(
      ['destinations', 'put', 'x', '--file', 'x.json', '--timeout', '1s'],
      /give --file or the destination's flags, not both \(--timeout\)/,
    );
    await misused(['destinations', 'put', 'x', '--kind', 'smtp'], /--kind: expected one of/);
    await misused(['destinations', 'put', 'x', '--target-url', HOOK, '--timeout', 'soon'], /--timeout: not a duration/);
    await misused(['destinations', 'put', 'x', '--file', 'missing.json'], /--file: cannot read missing\.json/);
    await misused(['destinations', 'get'], /missing <name>/);
  });
});

describe('belfry sources', () => {
  it('put, get, list and delete a Kafka source; then get is a 404', async () => {
    const put = await cli([
      'sources',
      'put',
      'requests',
      '--brokers',
      '127.0.0.1:9',
      '--topic',
      'schedule-requests',
      '--dead-letter-topic',
      'rejects',
      '--start',
      'latest',
    ]);
    assert.equal(put.code, 0, put.err);
    assert.match(put.out, /^name\s+requests$/m);
    assert.match(put.out, /^brokers\s+127\.0\.0\.1:9$/m);
    assert.match(put.out, /^dead-letter topic\s+rejects$/m);
    assert.match(put.out, /^start\s+latest$/m);
    assert.match(put.out, /^version\s+1$/m);

    const replaced = await okJson(['sources', 'put', 'requests', '--file', 'source.json'], {
      files: { 'source.json': JSON.stringify({ brokers: ['127.0.0.1:9'], topic: 'schedule-requests' }) },
    });
    assert.equal(replaced.version, 2);
    assert.equal(replaced.kind, 'kafka', 'the kind defaults to kafka');
    assert.equal(replaced.deadLetterTopic, null);

    const got = await okJson(['sources', 'get', 'requests']);
    assert.equal(got.topic, 'schedule-requests');
    assert.match(await ok(['sources', 'get', 'requests']), /^topic\s+schedule-requests$/m);
    const list = await ok(['sources', 'list']);
    assert.match(list.split('\n')[0], /^NAME\s+TOPIC\s+STATE\s+LAG\s+ACCEPTED\s+REJECTED\s+UPDATED$/);
    assert.match(list, /^requests\s+schedule-requests\s+\S+/m);
    assert.deepEqual(
      (await okJson(['sources', 'list', '--limit', '10'])).sources.map((s: { name: string }) => s.name),
      ['requests'],
    );

    const deleted = await ok(['sources', 'delete', 'requests']);
    assert.match(deleted, /^deleted source requests$/m);
    await refused(['sources', 'get', 'requests'], 404, /not_found/);
    assert.equal(await ok(['sources', 'list']), 'no sources');
  });

  it('flag mistakes exit 2: no topic, a bad --start, a bad --limit', async () => {
    await misused(['sources', 'put', 's', '--brokers', '127.0.0.1:9'], /give --brokers and --topic/);
    await misused(['sources', 'put', 's', '--brokers', 'b:9', '--topic', 't', '--start', 'middle'], /--start/);
    await misused(['sources', 'list', '--limit', '0'], /--limit/);
  });
});

describe('belfry tenants, keys and account', () => {
  let tenantId = '';

  before(async () => {
    tenantId = (await okJson(['tenants', 'create', 'cli-tenants'])).id;
  });

  it('tenants list and get show the tenant, its limits and retention with who set them', async () => {
    const list = await ok(['tenants', 'list']);
    assert.match(list.split('\n')[0], /^ID\s+NAME\s+DURABILITY\s+MISSED AFTER\s+CREATED$/);
    assert.match(list, new RegExp(`^${tenantId}\\s+cli-tenants\\s+strict\\s+`, 'm'));
    assert.ok((await okJson(['tenants', 'list'])).tenants.some((t: { id: string }) => t.id === tenantId));

    const got = await ok(['tenants', 'get', tenantId]);
    assert.match(got, /^name\s+cli-tenants$/m);
    assert.match(got, /^LIMIT\s+VALUE\s+SET BY$/m);
    assert.match(got, /^batchEventsMax\s+\d+\s+default$/m);
    assert.match(got, /^RETENTION\s+VALUE\s+SET BY$/m);
    assert.match(got, /^succeeded\s+\S+\s+default$/m);
    assert.deepEqual((await okJson(['tenants', 'get', tenantId])).overrides, {});
  });

  it('tenants edit sets limits, retention and policy, and "default" gives them back', async () => {
    const edited = await ok([
      'tenants',
      'edit',
      tenantId,
      '--limit',
      'batchEventsMax=50',
      '--retention',
      'succeeded=2d',
      '--missed-after',
      '5m',
    ]);
    assert.match(edited, /^batchEventsMax\s+50\s+tenant$/m);
    assert.match(edited, /^succeeded\s+2d\s+tenant$/m);
    assert.match(edited, /^missed after\s+5m$/m);
    const back = await okJson([
      'tenants',
      'edit',
      tenantId,
      '--limit',
      'batchEventsMax=default',
      '--retention',
      'succeeded=default',
      '--missed-after',
      'default',
    ]);
    assert.deepEqual(back.overrides, {});
    assert.deepEqual(back.retentionOverrides, {});
    assert.equal(back.missedAfter, null);
  });

  it('tenants: an unknown tenant is a 404; a value out of bounds is the API 400; unknown names exit 2', async () => {
    await refused(['tenants', 'get', 'tn_nope'], 404, /not_found/);
    await refused(['tenants', 'edit', tenantId, '--limit', 'batchEventsMax=0'], 400, /batchEventsMax/);
    await misused(
      ['tenants', 'edit', tenantId, '--limit', 'nope=1'],
      /no limit named nope; the limits are .*batchEventsMax/,
    );
    await misused(['tenants', 'edit', tenantId, '--retention', 'scheduled=1d'], /not a terminal state: scheduled/);
    await misused(['tenants', 'edit', tenantId], /give at least one of --limit/);
  });

  it('tenants rotate-secret prints the new signing secret once', async () => {
    const r = await cli(['tenants', 'rotate-secret', tenantId, '--grace-period', '1m']);
    assert.equal(r.code, 0, r.err);
    assert.match(r.out, /^secret\s+whsec_\S+$/m);
    assert.match(r.err, /shown once/);
    assert.match((await okJson(['tenants', 'rotate-secret', tenantId])).secret, /^whsec_/);
    await refused(['tenants', 'rotate-secret', 'tn_nope'], 404, /not_found/);
  });

  it("keys list, rotate and revoke a tenant's keys with the admin key", async () => {
    const first = await okJson(['keys', 'create', tenantId]);
    const list = await ok(['keys', 'list', tenantId]);
    assert.match(list.split('\n')[0], /^ID\s+PREFIX\s+CREATED\s+REVOKED$/);
    assert.match(list, new RegExp(`^${first.id}\\s+${first.prefix}\\s+\\S+\\s+-$`, 'm'));

    const rotated = await cli(['keys', 'rotate', tenantId, first.id, '--grace-period', '1m']);
    assert.equal(rotated.code, 0, rotated.err);
    assert.match(rotated.out, /^key\s+\S+$/m);
    assert.match(rotated.out, new RegExp(`^replaces\\s+${first.id}$`, 'm'));
    assert.match(rotated.err, /shown once/);

    const second = await okJson(['keys', 'create', tenantId]);
    assert.equal(await ok(['keys', 'revoke', tenantId, second.id]), `revoked key ${second.id}`);
    const keys = (await okJson(['keys', 'list', tenantId])).keys as { id: string; revokedAt: string | null }[];
    assert.notEqual(keys.find((k) => k.id === second.id)?.revokedAt, null);
    assert.match(await ok(['keys', 'list', tenantId]), new RegExp(`^${second.id}\\s+\\S+\\s+\\S+\\s+\\d{4}-`, 'm'));
    await refused(['keys', 'revoke', tenantId, 'k_nope'], 404, /not_found/);
    await misused(['keys', 'revoke', tenantId, second.id, 'extra'], /unexpected argument: extra/);
    await misused(['keys', 'revoke'], /missing <keyId>/);
  });

  it('keys without a tenant id are the calling tenant’s own, with its API key', async () => {
    const created = await cli(['keys', 'create'], { env: { BELFRY_ADMIN_KEY: '' } });
    assert.equal(created.code, 0, created.err);
    assert.match(created.out, /^key\s+\S+$/m);
    const id = /^id\s+(\S+)$/m.exec(created.out)?.[1];
    assert.ok(id);
    const own = (await okJson(['keys', 'list'])).keys as { id: string }[];
    assert.ok(own.some((k) => k.id === id));
    assert.match(await ok(['keys', 'list']), new RegExp(`^${id}\\s`, 'm'));
    const rotated = await okJson(['keys', 'rotate', id]);
    assert.equal(rotated.replaces, id);
    assert.equal(await ok(['keys', 'revoke', rotated.id, '--json']), '');
    const r = await cli(['keys', 'list'], { env: { BELFRY_API_KEY: '' } });
    assert.equal(r.code, 2);
    assert.match(r.err, /no API key: pass --key or set BELFRY_API_KEY/);
  });

  it('account limits shows the calling tenant’s limits; rotate-secret its signing secret; a bad key is a 401', async () => {
    const table = await ok(['account', 'limits']);
    assert.match(table.split('\n')[0], /^LIMIT\s+VALUE$/);
    assert.match(table, /^payloadBytesMax\s+\d+$/m);
    const limits = await okJson(['account', 'limits']);
    assert.equal(typeof limits.batchEventsMax, 'number');
    const rotated = await cli(['account', 'rotate-secret', '--grace-period', '1m']);
    assert.equal(rotated.code, 0, rotated.err);
    assert.match(rotated.out, /^secret\s+whsec_\S+$/m);
    assert.match(rotated.err, /shown once/);
    const bad = await cli(['account', 'limits', '--key', 'bk_not_a_key']);
    assert.equal(bad.code, 1);
    assert.match(bad.err, /HTTP 401/);
  });
});

describe('belfry events edit and replay, and pull', () => {
  it('edit changes the fire time, payload and type; a stale --if-match is a 412; nothing to change exits 2', async () => {
    const fireAt = new Date(Date.now() + 86_400_000).toISOString();
    await ok(['events', 'schedule', '--id', 'edit-1', '--destination', HOOK, '--delay', '1h', '--payload', '{"v":1}']);
    const edited = await ok([
      'events',
      'edit',
      'edit-1',
      '--fire-at',
      fireAt,
      '--payload',
      '{"v":2}',
      '--type',
      'order.timeout',
      '--if-match',
      '"1"',
    ]);
    assert.match(edited, new RegExp(`^fire at\\s+${fireAt}$`, 'm'));
    assert.match(edited, /^payload\s+\{"v":2\}$/m);
    assert.match(edited, /^type\s+order\.timeout$/m);
    assert.match(edited, /^version\s+2$/m);
    const cleared = await okJson(['events', 'edit', 'edit-1', '--no-type', '--if-match', '2']);
    assert.equal(cleared.type, null);
    assert.equal(cleared.version, 3);
    await refused(['events', 'edit', 'edit-1', '--delay', '2h', '--if-match', '1'], 412, /precondition|version/);
    await refused(['events', 'edit', 'nope', '--delay', '2h'], 404, /not_found/);
    await misused(['events', 'edit', 'edit-1'], /nothing to change/);
    await misused(['events', 'edit', 'edit-1', '--type', 'a', '--no-type'], /--type or --no-type, not both/);
    await misused(['events', 'edit', 'edit-1', '--delay', '1h', '--if-match', 'v1'], /--if-match: expected a version/);
  });

  it('pull claim, extend, nack --discard; events replay; claim again and ack', async () => {
    await ok(['destinations', 'put', 'jobs', '--kind', 'pull']);
    await ok(['events', 'schedule', '--id', 'job-1', '--destination', 'jobs', '--payload', '{"n":1}']);

    /** Claims until job-1 comes (it is due at once; the claim long-polls), within a deadline. */
    async function claimJob(): Promise<{ out: string; receipt: string }> {
      let claimed: { out: string; receipt: string } | undefined;
      await waitUntil(
        'job-1 claimed',
        async () => {
          const out = await ok(['pull', 'claim', 'jobs', '--wait', '1s', '--visibility-timeout', '30s']);
          const receipt = new RegExp('^job-1\\s+-\\s+\\d+\\s+\\S+\\s+\\S+\\s+(\\S+)\\s', 'm').exec(out)?.[1];
          if (receipt) claimed = { out, receipt };
          return receipt !== undefined;
        },
        15_000,
      );
      return claimed!;
    }

    const first = await claimJob();
    assert.match(first.out.split('\n')[0], /^ID\s+TYPE\s+ATTEMPT\s+FIRE AT\s+VISIBLE UNTIL\s+RECEIPT\s+PAYLOAD$/);
    assert.match(first.out, /^job-1\s+-\s+1\s+.*\{"n":1\}$/m);
    assert.deepEqual((await okJson(['pull', 'claim', 'jobs'])).events, [], 'a claimed event is not handed out again');
    assert.equal(await ok(['pull', 'claim', 'jobs']), 'no events due');

    const extended = await okJson([
      'pull',
      'extend',
      'job-1',
      '--receipt',
      first.receipt,
      '--visibility-timeout',
      '1m',
    ]);
    assert.equal(extended.id, 'job-1');
    assert.ok(Date.parse(extended.visibleUntil) > Date.now() + 30_000);

    const nacked = await ok([
      'pull',
      'nack',
      'job-1',
      '--receipt',
      first.receipt,
      '--discard',
      '--reason',
      'bad input',
    ]);
    assert.match(nacked, /^state\s+discarded$/m);
    assert.match(nacked, /^last error\s+bad input$/m);
    await refused(['pull', 'ack', 'job-1', '--receipt', first.receipt], 409, /receipt/);

    await refused(['events', 'replay', 'job-1', '--if-match', '1'], 412, /precondition|version/);
    const replayed = await ok(['events', 'replay', 'job-1']);
    assert.match(replayed, /^id\s+job-1$/m);
    assert.match(replayed, /^state\s+scheduled$/m);

    const second = await claimJob();
    const acked = await okJson(['pull', 'ack', 'job-1', '--receipt', second.receipt]);
    assert.equal(acked.state, 'succeeded');
    await refused(['events', 'replay', 'nope'], 404, /not_found/);
    await refused(['events', 'replay', 'edit-1'], 409, /conflict/);
    await misused(['pull', 'ack', 'job-1'], /--receipt is required/);
    await misused(['pull', 'nack', 'job-1', '--receipt', 'r', '--discard', '--retry-after', '1s'], /not both/);
    await misused(['pull', 'extend', 'job-1', '--receipt', 'r'], /--visibility-timeout is required/);
  });
});

describe('belfry events batch', () => {
  it('schedules each event of a file alone: a table numbered as the file, exit 1 naming how many were refused', async () => {
    const events = [
      { id: 'batch-1', destination: { url: HOOK }, delay: '1h' },
      { destination: { url: HOOK }, delay: '1h', payload: { n: 2 } },
      { id: 'batch-3', destination: 'no-such-destination', delay: '1h' },
    ];
    const r = await cli(['events', 'batch', '--file', 'events.json'], {
      files: { 'events.json': JSON.stringify(events) },
    });
    assert.equal(r.code, 1, r.err);
    const lines = r.out.split('\n');
    assert.match(lines[0], /^#\s+ID\s+RESULT\s+STATE\s+FIRE AT\s+ERROR$/);
    assert.match(lines[1], /^1\s+batch-1\s+created\s+scheduled\s+\S+\s+-$/);
    assert.match(lines[2], /^2\s+\S+\s+created\s+scheduled\s+\S+\s+-$/);
    assert.match(lines[3], /^3\s+batch-3\s+error\s+-\s+-\s+\S+: /);
    assert.equal(r.err, 'error: 1 of 3 events refused (their errors are listed above)');

    const again = await okJson(['events', 'batch', '--file', 'events.json'], {
      files: { 'events.json': JSON.stringify({ events: [events[0]] }) },
    });
    assert.equal(again.results[0].status, 'existing');
    assert.equal(again.results[0].event.id, 'batch-1');
    const table = await ok(['events', 'batch', '--file', 'one.json'], {
      files: { 'one.json': JSON.stringify([{ id: 'batch-4', destination: { url: HOOK }, delay: '1h' }]) },
    });
    assert.match(table, /^1 created, 0 already there$/m);
  });

  it('a missing, empty or malformed file exits 2 and sends nothing', async () => {
    await misused(['events', 'batch'], /--file is required/);
    await misused(['events', 'batch', '--file', 'missing.json'], /cannot read missing\.json/);
    const empty = await cli(['events', 'batch', '--file', 'e.json'], { files: { 'e.json': '[]' } });
    assert.equal(empty.code, 2);
    assert.match(empty.err, /non-empty JSON array/);
    const scalar = await cli(['events', 'batch', '--file', 'e.json'], {
      files: { 'e.json': '[{"destination":"x"}, 3]' },
    });
    assert.equal(scalar.code, 2);
    assert.match(scalar.err, /event 2 is not a JSON object/);
  });
});

describe('belfry schedules edit', () => {
  it('changes the timing and template; a stale --if-match is a 412; an unknown id a 404', async () => {
    await ok(['schedules', 'create', '--id', 'edited', '--cron', '0 2 * * *', '--destination', HOOK]);
    const table = await ok(['schedules', 'edit', 'edited', '--every', '1h', '--payload', '{"job":"sync"}']);
    assert.match(table, /^timing\s+every 1h$/m);
    assert.match(table, /^payload\s+\{"job":"sync"\}$/m);
    const json = await okJson(['schedules', 'edit', 'edited', '--type', 'job.sync', '--if-match', '2']);
    assert.equal(json.cron, null);
    assert.equal(json.type, 'job.sync');
    assert.equal(json.version, 3);
    await refused(['schedules', 'edit', 'edited', '--every', '2h', '--if-match', '1'], 412, /precondition|version/);
    await refused(['schedules', 'edit', 'nope', '--every', '2h'], 404, /no schedule/);
    await misused(
      ['schedules', 'edit', 'edited', '--cron', '* * * * *', '--every', '1m'],
      /--cron or --every, not both/,
    );
    await misused(['schedules', 'edit', 'edited'], /nothing to change/);
  });
});

describe('belfry forecast', () => {
  it('counts scheduled events per bucket, by destination, and for every tenant with --admin', async () => {
    // A window of its own, a day ahead, so the other tests' events are not in it.
    const at = Math.ceil((Date.now() + 2 * 86_400_000) / 60_000) * 60_000;
    await ok(['destinations', 'put', 'fc', '--target-url', HOOK]);
    for (const [i, destination] of ['fc', 'fc', HOOK].entries())
      await ok(['events', 'schedule', '--id', `fc-${i}`, '--destination', destination, '--fire-at', String(at)]);
    const from = new Date(at - 60_000).toISOString();
    const to = new Date(at + 3_600_000).toISOString();

    const table = await ok(['forecast', '--from', from, '--to', to, '--bucket', '1m']);
    const lines = table.split('\n');
    assert.equal(lines[0], `3 scheduled events due from ${from} to ${to} (buckets of 1m)`);
    assert.match(lines[2], /^AT\s+COUNT\s+SPIKE$/);
    assert.match(lines[3], new RegExp(`^${new Date(at).toISOString()}\\s+3\\s+-$`));
    assert.equal(lines.length, 4, 'empty buckets are left out');

    const by = await ok(['forecast', '--from', from, '--to', to, '--by', 'destination']);
    assert.match(by, /^AT\s+COUNT\s+SPIKE\s+BY DESTINATION$/m);
    assert.match(by, /\s3\s+-\s+fc=2, \S+=1$/m);

    const json = await okJson(['forecast', '--from', from, '--to', to, '--bucket', '1m']);
    assert.equal(json.total, 3);
    assert.equal(json.buckets.length, 61);
    const admin = await okJson(['forecast', '--admin', '--by', 'tenant', '--from', from, '--to', to]);
    assert.equal(admin.by, 'tenant');
    assert.equal(admin.total, 3);

    await refused(['forecast', '--bucket', '1ms'], 400, /bucket/);
    const usage = await cli(['forecast', '--by', 'tenant']);
    assert.equal(usage.code, 2);
    assert.match(usage.err, /--by tenant needs --admin/);
    assert.match(usage.err, /Run 'belfry forecast --help' for usage\./);
  });
});

describe('belfry health', () => {
  it('prints liveness and readiness without a key; an unreachable node exits 1 naming the URL', async () => {
    const env = { BELFRY_API_KEY: '', BELFRY_ADMIN_KEY: '' };
    assert.equal(await ok(['health'], { env }), `live     ok\nversion  ${belfryVersion()}\nready    ready`);
    assert.deepEqual(await okJson(['health'], { env }), {
      health: { status: 'ok', version: belfryVersion() },
      readiness: { status: 'ready', reasons: [] },
    });
    const down = await cli(['health', '--url', 'http://127.0.0.1:1']);
    assert.equal(down.code, 1);
    assert.match(down.err, /^error: cannot reach Belfry at http:\/\/127\.0\.0\.1:1: /);
  });
});

describe('belfry --help', () => {
  it('lists every group, and every command prints its own usage', async () => {
    const top = await ok(['--help']);
    for (const group of [
      'events',
      'schedules',
      'destinations',
      'sources',
      'pull',
      'forecast',
      'account',
      'tenants',
      'keys',
      'cluster',
      'health',
    ])
      assert.match(top, new RegExp(`^  ${group} `, 'm'), group);
    const commands = [
      'events edit',
      'events replay',
      'events batch',
      'events list',
      'schedules edit',
      'destinations list',
      'destinations get',
      'destinations put',
      'destinations delete',
      'destinations rotate-secret',
      'destinations health',
      'sources list',
      'sources get',
      'sources put',
      'sources delete',
      'pull claim',
      'pull ack',
      'pull nack',
      'pull extend',
      'account limits',
      'account rotate-secret',
      'tenants list',
      'tenants get',
      'tenants edit',
      'tenants rotate-secret',
      'keys create',
      'keys list',
      'keys revoke',
      'keys rotate',
      'forecast',
      'health',
    ];
    for (const command of commands) {
      const r = await cli([...command.split(' '), '--help']);
      assert.equal(r.code, 0, command);
      assert.match(r.out, new RegExp(`^Usage: belfry ${command} `), command);
    }
  });
});
