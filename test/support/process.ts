/** Real Belfry node processes for end-to-end tests: start, wait for "listening", SIGTERM or SIGKILL. */
import { spawn, type ChildProcess } from 'node:child_process';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';

/**
 * The `belfry` executable, which runs the compiled code in dist/. Refuses (at import) when dist/ is
 * missing or older than a source file, so a test never runs yesterday's build: `npm test` builds
 * first; a test file run alone needs `npm run build` after a change to src/.
 */
export const BIN = builtBin();

function builtBin(): string {
  /** The sources `npm run build` compiles: the SDK's (which the server imports) and the server's. */
  const sources = ['../../packages/client/src', '../../src'].map((dir) => fileURLToPath(new URL(dir, import.meta.url)));
  const built = fileURLToPath(new URL('../../dist/cli/main.js', import.meta.url));
  let builtMs: number;
  try {
    builtMs = statSync(built).mtimeMs;
  } catch {
    throw new Error('dist/ is not built: run `npm run build` (npm test builds first)');
  }
  for (const dir of sources) {
    for (const entry of readdirSync(dir, { recursive: true, withFileTypes: true })) {
      if (!entry.isFile() || entry.name.endsWith('.test.ts')) continue;
      const file = `${entry.parentPath}/${entry.name}`;
      if (statSync(file).mtimeMs > builtMs) {
        throw new Error(`dist/ is older than ${file}: run \`npm run build\` (npm test builds first)`);
      }
    }
  }
  return fileURLToPath(new URL('../../bin/belfry.mjs', import.meta.url));
}

/** Bounds on every wait: a node that cannot start or stop fails the test instead of hanging it. */
export const NODE_START_MS_MAX = 30_000;
export const NODE_STOP_MS_MAX = 15_000;

export interface NodeProcess {
  child: ChildProcess;
  url: string;
  port: number;
  /** Every line the process wrote (stdout and stderr). */
  output: string[];
  /** Resolves with the exit code (null when killed by a signal) and signal. */
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

/**
 * Node's own flags for every node process started here, from BELFRY_NODE_FLAGS (space-separated),
 * e.g. `BELFRY_NODE_FLAGS='--cpu-prof --cpu-prof-dir=/tmp/prof' npm run bench -- fire` to profile
 * the node (Node refuses --cpu-prof in NODE_OPTIONS).
 */
const NODE_FLAGS = (process.env.BELFRY_NODE_FLAGS ?? '').split(' ').filter((f) => f !== '');

/** Starts `belfry start <args>` and resolves once it logs the port it listens on, or rejects at the deadline. */
export async function startNodeProcess(args: string[], env: Record<string, string> = {}): Promise<NodeProcess> {
  const child = spawn(process.execPath, [...NODE_FLAGS, BIN, 'start', '--port', '0', ...args], {
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { ...process.env, ...env },
  });
  const output: string[] = [];
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.once('exit', (code, signal) => resolve({ code, signal })),
  );
  child.stderr!.on('data', (chunk: Buffer) => output.push(chunk.toString()));
  const lines = createInterface({ input: child.stdout! });
  const port = await new Promise<number>((resolve, reject) => {
    const timer = setTimeout(
      () => reject(new Error(`node did not log "listening" within ${NODE_START_MS_MAX}ms`)),
      NODE_START_MS_MAX,
    );
    void exited.then(({ code, signal }) => {
      clearTimeout(timer);
      reject(
        new Error(`node exited before listening (code ${code}, signal ${signal}):\n${output.join('').slice(-2000)}`),
      );
    });
    lines.on('line', (line) => {
      output.push(line + '\n');
      const port = listeningPort(line);
      if (port === null) return;
      clearTimeout(timer);
      resolve(port);
    });
  }).catch((error: unknown) => {
    child.kill('SIGKILL');
    throw error;
  });
  return { child, url: `http://127.0.0.1:${port}`, port, output, exited };
}

/** The port of a pino line whose msg is "listening", else null. */
export function listeningPort(line: string): number | null {
  let record: unknown;
  try {
    record = JSON.parse(line);
  } catch {
    return null;
  }
  const { msg, port } = (record ?? {}) as { msg?: unknown; port?: unknown };
  return typeof msg === 'string' && msg.includes('listening') && typeof port === 'number' ? port : null;
}

/** SIGTERM, then SIGKILL if the process has not exited by the deadline. Resolves with how it exited. */
export async function stopNodeProcess(
  node: NodeProcess,
  deadlineMs = NODE_STOP_MS_MAX,
): Promise<{ code: number | null; signal: NodeJS.Signals | null }> {
  const { child } = node;
  if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
  const timer = setTimeout(() => child.kill('SIGKILL'), deadlineMs);
  const result = await node.exited;
  clearTimeout(timer);
  return result;
}

/** SIGKILL, and wait until the process is gone. */
export async function killNodeProcess(node: NodeProcess): Promise<void> {
  if (node.child.exitCode === null && node.child.signalCode === null) node.child.kill('SIGKILL');
  await node.exited;
}

/** How long a start that must be refused may take before it is killed (and the test fails). */
export const REFUSAL_MS_MAX = 15_000;

/**
 * Runs `belfry start <args>`, expecting it to refuse and exit: its exit code, signal (SIGKILL when
 * it was still running after REFUSAL_MS_MAX), everything it wrote and how long it ran.
 */
export async function runRefusedStart(
  args: string[],
): Promise<{ code: number | null; signal: string | null; output: string; elapsedMs: number }> {
  const startedMs = performance.now();
  const child = spawn(process.execPath, [BIN, 'start', ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  child.stdout!.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.stderr!.on('data', (chunk: Buffer) => (output += chunk.toString()));
  const timer = setTimeout(() => child.kill('SIGKILL'), REFUSAL_MS_MAX);
  const { code, signal } = await new Promise<{ code: number | null; signal: string | null }>((resolve) =>
    child.once('exit', (c, s) => resolve({ code: c, signal: s })),
  );
  clearTimeout(timer);
  return { code, signal, output, elapsedMs: performance.now() - startedMs };
}

/** State and parent of a live process from /proc (Linux), or null when it is gone or a zombie. */
function procStat(pid: number): { ppid: number; state: string } | null {
  let stat: string;
  try {
    stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  } catch {
    return null;
  }
  // "pid (comm) state ppid ...": comm may hold spaces and parentheses, so read after the last ')'.
  const [state, ppid] = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return state === 'Z' || state === 'X' ? null : { ppid: Number(ppid), state };
}

/** Whether a process is alive (Linux: not gone, not a zombie waiting to be reaped). */
export function processAlive(pid: number): boolean {
  return procStat(pid) !== null;
}

/** Every live process below `pid` (children, their children, ...), from /proc (Linux). */
export function descendantPids(pid: number): number[] {
  const parents = new Map<number, number>();
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    const stat = procStat(Number(entry));
    if (stat) parents.set(Number(entry), stat.ppid);
  }
  const found: number[] = [];
  const walk = (parent: number) => {
    for (const [child, ppid] of parents) {
      if (ppid !== parent) continue;
      found.push(child);
      walk(child);
    }
  };
  walk(pid);
  return found;
}

/** The command line of a live process (its arguments), or null (Linux). */
export function processArgs(pid: number): string[] | null {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, 'utf8')
      .split('\0')
      .filter((a) => a !== '');
  } catch {
    return null;
  }
}
