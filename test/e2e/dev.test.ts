/**
 * `belfry dev`, as a new user runs it: the curl it prints schedules an event that reaches its
 * echo receiver within seconds, signed and verified; a restart on the same data dir reuses the
 * tenant and its key; it refuses what would make it unsafe (a data dir that `belfry start` made, a
 * host other than loopback, another store), and it stops gracefully on SIGTERM.
 */
import assert from 'node:assert/strict';
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { after, before, describe, it } from 'node:test';
import { waitUntil } from '../support/node.ts';
import {
  BIN,
  NODE_START_MS_MAX,
  NODE_STOP_MS_MAX,
  runRefusedStart,
  startNodeProcess,
  stopNodeProcess,
} from '../support/process.ts';

interface Dev {
  child: ChildProcess;
  output: string[];
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  env: Record<string, string>;
}

function startDev(dataDir: string, args: string[] = []): Promise<Dev> {
  const child = spawn(process.execPath, [BIN, 'dev', '--data', dataDir, '--port', '0', '--echo-port', '0', ...args], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const output: string[] = [];
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.once('exit', (code, signal) => resolve({ code, signal })),
  );
  createInterface({ input: child.stderr! }).on('line', (line) => output.push(line));
  return new Promise<Dev>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`no "Ready" line:\n${output.join('\n')}`)), NODE_START_MS_MAX);
    void exited.then(() => reject(new Error(`belfry dev exited:\n${output.join('\n')}`)));
    createInterface({ input: child.stdout! }).on('line', (line) => {
      output.push(line);
      if (!line.startsWith('Ready:')) return;
      clearTimeout(timer);
      resolve({ child, output, exited, env: envFile(join(dataDir, 'dev.env')) });
    });
  }).catch((error: unknown) => {
    child.kill('SIGKILL');
    throw error;
  });
}

function envFile(file: string): Record<string, string> {
  const vars: Record<string, string> = {};
  for (const m of readFileSync(file, 'utf8').matchAll(/^export (\w+)='([^']*)'$/gm)) vars[m[1]] = m[2];
  return vars;
}

async function stopDev(dev: Dev): Promise<{ code: number | null; signal: NodeJS.Signals | null }> {
  if (dev.child.exitCode === null && dev.child.signalCode === null) dev.child.kill('SIGTERM');
  const timer = setTimeout(() => dev.child.kill('SIGKILL'), NODE_STOP_MS_MAX);
  const result = await dev.exited;
  clearTimeout(timer);
  return result;
}

/** The curl the banner prints: its lines from `curl` to the one that does not end in a backslash. */
function printedCurl(output: string[]): string {
  const at = output.findIndex((l) => l.trim().startsWith('curl -s -X POST'));
  assert.ok(at >= 0, `a curl in the banner:\n${output.join('\n')}`);
  const lines = [output[at]];
  while (lines.at(-1)!.endsWith('\\')) lines.push(output[at + lines.length]);
  return lines.join('\n');
}

