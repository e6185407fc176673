/**
 * The README, tried as a new user would: its shell blocks run in order on a clean clone of this
 * repository's committed HEAD (git clone), the quick start's event reaches `belfry dev`'s echo
 * receiver, and every command the test does not run is listed with the reason its mark gives.
 *
 * The clone gets this checkout's node_modules as a symlink (a full `npm install` per run takes
 * minutes), then the root package's install scripts that `npm install` would run. Commands run
 * as written; what differs from a user's machine comes through the environment only:
 *   - BELFRY_PORT=0 and BELFRY_DEV_ECHO_PORT=0: every node and echo receiver picks a free port;
 *   - CURL_HOME holds a .curlrc that sends localhost:7070 and 127.0.0.1:7070 to the running node
 *     and :7071 to the echo receiver (`connect-to`), and makes an HTTP error a failed command
 *     (`fail-with-body`);
 *   - BELFRY_URL names the running node, for the CLI;
 *   - PATH starts with this test's Node and a `belfry` that runs the clone's bin/belfry.mjs (as
 *     `npm install -g` would), and npm runs offline.
 * Each run block is one `bash -e -o pipefail` script; variables it sets (`set -a`) carry to the next.
 */
import assert from 'node:assert/strict';
import { execFileSync, spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { describe, it } from 'node:test';
import { REPLACED_COMMANDS, shellBlocks, type ShellBlock } from '../support/readme-blocks.ts';
import { waitUntil } from '../support/node.ts';
import { listeningPort, NODE_START_MS_MAX, NODE_STOP_MS_MAX } from '../support/process.ts';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
/** A run block's bound: its slowest command waits 30 s for a delivery. */
const BLOCK_MS_MAX = 90_000;
/** A background server's start: npm's own start comes on top of the node's. */
const BACKGROUND_START_MS_MAX = NODE_START_MS_MAX + 15_000;

interface Background {
  child: ChildProcess;
  output: string[];
  exited: Promise<unknown>;
  /** The node's URL and, for `belfry dev`, the echo receiver's. */
  url: string;
  echoUrl?: string;
}

describe('the README', () => {
  it('marks every shell block: run, background, or skip with a reason', () => {
    const blocks = shellBlocks(readFileSync(join(ROOT, 'README.md'), 'utf8'));
    assert.ok(blocks.length >= 6, `${blocks.length} shell blocks`);
    // The first example runs: it starts belfry dev, then schedules to its receiver.
    const firstRun = blocks.findIndex((b) => b.mode !== 'skip');
    assert.equal(blocks[firstRun].mode, 'background');
    assert.match(blocks[firstRun].text, /npm run dev/);
  });

  it('runs on a clean clone: every command succeeds, the first event reaches the echo receiver', {
    timeout: 300_000,
  }, async (t) => {
    for (const tool of ['curl', 'jq', 'git'])
      assert.equal(
        spawnSync(tool, ['--version'], { stdio: 'ignore' }).status,
        0,
        `the README's commands and this test need ${tool} (apt-get install ${tool})`,
      );
    const work = mkdtempSync(join(tmpdir(), 'belfry-readme-'));
    const clone = join(work, 'belfry');
    const env = sessionEnv(work, clone);
    let server: Background | null = null;
    let dev: Background | null = null;
    const timings: string[] = [];
    try {
      cleanClone(clone, env);
      const blocks = shellBlocks(readFileSync(join(clone, 'README.md'), 'utf8'));
      for (const block of blocks) {
        if (block.mode === 'skip') continue;
        const startedMs = performance.now();
        if (block.mode === 'background') {
          if (server) await stopBackground(server);
          server = await startBackground(block, clone, env);
          if (server.echoUrl) dev = server;
        } else {
          await runBlock(block, clone, env);
        }
        writeCurlrc(env, server);
        timings.push(
          `README line ${block.line} (${block.mode}): ${((performance.now() - startedMs) / 1000).toFixed(1)} s`,
        );
      }
      // The blocks reached the node through the substitutions: what the API block made is there.
      const check = { line: 0, mode: 'run', text: 'curl -s localhost:7070/v1/schedules/daily-report -H "$H"' } as const;
      assert.match(await runBlock(check, clone, env), /"id":"daily-report"/);
      assert.ok(dev, 'the README started belfry dev');
      assert.ok(
        dev.output.some((l) => /^echo \S+ {2}hello-1 {2}signature ok {2}\{"hello":"belfry"\}$/.test(l)),
        `belfry dev printed the delivery of hello-1:\n${dev.output.join('\n')}`,
      );
      for (const line of [...notRun(blocks), 'took:', ...timings]) t.diagnostic(line);
    } finally {
      if (server) await stopBackground(server);
      rmSync(work, { recursive: true, force: true });
    }
  });
});

/** The commands of the README this test does not run as written, each with its reason: one line each. */
function notRun(blocks: ShellBlock[]): string[] {
  const lines = ['not run as written:'];
  for (const b of blocks) {
    if (b.mode === 'skip') {
      lines.push(`README line ${b.line}, the whole block: ${b.reason}`);
      for (const command of commandLines(b.text)) lines.push(`  ${command}`);
    } else
      for (const [command, instead] of REPLACED_COMMANDS)
        if (b.text.split('\n').some((l) => l.trim() === command))
          lines.push(`README line ${b.line}: ${command}: ${instead}`);
  }
  return lines;
}

/** The first line of each command of a block (no comments, no continuation lines), shortened. */
function commandLines(text: string): string[] {
  return text
    .split('\n')
    .filter((l) => /^[a-z]/i.test(l))
    .map((l) => (l.length > 110 ? `${l.slice(0, 110)}…` : l));
}

/** The environment every block runs in: see the header of this file. */
function sessionEnv(work: string, clone: string): NodeJS.ProcessEnv {
  const bin = join(work, 'bin');
  mkdirSync(bin);
  writeFileSync(join(bin, 'belfry'), `#!/bin/sh\nexec node ${JSON.stringify(join(clone, 'bin/belfry.mjs'))} "$@"\n`, {
    mode: 0o755,
  });
  const env: NodeJS.ProcessEnv = { ...process.env };
  for (const name of Object.keys(env)) if (name.startsWith('BELFRY_')) delete env[name];
  return {
    ...env,
    PATH: [dirname(process.execPath), bin, process.env.PATH].join(':'),
    BELFRY_PORT: '0',
    BELFRY_DEV_ECHO_PORT: '0',
    CURL_HOME: work,
    npm_config_offline: 'true',
    npm_config_update_notifier: 'false',
    npm_config_fund: 'false',
    npm_config_audit: 'false',
    README_STATE: join(work, 'state.sh'),
  };
}

/** git clone of the committed HEAD, node_modules linked, the root package's install scripts run. */
function cleanClone(clone: string, env: NodeJS.ProcessEnv): void {
  const head = execFileSync('git', ['-C', ROOT, 'rev-parse', 'HEAD'], { encoding: 'utf8' }).trim();
  execFileSync('git', ['clone', '--quiet', '--no-checkout', ROOT, clone]);
  execFileSync('git', ['-C', clone, 'checkout', '--quiet', '--detach', head]);
  symlinkSync(join(ROOT, 'node_modules'), join(clone, 'node_modules'));
  const scripts = (
    JSON.parse(readFileSync(join(clone, 'package.json'), 'utf8')) as { scripts?: Record<string, string> }
  ).scripts;
  for (const name of ['preinstall', 'install', 'postinstall', 'prepare'])
    if (scripts?.[name]) execFileSync('npm', ['run', name], { cwd: clone, env, stdio: 'pipe' });
  writeFileSync(env.README_STATE!, '');
  writeCurlrc(env, null);
}

/**
 * The block as a script: the variables of the run blocks before, the test's substitutions over
 * them, the block's lines (those REPLACED_COMMANDS names left out), then its variables saved. A
 * background block runs in a terminal of its own, as the README says (a server in one, commands in
 * another): without the run blocks' variables, and saving none.
 */
function script(block: ShellBlock, env: NodeJS.ProcessEnv): string {
  const lines = block.text.split('\n').filter((l) => !REPLACED_COMMANDS.has(l.trim()));
  const substituted = ['BELFRY_PORT', 'BELFRY_DEV_ECHO_PORT', 'BELFRY_URL', 'CURL_HOME', 'PATH']
    .filter((name) => env[name] !== undefined)
    .map((name) => `export ${name}=${shellQuote(env[name]!)}`);
  if (block.mode === 'background') return [...substituted, ...lines].join('\n');
  return ['set -a', '. "$README_STATE"', ...substituted, ...lines, 'export -p > "$README_STATE"'].join('\n');
}

function shellQuote(value: string): string {
  return `'${value.replaceAll("'", `'\\''`)}'`;
}

/** Runs a block; resolves with what it printed. */
async function runBlock(block: ShellBlock, clone: string, env: NodeJS.ProcessEnv): Promise<string> {
  const child = spawn('bash', ['-e', '-o', 'pipefail', '-c', script(block, env)], {
    cwd: clone,
    env,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout!.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.stderr!.on('data', (chunk: Buffer) => (output += chunk.toString()));
  const timer = setTimeout(() => child.kill('SIGKILL'), BLOCK_MS_MAX);
  const [code, signal] = await new Promise<[number | null, string | null]>((resolve) =>
    child.once('exit', (c, s) => resolve([c, s])),
  );
  clearTimeout(timer);
  assert.equal(
    code,
    0,
    `README line ${block.line} failed (exit ${code}, signal ${signal}):\n${block.text}\n---\n${output}`,
  );
  return output;
}

/**
 * Starts a background block in a process group of its own and waits until it serves: a node's
 * "listening" log line (npm start), or belfry dev's "Ready" line (then its dev.env names its URLs).
 */
async function startBackground(block: ShellBlock, clone: string, env: NodeJS.ProcessEnv): Promise<Background> {
  const child = spawn('bash', ['-e', '-c', script(block, env)], {
    cwd: clone,
    env,
    stdio: ['ignore', 'pipe', 'pipe'],
    detached: true,
  });
  const output: string[] = [];
  const exited = new Promise((resolve) => child.once('exit', resolve));
  createInterface({ input: child.stderr! }).on('line', (line) => output.push(line));
  const lines = createInterface({ input: child.stdout! });
  const server = await new Promise<Background>((resolve, reject) => {
    const timer = setTimeout(
      () => reject(new Error(`README line ${block.line} did not become ready:\n${output.join('\n')}`)),
      BACKGROUND_START_MS_MAX,
    );
    void exited.then(() => reject(new Error(`README line ${block.line} exited:\n${output.join('\n')}`)));
    lines.on('line', (line) => {
      output.push(line);
      const port = listeningPort(line);
      if (port !== null) {
        clearTimeout(timer);
        resolve({ child, output, exited, url: `http://127.0.0.1:${port}` });
      } else if (line.startsWith('Ready:')) {
        clearTimeout(timer);
        const vars = devEnv(join(clone, 'belfry-dev', 'dev.env'));
        resolve({ child, output, exited, url: vars.BELFRY_URL, echoUrl: vars.BELFRY_ECHO_URL });
      }
    });
  }).catch(async (error: unknown) => {
    killGroup(child, 'SIGKILL');
    throw error;
  });
  env.BELFRY_URL = server.url;
  return server;
}

