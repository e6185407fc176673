/**
 * The SQLite data-dir lock with real processes:
 * - a node killed with SIGKILL and left unreaped (a zombie, as under a parent that never waits,
 *   e.g. node as pid 1 in a container) does not keep the lock: a new node starts on its dir at
 *   once (no pid is compared, so a zombie's or a reused pid cannot block it);
 * - a second live node on the same dir fails at once with an error naming the dir.
 */
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { after, describe, it } from 'node:test';
import {
  BIN,
  killNodeProcess,
  listeningPort,
  NODE_START_MS_MAX,
  startNodeProcess,
  type NodeProcess,
} from '../support/process.ts';

const ADMIN_KEY = 'e2e-admin-key-0123456789abcdef';
/** How long the non-reaping parent lives at most, should the test die before killing it. */
const PARENT_LIFETIME_S_MAX = 120;
/** Bound on the wait for the kernel to turn the killed node into a zombie. */
const ZOMBIE_WAIT_MS_MAX = 5_000;
/** "At once": a refused start is only node and tsx starting up, not a wait on the lock. */
const REFUSAL_MS_MAX = 15_000;

function nodeArgs(dataDir: string): string[] {
  return ['--data', dataDir, '--admin-key', ADMIN_KEY];
}

interface Orphaned {
  /** The parent that never reaps: `sleep`, exec'd by the shell that started the node. */
  parent: ChildProcess;
  nodePid: number;
}

/**
 * Starts a Belfry node as the child of a process that never waits for its children (the shell
 * execs `sleep`), and resolves once the node listens, with the node's pid.
 */
async function startUnreapedNode(dataDir: string): Promise<Orphaned> {
  const script = `"$@" & echo "pid $!"; exec sleep ${PARENT_LIFETIME_S_MAX}`;
  const parent = spawn(
    'sh',
    ['-c', script, 'sh', process.execPath, BIN, 'start', '--port', '0', ...nodeArgs(dataDir)],
    {
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  );
  const output: string[] = [];
  parent.stderr!.on('data', (chunk: Buffer) => output.push(chunk.toString()));
  const lines = createInterface({ input: parent.stdout! });
  let nodePid = 0;
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(
      () => reject(new Error(`node did not listen within ${NODE_START_MS_MAX}ms:\n${output.join('')}`)),
      NODE_START_MS_MAX,
    );
    lines.on('line', (line) => {
      output.push(line + '\n');
      const pid = /^pid (\d+)$/.exec(line);
      if (pid) nodePid = Number(pid[1]);
      if (listeningPort(line) === null) return;
      clearTimeout(timer);
      resolve();
    });
  }).catch((err: unknown) => {
    parent.kill('SIGKILL');
    throw err;
  });
  assert.ok(nodePid > 0, 'the shell printed the node pid');
  return { parent, nodePid };
}

/** The process state letter from /proc (R, S, Z, ...), or null once it is gone. */
function procState(pid: number): string | null {
  try {
    // /proc/<pid>/stat: "pid (comm) state ..."; comm may hold spaces, so read after the last ')'.
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3);
  } catch {
    return null;
  }
}

async function waitForZombie(pid: number): Promise<void> {
  const deadlineMs = performance.now() + ZOMBIE_WAIT_MS_MAX;
  while (procState(pid) !== 'Z') {
    if (performance.now() > deadlineMs)
      throw new Error(`pid ${pid} is in state ${procState(pid)}, not a zombie, after ${ZOMBIE_WAIT_MS_MAX}ms`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

/** Starts `belfry start` expecting it to fail; resolves with its exit code, output and duration. */
async function startRefused(dataDir: string): Promise<{ code: number | null; output: string; elapsedMs: number }> {
  const startedMs = performance.now();
  const child = spawn(process.execPath, [BIN, 'start', '--port', '0', ...nodeArgs(dataDir)], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout!.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.stderr!.on('data', (chunk: Buffer) => (output += chunk.toString()));
  const timer = setTimeout(() => child.kill('SIGKILL'), REFUSAL_MS_MAX);
  const code = await new Promise<number | null>((resolve) => child.once('exit', (c) => resolve(c)));
  clearTimeout(timer);
  return { code, output, elapsedMs: performance.now() - startedMs };
}

describe('data-dir lock with real processes', () => {
  const dataDir = mkdtempSync(join(tmpdir(), 'belfry-e2e-lock-'));
  let orphaned: Orphaned | undefined;
  let node: NodeProcess | undefined;
  after(async () => {
    if (node) await killNodeProcess(node);
    if (orphaned && orphaned.parent.exitCode === null && orphaned.parent.signalCode === null) {
      orphaned.parent.kill('SIGKILL');
      await new Promise((resolve) => orphaned!.parent.once('exit', resolve));
    }
    rmSync(dataDir, { recursive: true, force: true });
  });

  it('restarts at once after SIGKILL while the dead node is an unreaped zombie', async () => {
    orphaned = await startUnreapedNode(dataDir);
    process.kill(orphaned.nodePid, 'SIGKILL');
    await waitForZombie(orphaned.nodePid);
    node = await startNodeProcess(nodeArgs(dataDir));
    assert.equal(procState(orphaned.nodePid), 'Z', 'the dead node was still a zombie while the new one started');
  });

  it('refuses a second live node on the same dir at once, naming the dir', async () => {
    const refused = await startRefused(dataDir);
    assert.equal(refused.code, 1, refused.output);
    assert.ok(refused.output.includes(`data dir ${dataDir} is in use by another process`), refused.output);
    assert.ok(refused.elapsedMs < REFUSAL_MS_MAX, `took ${Math.round(refused.elapsedMs)}ms`);
  });
});
