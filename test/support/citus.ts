/**
 * A throw-away Citus cluster for tests: one coordinator and CITUS_WORKERS workers, each a
 * PostgreSQL instance of this machine's on consecutive free loopback ports, made by the shared
 * scripts' `cluster.sh start` in a temp dir of this process. startCitus() starts it once per test
 * process and answers the coordinator's URL; it is stopped (`cluster.sh stop`, which removes its
 * data) when the process exits, or on SIGINT / SIGTERM. startCitusCluster(workers) starts another
 * one of a given size, which its caller stops (the bench's `citus` scenario: 1 and 2 workers). The
 * machine's shared PostgreSQL is never touched.
 *
 * The scripts' directory: env BELFRY_CITUS_SCRIPTS, else `../shared/citus` beside the repository,
 * else /work/shared/citus (the first that holds cluster.sh). Citus itself is installed into the
 * system's PostgreSQL by that directory's install.sh (.ci/services.sh runs it).
 *
 * A test that needs Citus passes citusSkip() as its `skip` option: the reason Citus is missing
 * here, so the test is skipped with it; with env BELFRY_REQUIRE_CITUS=1 it is never skipped, and
 * startCitus() fails with that reason instead.
 */
import { execFileSync, spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import net from 'node:net';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

export const CITUS_WORKERS = 2;
/** Three initdb runs and server starts: a few seconds on an idle machine, far more on a loaded one. */
const START_MS_MAX = 180_000;
/** Tries with another base port when one was taken between the probe and the server's start. */
const START_TRIES = 3;
/** Below Linux's ephemeral range (32768+), where outgoing connections take their ports. */
const PORT_MIN = 20_000;
const PORT_SPAN = 12_000;

const REPO_ROOT = resolve(fileURLToPath(new URL('../../', import.meta.url)));

/** The directory holding cluster.sh and install.sh, or undefined when none of the places has one. */
export function citusScriptsDir(): string | undefined {
  const candidates = [
    process.env.BELFRY_CITUS_SCRIPTS,
    resolve(REPO_ROOT, '..', 'shared', 'citus'),
    '/work/shared/citus',
  ].filter((d): d is string => !!d);
  return candidates.find((d) => existsSync(join(d, 'cluster.sh')));
}

/** Why no Citus cluster can be started on this machine, or undefined when one can. */
export function citusMissing(): string | undefined {
  const scripts = citusScriptsDir();
  if (!scripts)
    return 'Citus scripts not found (cluster.sh in $BELFRY_CITUS_SCRIPTS, ../shared/citus beside the repository, or /work/shared/citus)';
  let libdir: string;
  try {
    libdir = execFileSync('pg_config', ['--pkglibdir'], { encoding: 'utf8' }).trim();
  } catch {
    return 'pg_config not found: no PostgreSQL server development files to run Citus with';
  }
  if (!existsSync(join(libdir, 'citus.so')))
    return `Citus is not installed in this PostgreSQL (${libdir}/citus.so missing): run ${join(scripts, 'install.sh')}`;
  return undefined;
}

/**
 * For node:test's `skip` option: the reason Citus is missing (the test is skipped with it), or
 * false when it is there or when env BELFRY_REQUIRE_CITUS=1 (then the test runs and startCitus
 * fails with the reason).
 */
export function citusSkip(): string | false {
  if (process.env.BELFRY_REQUIRE_CITUS === '1') return false;
  return citusMissing() ?? false;
}

/** A Citus cluster of this process, running until stop() or until the process exits. */
export interface CitusCluster {
  /** The coordinator's URL: `postgres://postgres@127.0.0.1:PORT/postgres` (trust authentication). */
  url: string;
  /** The coordinator's port; the workers listen on the next `workers` ports. */
  port: number;
  workers: number;
  /** The data dir of this cluster's instance on `port` (cluster.sh's DIR/n<port>). */
  dataDir(port: number): string;
  /** Stops the servers and removes their data; nothing when stopped already. Synchronous: runs at exit too. */
  stop(): void;
}

/** cluster.sh's DIR of each cluster this process started and has not stopped yet. */
const runningDirs = new Set<string>();
/** This process's temp dir, holding those DIRs. */
let parentDir: string | undefined;
let shared: Promise<CitusCluster> | undefined;

/**
 * The coordinator's URL (`postgres://postgres@127.0.0.1:PORT/postgres`, trust authentication) of
 * this process's Citus cluster of CITUS_WORKERS workers, started at the first call. Throws with the
 * reason when Citus is missing here (citusMissing) or the cluster did not start (with the tail of
 * the servers' logs).
 */
export async function startCitus(): Promise<string> {
  return (await sharedCluster()).url;
}

function sharedCluster(): Promise<CitusCluster> {
  shared ??= startCitusCluster(CITUS_WORKERS);
  return shared;
}

/**
 * A cluster of its own with `workers` workers, on free consecutive ports, beside any other this
 * process runs: the caller stops it (or the process's exit does). Throws as startCitus.
 */
export async function startCitusCluster(workers: number): Promise<CitusCluster> {
  const missing = citusMissing();
  if (missing) throw new Error(`cannot start a Citus cluster: ${missing}`);
  const script = join(citusScriptsDir()!, 'cluster.sh');
  // cluster.sh makes DIR's parent world-readable (chmod 755) for the postgres user: a dir of ours.
  parentDir ??= mkdtempSync(join(tmpdir(), 'belfry-citus-'));
  installStopAtExit();
  let lastError: Error | undefined;
  for (let i = 0; i < START_TRIES; i++) {
    const port = await freePortRun(workers + 1);
    const dir = join(parentDir, `c${port}`);
    runningDirs.add(dir);
    const out = await runScript(script, ['start', dir, String(port), String(workers)], START_MS_MAX);
    const url = out.stdout.trim().split('\n').pop() ?? '';
    if (out.code === 0 && url.startsWith('postgres://'))
      return { url, port, workers, dataDir: (p) => join(dir, `n${p}`), stop: () => stopCluster(dir) };
    lastError = new Error(
      `cluster.sh start ${dir} ${port} failed (exit ${out.code ?? out.signal}): ${out.stderr.trim()}\n${logTails(dir)}`,
    );
    stopCluster(dir);
  }
  throw lastError;
}

/**
 * Restarts the coordinator of this process's cluster (fast shutdown, then start, as `pg_ctl
 * restart` does with the options it was started with), without blocking this process: a test's
 * receivers keep answering meanwhile. The workers keep running.
 */
export async function restartCitusCoordinator(): Promise<void> {
  const cluster = await sharedCluster();
  const dataDir = cluster.dataDir(cluster.port);
  if (!existsSync(dataDir)) throw new Error('restartCitusCoordinator: no Citus cluster runs in this process');
  const bin = execFileSync('pg_config', ['--bindir'], { encoding: 'utf8' }).trim();
  const command = `${bin}/pg_ctl -D '${dataDir}' -m fast -w restart >/dev/null`;
  const asPostgres =
    process.getuid?.() === 0 ? ['su', 'postgres', '-s', '/bin/bash', '-c', command] : ['bash', '-c', command];
  const out = await runScript(asPostgres[0], asPostgres.slice(1), 60_000, true);
  if (out.code !== 0)
    throw new Error(`restarting the Citus coordinator failed (exit ${out.code}): ${out.stderr.trim()}`);
}

/** Stops the cluster in `dir` (its servers, then its data); nothing when it is not running. */
function stopCluster(dir: string): void {
  if (!runningDirs.delete(dir)) return;
  const scripts = citusScriptsDir();
  if (scripts) spawnSync('bash', [join(scripts, 'cluster.sh'), 'stop', dir], { stdio: 'ignore', timeout: 60_000 });
}

/** Stops every cluster and removes this process's temp dir. */
function cleanUp(): void {
  for (const dir of [...runningDirs]) stopCluster(dir);
  if (parentDir) rmSync(parentDir, { recursive: true, force: true });
  parentDir = undefined;
}

let stopInstalled = false;
function installStopAtExit(): void {
  if (stopInstalled) return;
  stopInstalled = true;
  process.once('exit', cleanUp);
  // A signal's default action would end the process without 'exit': clean up first, then die of it.
  for (const signal of ['SIGINT', 'SIGTERM'] as const) {
    process.once(signal, () => {
      cleanUp();
      process.kill(process.pid, signal);
    });
  }
}

interface ScriptResult {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

/** Runs `script` with bash (with `command`, `script` is a program run as is), without blocking this process. */
function runScript(script: string, args: string[], timeoutMs: number, command = false): Promise<ScriptResult> {
  return new Promise((resolveRun) => {
    const [file, argv] = command ? [script, args] : ['bash', [script, ...args]];
    const child = spawn(file, argv, { stdio: ['ignore', 'pipe', 'pipe'], timeout: timeoutMs });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    child.on('error', (err) => resolveRun({ code: null, signal: null, stdout, stderr: `${stderr}${err.message}` }));
    child.on('close', (code, signal) => resolveRun({ code, signal, stdout, stderr }));
  });
}

/** The last lines of each server's log in `dir` (cluster.sh writes DIR/nPORT.log), for an error. */
function logTails(dir: string): string {
  if (!existsSync(dir)) return '';
  return readdirSync(dir)
    .filter((f) => f.endsWith('.log'))
    .map((f) => {
      const lines = readFileSync(join(dir, f), 'utf8').trimEnd().split('\n');
      return `--- ${f}\n${lines.slice(-10).join('\n')}`;
    })
    .join('\n');
}

/** The first of `count` consecutive loopback ports that are all free now, from a random base. */
async function freePortRun(count: number): Promise<number> {
  for (;;) {
    const base = PORT_MIN + Math.floor(Math.random() * (PORT_SPAN - count));
    let free = true;
    for (let p = base; p < base + count && free; p++) free = await portFree(p);
    if (free) return base;
  }
}

function portFree(port: number): Promise<boolean> {
  return new Promise((resolveFree) => {
    const server = net.createServer();
    server.once('error', () => resolveFree(false));
    server.listen({ host: '127.0.0.1', port, exclusive: true }, () => server.close(() => resolveFree(true)));
  });
}
