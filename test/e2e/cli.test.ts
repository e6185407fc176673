/**
 * The `belfry` CLI end to end: a real node (`belfry start`) in one process, each CLI command in its
 * own process against it, as a user would run them.
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { BIN, startNodeProcess, stopNodeProcess, type NodeProcess } from '../support/process.ts';
import { randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';

/** Bounds on every wait: a CLI that hangs fails the test instead. */
const CLI_RUN_MS_MAX = 30_000;
/** Far enough ahead that the event never fires while the test runs. */
const FIRE_AT_FAR = new Date(Date.now() + 30 * 86_400_000).toISOString();
/** The destination is never called (the event is far in the future); allow-listed so no guard or DNS is involved. */
const DESTINATION_URL = 'http://127.0.0.1:9/hook';

interface CliResult {
  code: number;
  stdout: string;
  stderr: string;
}

/** Runs one CLI command in its own process and resolves with its exit code and output. */
function cli(args: string[], env: Record<string, string>): Promise<CliResult> {
  return new Promise((resolve, reject) => {
    execFile(
      process.execPath,
      [BIN, ...args],
      { env: { ...process.env, ...env }, timeout: CLI_RUN_MS_MAX, killSignal: 'SIGKILL' },
      (error, stdout, stderr) => {
        if (error && typeof error.code !== 'number')
          return reject(new Error(`belfry ${args.join(' ')}: ${error.message}\n${stderr}`));
        resolve({ code: error ? Number(error.code) : 0, stdout, stderr });
      },
    );
  });
}

/** Runs a command that must succeed; returns its stdout. */
async function ok(args: string[], env: Record<string, string>): Promise<string> {
  const result = await cli(args, env);
  assert.equal(result.code, 0, `belfry ${args.join(' ')} exited ${result.code}:\n${result.stderr}${result.stdout}`);
  return result.stdout;
}