/** The variables a dev.env exports. */
function devEnv(file: string): Record<string, string> {
  assert.ok(existsSync(file), `${file} exists once belfry dev is ready`);
  const vars: Record<string, string> = {};
  for (const m of readFileSync(file, 'utf8').matchAll(/^export (\w+)='([^']*)'$/gm)) vars[m[1]] = m[2];
  return vars;
}

/** Ctrl-C in the server's terminal: SIGTERM to its group, SIGKILL past the deadline. */
async function stopBackground(server: Background): Promise<void> {
  if (server.child.exitCode !== null || server.child.signalCode !== null) return;
  killGroup(server.child, 'SIGTERM');
  const timer = setTimeout(() => killGroup(server.child, 'SIGKILL'), NODE_STOP_MS_MAX);
  await server.exited;
  clearTimeout(timer);
  // The node under npm exits after npm's shell; the port is free once nothing answers on it.
  await waitUntil(
    `nothing serving at ${server.url}`,
    () =>
      fetch(`${server.url}/healthz`).then(
        () => false,
        () => true,
      ),
    NODE_STOP_MS_MAX,
  );
}

function killGroup(child: ChildProcess, signal: NodeJS.Signals): void {
  try {
    process.kill(-child.pid!, signal);
  } catch {
    // The group is gone.
  }
}

/** The .curlrc of the session: the README's addresses sent to the running node and echo receiver. */
function writeCurlrc(env: NodeJS.ProcessEnv, server: Background | null): void {
  const lines = ['fail-with-body', 'silent', 'show-error', 'max-time = 60'];
  const to = (from: string, url: string | undefined) => {
    if (!url) return;
    const { hostname, port } = new URL(url);
    for (const host of ['localhost', '127.0.0.1']) lines.push(`connect-to = ${host}:${from}:${hostname}:${port}`);
  };
  to('7070', server?.url);
  to('7071', server?.echoUrl);
  writeFileSync(join(env.CURL_HOME!, '.curlrc'), lines.join('\n') + '\n');
}
