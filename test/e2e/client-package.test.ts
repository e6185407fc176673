/**
 * `@belfry/client` as a user gets it: `npm pack` in packages/client gives a tarball of JavaScript
 * and .d.ts (no TypeScript source, nothing to compile); installed offline from that file into an
 * empty project, a plain .mjs file imports it and uses it against a real node (started here):
 * create an event, get it, a batch, concurrent creates batched, a webhook signed and verified; and a
 * strict TypeScript consumer (module NodeNext) type-checks against the installed package.
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtemp, readFile, readdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { after, before, describe, it } from 'node:test';
import { startTestNode, type TestNode } from '../support/node.ts';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const PACKAGE_DIR = join(ROOT, 'packages/client');
const TSC = join(ROOT, 'node_modules/.bin/tsc');
const RUN_MS_MAX = 120_000;

function run(
  file: string,
  args: string[],
  cwd: string,
  env: Record<string, string> = {},
): Promise<{ stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    execFile(
      file,
      args,
      { cwd, env: { ...process.env, ...env }, timeout: RUN_MS_MAX, killSignal: 'SIGKILL', maxBuffer: 16 << 20 },
      (error, stdout, stderr) => {
        if (error) return reject(new Error(`${file} ${args.join(' ')} failed: ${error.message}\n${stdout}\n${stderr}`));
        resolve({ stdout, stderr });
      },
    );
  });
}

/** What the consumer script does with the installed package; it prints one JSON line. */
const CONSUMER_MJS = `
import { BelfryClient, BelfryApiError, verifyWebhook, signPayload, Deduplicator } from '@belfry/client';

const belfry = new BelfryClient({ baseUrl: process.env.BELFRY_URL, apiKey: process.env.BELFRY_API_KEY });
await belfry.destinations.put('later', { url: 'http://127.0.0.1:9/never' });
const created = await belfry.events.createWithOutcome({ destination: 'later', delay: '1h', payload: { from: 'mjs' } });
const got = await belfry.events.get(created.event.id);
const batch = await belfry.events.batch([
  { destination: 'later', delay: '1h', payload: { n: 1 } },
  { destination: 'nowhere', delay: '1h' },
]);
const together = await Promise.all([1, 2, 3].map((n) => belfry.events.create({ destination: 'later', delay: '1h', payload: { n } })));
let refused = null;
try {
  await belfry.events.get('no-such-event');
} catch (err) {
  refused = err instanceof BelfryApiError ? err.status : String(err);
}
const secret = 'whsec_' + Buffer.alloc(24, 7).toString('base64');
const body = JSON.stringify({ hello: 'world' });
const timestampSec = Math.floor(Date.now() / 1000);
const headers = { 'webhook-id': 'msg_1', 'webhook-timestamp': String(timestampSec), 'webhook-signature': signPayload({ msgId: 'msg_1', timestampSec, body, secrets: [secret] }) };
const verified = verifyWebhook(secret, headers, body);
const dedup = new Deduplicator();
const first = await dedup.run(headers, () => 'handled');
const second = await dedup.run(headers, () => 'handled');
console.log(JSON.stringify({
  created: created.created,
  same: JSON.stringify(got) === JSON.stringify(created.event),
  batch: batch.map((r) => r.status),
  together: together.map((e) => e.payload.n),
  refused,
  verified: verified.payload,
  duplicates: [first.duplicate, second.duplicate],
}));
`;

/** A strict TypeScript user of the package: its types must check, and wrong uses must not. */
const CONSUMER_TS = `
import { BelfryClient, BelfryApiError, verifyWebhook, type BelfryEvent, type EventCreate, type BatchingOptions } from '@belfry/client';

const batching: BatchingOptions = { maxDelayMs: 5, maxEvents: 100 };
const belfry = new BelfryClient({ baseUrl: 'http://127.0.0.1:7070', apiKey: 'bk_x', batching });
const body: EventCreate = { destination: 'orders', fireAt: new Date(), payload: { orderId: 1 }, retry: { maxAttempts: 3 } };

export async function use(): Promise<string> {
  const event: BelfryEvent = await belfry.events.create(body);
  const { created } = await belfry.events.createWithOutcome({ destination: { url: 'https://example.com/hook' } });
  const results = await belfry.events.batch([body], { minimal: true });
  for await (const e of belfry.events.list({ state: 'archived', limit: 10 })) console.log(e.id, e.state);
  try {
    await belfry.events.cancel(event.id, { ifMatch: event.version });
  } catch (err) {
    if (err instanceof BelfryApiError && err.status === 409) return err.code;
  }
  const { payload } = verifyWebhook('whsec_x', new Headers(), '{}');
  return String(created) + results.length + String(payload);
}

// @ts-expect-error: an event needs a destination
export const missing: EventCreate = { delay: '1h' };
// @ts-expect-error: the states are the API's
export const state: BelfryEvent['state'] = 'nope';
// @ts-expect-error: batching takes maxDelayMs and maxEvents
new BelfryClient({ baseUrl: 'x', apiKey: 'y', batching: { linger: 5 } });
`;