describe('belfry CLI against a real node', { timeout: 120_000 }, () => {
  const adminKey = `admin-${randomBytes(12).toString('hex')}`;
  const eventId = `e2e-${randomBytes(4).toString('hex')}`;
  let dataDir = '';
  let node: NodeProcess | undefined;
  let adminEnv: Record<string, string> = {};
  let tenantEnv: Record<string, string> = {};
  let tenantId = '';

  before(async () => {
    dataDir = await mkdtemp(join(tmpdir(), 'belfry-cli-e2e-'));
    node = await startNodeProcess(['--data', dataDir, '--admin-key', adminKey, '--allow-hosts', '127.0.0.1']);
    // The admin key travels by environment, the tenant key later by --key, so both paths are used.
    adminEnv = { BELFRY_URL: node.url, BELFRY_ADMIN_KEY: adminKey, BELFRY_API_KEY: '' };
  });

  after(async () => {
    if (node) await stopNodeProcess(node);
    if (dataDir) await rm(dataDir, { recursive: true, force: true });
  });

  it('tenants create makes a tenant (human and --json output)', async () => {
    const human = await ok(['tenants', 'create', 'acme-human'], adminEnv);
    assert.match(human, /^id\s+\S+$/m);
    assert.match(human, /^name\s+acme-human$/m);
    const tenant = JSON.parse(await ok(['tenants', 'create', 'acme', '--json'], adminEnv)) as {
      id: string;
      name: string;
    };
    assert.equal(tenant.name, 'acme');
    assert.ok(tenant.id);
    tenantId = tenant.id;
  });

  it('keys create prints a key once, usable as the tenant key', async () => {
    const result = await cli(['keys', 'create', tenantId], adminEnv);
    assert.equal(result.code, 0, result.stderr);
    assert.match(result.stdout, /^key\s+\S+$/m);
    assert.match(result.stderr, /shown once/);
    const key = JSON.parse(await ok(['keys', 'create', tenantId, '--json'], adminEnv)) as { id: string; key: string };
    assert.ok(key.key);
    tenantEnv = { BELFRY_URL: node!.url, BELFRY_API_KEY: key.key, BELFRY_ADMIN_KEY: '' };
  });

  it('a wrong admin key is refused with exit code 1 and the API error', async () => {
    const result = await cli(['tenants', 'create', 'x', '--key', 'wrong'], adminEnv);
    assert.equal(result.code, 1);
    assert.match(result.stderr, /^error: \S+ \(HTTP 401\)/);
  });

  it('events schedule posts a far-future event to a URL; the same again is idempotent', async () => {
    const args = [
      'events',
      'schedule',
      '--destination',
      DESTINATION_URL,
      '--fire-at',
      FIRE_AT_FAR,
      '--id',
      eventId,
      '--payload',
      '{"orderId":8812}',
      '--header',
      'x-kind=timeout',
    ];
    const human = await ok(args, tenantEnv);
    assert.match(human, /^scheduled$/m);
    assert.match(human, new RegExp(`^id\\s+${eventId}$`, 'm'));
    const again = JSON.parse(await ok([...args, '--json'], tenantEnv)) as {
      id: string;
      state: string;
      payload: unknown;
    };
    assert.equal(again.id, eventId);
    assert.equal(again.state, 'scheduled');
    assert.deepEqual(again.payload, { orderId: 8812 });
  });

  it('events get shows the event', async () => {
    const human = await ok(['events', 'get', eventId], tenantEnv);
    assert.match(human, /^state\s+scheduled$/m);
    assert.match(human, /^destination\s+http:\/\/127\.0\.0\.1:9\/hook$/m);
    const event = JSON.parse(await ok(['events', 'get', eventId, '--json'], tenantEnv)) as {
      fireAt: string;
      version: number;
    };
    assert.equal(Date.parse(event.fireAt), Date.parse(FIRE_AT_FAR));
    assert.ok(Number.isInteger(event.version));
  });

  it('events list includes the event', async () => {
    const human = await ok(['events', 'list', '--state', 'scheduled'], tenantEnv);
    assert.match(human, /^ID\s+STATE/);
    assert.match(human, new RegExp(`^${eventId}\\s+scheduled`, 'm'));
    const page = JSON.parse(await ok(['events', 'list', '--limit', '10', '--json'], tenantEnv)) as {
      events: Array<{ id: string }>;
    };
    assert.ok(page.events.some((e) => e.id === eventId));
  });

  it('events cancel cancels it, and a second cancel is a definite 409', async () => {
    const human = await ok(['events', 'cancel', eventId], tenantEnv);
    assert.match(human, /^state\s+canceled$/m);
    const again = await cli(['events', 'cancel', eventId], tenantEnv);
    assert.equal(again.code, 1);
    assert.match(again.stderr, /\(HTTP 409\)/);
    const event = JSON.parse(await ok(['events', 'get', eventId, '--json'], tenantEnv)) as { state: string };
    assert.equal(event.state, 'canceled');
  });

  it('events trace shows the transitions up to the cancel', async () => {
    const human = await ok(['events', 'trace', eventId], tenantEnv);
    assert.match(human, /^SEQ\s+AT\s+KIND/);
    assert.match(human, /canceled/);
    const trace = JSON.parse(await ok(['events', 'trace', eventId, '--json'], tenantEnv)) as {
      transitions: Array<{ toState: string }>;
    };
    assert.ok(trace.transitions.length >= 2);
    assert.equal(trace.transitions.at(-1)!.toState, 'canceled');
  });

  it('an unknown event is a 404 with exit code 1; an unknown command exits 2', async () => {
    const missing = await cli(['events', 'get', 'no-such-event'], tenantEnv);
    assert.equal(missing.code, 1);
    assert.match(missing.stderr, /\(HTTP 404\)/);
    const unknown = await cli(['events', 'explode'], tenantEnv);
    assert.equal(unknown.code, 2);
    assert.match(unknown.stderr, /unknown command/);
  });
});
