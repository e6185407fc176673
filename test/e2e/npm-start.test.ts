/**
 * `npm start`, as the README starts Belfry and as a supervisor may run it, stops gracefully on a
 * SIGTERM sent to the npm process alone: npm passes the signal on, the node drains and logs
 * `stopped`, npm exits 0, and no process of the start is left behind (a node orphaned by a shell
 * that died of the signal would keep running, its port and data dir held).
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { describe, it } from 'node:test';
import { waitUntil } from '../support/node.ts';
import {
  descendantPids,
  listeningPort,
  NODE_START_MS_MAX,
  NODE_STOP_MS_MAX,
  processAlive,
  processArgs,
} from '../support/process.ts';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
/** npm's own start and exit come on top of the node's. */
const NPM_SLACK_MS = 15_000;

/** The JSON log records among lines of output (npm's banner lines are not JSON). */
function records(output: string[]): Record<string, unknown>[] {
  return output.flatMap((line) => {
    try {
      const record = JSON.parse(line) as unknown;
      return typeof record === 'object' && record !== null ? [record as Record<string, unknown>] : [];
    } catch {
      return [];
    }
  });
}

describe('npm start', { skip: process.platform !== 'linux' && 'reads /proc' }, () => {
  it('stops gracefully on SIGTERM sent to the npm process, leaving no process behind', {
    timeout: 90_000,
  }, async () => {
    const dataDir = await mkdtemp(join(tmpdir(), 'belfry-npm-start-'));
    const adminKey = `admin-${randomBytes(12).toString('hex')}`;
    const npm = spawn('npm', ['start', '--', '--port', '0', '--data', dataDir, '--admin-key', adminKey], {
      cwd: ROOT,
      stdio: ['ignore', 'pipe', 'pipe'],
      env: { ...process.env, npm_config_update_notifier: 'false', npm_config_fund: 'false' },
    });
    const output: string[] = [];
    const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
      npm.once('exit', (code, signal) => resolve({ code, signal })),
    );
    createInterface({ input: npm.stderr! }).on('line', (line) => output.push(line));
    const port = await new Promise<number>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error('no "listening" line')), NODE_START_MS_MAX + NPM_SLACK_MS);
      void exited.then(({ code, signal }) => reject(new Error(`npm exited before listening: ${code} ${signal}`)));
      createInterface({ input: npm.stdout! }).on('line', (line) => {
        output.push(line);
        const found = listeningPort(line);
        if (found === null) return;
        clearTimeout(timer);
        resolve(found);
      });
    });
    // Every process the start made, seen from npm: the node among them.
    const started = descendantPids(npm.pid!);
    const nodes = started.filter((pid) => processArgs(pid)?.some((a) => a.endsWith('bin/belfry.mjs')));
    try {
      assert.equal(nodes.length, 1, `one node process under npm: ${started.map((p) => processArgs(p)?.join(' '))}`);
      assert.equal((await fetch(`http://127.0.0.1:${port}/healthz`)).status, 200);

      npm.kill('SIGTERM');
      const deadline = setTimeout(() => npm.kill('SIGKILL'), NODE_STOP_MS_MAX + NPM_SLACK_MS);
      const { code, signal } = await exited;
      clearTimeout(deadline);
      const log = records(output);
      assert.deepEqual([code, signal], [0, null], `npm exited ${code} ${signal}:\n${output.slice(-20).join('\n')}`);
      const received = log.find((r) => r.msg === 'signal received');
      assert.equal(received?.signal, 'SIGTERM', output.slice(-20).join('\n'));
      assert.ok(
        log.some((r) => r.msg === 'stopped'),
        `the node logged its graceful stop:\n${output.slice(-20).join('\n')}`,
      );
      await waitUntil(
        `no process of the start left (${started.join(', ')})`,
        () => !started.some(processAlive),
        NODE_STOP_MS_MAX,
      );
      await assert.rejects(fetch(`http://127.0.0.1:${port}/healthz`), 'nothing listens on the port any more');
    } finally {
      // A process left behind by a failed run is this test's own: end it by its id.
      for (const pid of [npm.pid!, ...started]) if (processAlive(pid)) process.kill(pid, 'SIGKILL');
      await rm(dataDir, { recursive: true, force: true });
    }
  });
});