describe('@belfry/client packed and installed in an empty project', { timeout: 300_000 }, () => {
  let node: TestNode;
  let work: string;
  let tarball: string;
  let project: string;

  before(async () => {
    work = await mkdtemp(join(tmpdir(), 'belfry-client-package-'));
    node = await startTestNode();
  });
  after(async () => {
    await node?.close();
    await rm(work, { recursive: true, force: true });
  });

  it('npm pack gives a tarball of JavaScript and .d.ts: dist/index.js is the entry point, no TypeScript source', async () => {
    const { stdout } = await run('npm', ['pack', '--json', '--pack-destination', work], PACKAGE_DIR);
    const [packed] = JSON.parse(stdout.slice(stdout.indexOf('['))) as {
      filename: string;
      files: { path: string }[];
    }[];
    tarball = join(work, packed.filename);
    const files = packed.files.map((f) => f.path).sort();
    assert.ok(files.includes('dist/index.js') && files.includes('dist/index.d.ts'), files.join(', '));
    assert.ok(files.includes('LICENSE') && files.includes('package.json'), files.join(', '));
    const source = files.filter((f) => f.endsWith('.ts') && !f.endsWith('.d.ts'));
    assert.deepEqual(source, [], 'no TypeScript source');
    assert.deepEqual(
      files.filter((f) => f.includes('test')),
      [],
      'no tests',
    );
  });

  it('installs offline from the file into an empty project, with nothing else', async () => {
    project = join(work, 'app');
    await run('mkdir', ['-p', project], work);
    await writeFile(join(project, 'package.json'), JSON.stringify({ name: 'app', private: true, type: 'module' }));
    await run('npm', ['install', '--offline', '--no-audit', '--no-fund', tarball], project);
    assert.deepEqual(await readdir(join(project, 'node_modules')), ['.package-lock.json', '@belfry']);
    const installed = JSON.parse(await readFile(join(project, 'node_modules/@belfry/client/package.json'), 'utf8'));
    assert.equal(installed.exports['.'].import, './dist/index.js');
  });

  it('a plain .mjs file imports it and uses it against a real node', async () => {
    await writeFile(join(project, 'use.mjs'), CONSUMER_MJS);
    const { stdout } = await run(process.execPath, ['use.mjs'], project, {
      BELFRY_URL: node.url,
      BELFRY_API_KEY: node.tenantKey,
    });
    assert.deepEqual(JSON.parse(stdout.trim()), {
      created: true,
      same: true,
      batch: ['created', 'error'],
      together: [1, 2, 3],
      refused: 404,
      verified: { hello: 'world' },
      duplicates: [false, true],
    });
  });

  it('belfry/client, its first name, is the same module (the server package re-exports it)', async () => {
    const [first, pkg] = await Promise.all([import('belfry/client'), import('@belfry/client')]);
    assert.equal(first.BelfryClient, pkg.BelfryClient);
    assert.equal(first.verifyWebhook, pkg.verifyWebhook);
  });

  it('a strict TypeScript consumer (module NodeNext) type-checks against it', async () => {
    await writeFile(join(project, 'use.ts'), CONSUMER_TS);
    const flags = ['--strict', '--noEmit', '--module', 'nodenext', '--moduleResolution', 'nodenext'];
    const types = ['--target', 'es2022', '--types', 'node', '--typeRoots', join(ROOT, 'node_modules/@types')];
    await run(TSC, [...flags, ...types, 'use.ts'], project);
  });
});