describe('belfry dev', { timeout: 120_000 }, () => {
  const dataDir = mkdtempSync(join(tmpdir(), 'belfry-dev-'));
  let dev: Dev | undefined;

  before(async () => {
    dev = await startDev(dataDir);
  });
  after(async () => {
    if (dev) await stopDev(dev);
    rmSync(dataDir, { recursive: true, force: true });
  });

  it('prints a curl that schedules an event five seconds ahead, which reaches the echo receiver verified', async () => {
    const { env, output } = dev!;
    assert.match(env.BELFRY_URL, /^http:\/\/127\.0\.0\.1:\d+$/);
    assert.match(env.BELFRY_API_KEY, /^bk_/);
    assert.equal(env.BELFRY_ADMIN_KEY, undefined, 'dev.env carries no admin key (belfry start would read it)');
    assert.ok(output.some((l) => l.includes('not for production')));
    for (const file of ['dev.env', 'dev.json', 'admin.key'])
      assert.equal(statSync(join(dataDir, file)).mode & 0o777, 0o600, file);

    const curl = spawnSync('bash', ['-c', printedCurl(output)], { encoding: 'utf8' });
    assert.equal(curl.status, 0, curl.stderr);
    const event = JSON.parse(curl.stdout) as { id: string; state: string; fireAt: string };
    assert.equal(event.state, 'scheduled');
    const res = await fetch(`${env.BELFRY_ECHO_URL}/deliveries/${event.id}?wait=30s`);
    assert.equal(res.status, 200);
    const delivery = (await res.json()) as { verified: boolean; payload: unknown; receivedAt: string };
    assert.equal(delivery.verified, true);
    assert.deepEqual(delivery.payload, { hello: 'belfry' });
    assert.ok(Date.parse(delivery.receivedAt) >= Date.parse(event.fireAt), 'not before its time');
    await waitUntil(
      'the delivery line',
      () => output.some((l) => l.startsWith('echo ') && l.includes(`${event.id}  signature ok`)),
      5_000,
    );
  });

  it('lets webhooks reach loopback: an inline URL to the echo receiver, signed with the tenant secret', async () => {
    const { env } = dev!;
    const res = await fetch(`${env.BELFRY_URL}/v1/events`, {
      method: 'POST',
      headers: { authorization: `Bearer ${env.BELFRY_API_KEY}`, 'content-type': 'application/json' },
      body: JSON.stringify({ id: 'inline-1', destination: { url: `${env.BELFRY_ECHO_URL}/inline` }, payload: [1] }),
    });
    assert.equal(res.status, 201);
    const delivery = (await (await fetch(`${env.BELFRY_ECHO_URL}/deliveries/inline-1?wait=30s`)).json()) as {
      verified: boolean;
      path: string;
    };
    assert.deepEqual([delivery.verified, delivery.path], [true, '/inline']);
  });

  it('reuses the tenant and its key after a restart, with the echo receiver on its new port', async () => {
    const first = dev!.env;
    const tenantId = JSON.parse(readFileSync(join(dataDir, 'dev.json'), 'utf8')).tenantId;
    assert.deepEqual(await stopDev(dev!), { code: 0, signal: null });
    dev = await startDev(dataDir);
    assert.equal(dev.env.BELFRY_API_KEY, first.BELFRY_API_KEY);
    assert.equal(JSON.parse(readFileSync(join(dataDir, 'dev.json'), 'utf8')).tenantId, tenantId);
    const res = await fetch(`${dev.env.BELFRY_URL}/v1/events`, {
      method: 'POST',
      headers: { authorization: `Bearer ${dev.env.BELFRY_API_KEY}`, 'content-type': 'application/json' },
      body: JSON.stringify({ id: 'after-restart', destination: 'echo', payload: {} }),
    });
    assert.equal(res.status, 201);
    const delivery = (await (await fetch(`${dev.env.BELFRY_ECHO_URL}/deliveries/after-restart?wait=30s`)).json()) as {
      verified: boolean;
    };
    assert.equal(delivery.verified, true);
  });

  it('refuses a data dir that belfry start made, a host other than loopback, and a store other than SQLite', async () => {
    const startDir = mkdtempSync(join(tmpdir(), 'belfry-dev-start-'));
    try {
      const node = await startNodeProcess(['--data', startDir]);
      await stopNodeProcess(node);
      const refusals = [
        [['--data', startDir], /holds the data of a node that belfry start made/],
        [['--data', dataDir, '--host', '0.0.0.0'], /serves on loopback only/],
        [['--data', dataDir, '--store', 'postgres://127.0.0.1/x'], /runs on SQLite/],
      ] as const;
      for (const [args, message] of refusals) {
        const run = spawnSync(process.execPath, [BIN, 'dev', '--port', '0', '--echo-port', '0', ...args], {
          encoding: 'utf8',
          timeout: 30_000,
        });
        assert.equal(run.status, 2, `${args.join(' ')}: ${run.stderr}`);
        assert.match(run.stderr, message);
      }
      // belfry start itself never takes dev's settings.
      const refused = await runRefusedStart(['--data', startDir, '--echo-port', '0']);
      assert.equal(refused.code, 2, refused.output);
    } finally {
      rmSync(startDir, { recursive: true, force: true });
    }
  });
});
