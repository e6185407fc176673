/**
 * The data dir holds secrets (tenants' signing secrets, broker passwords, the admin key): a real
 * node process started with umask 000 makes the dir 0700 and every file in it 0600 (database,
 * WAL, shared memory, lock, admin key); and a data dir left world-readable (an older version's
 * 0755/0644, a file an operator added) is tightened at start, each change logged.
 */
import { after, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { chmodSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { callApi as api } from '../support/http.ts';
import { killNodeProcess, startNodeProcess, stopNodeProcess, type NodeProcess } from '../support/process.ts';

/** Every file a running SQLite node keeps in its data dir. */
const EXPECTED_FILES = ['admin.key', 'belfry.db', 'belfry.db-shm', 'belfry.db-wal', 'belfry.lock.db'];

const modeOf = (path: string): string => '0' + (statSync(path).mode & 0o7777).toString(8);

/** Each entry of `dir` with its mode, and the dir's own under '.'. */
function modes(dir: string): Record<string, string> {
  const out: Record<string, string> = { '.': modeOf(dir) };
  for (const name of readdirSync(dir)) out[name] = modeOf(join(dir, name));
  return out;
}

/** Starts a node with the process umask set to `umask` (the child inherits it), then puts ours back. */
async function startWithUmask(umask: number, dataDir: string): Promise<NodeProcess> {
  const previous = process.umask(umask);
  try {
    return await startNodeProcess(['--data', dataDir, '--allow-hosts', '127.0.0.1']);
  } finally {
    process.umask(previous);
  }
}

describe('data dir modes with a real node process', () => {
  const parent = mkdtempSync(join(tmpdir(), 'belfry-e2e-modes-'));
  // Not yet there: the node creates it.
  const dataDir = join(parent, 'data');
  let node: NodeProcess | undefined;
  after(async () => {
    if (node) await killNodeProcess(node);
    rmSync(parent, { recursive: true, force: true });
  });

  it('under umask 000, creates the dir 0700 and every file 0600', async () => {
    node = await startWithUmask(0o000, dataDir);
    const adminKey = readFileSync(join(dataDir, 'admin.key'), 'utf8').trim();
    // Writes, so the WAL and the shared memory are in use.
    const tenant = await api(node.url, adminKey, 'POST', '/v1/tenants', { name: 'modes' });
    assert.equal(tenant.status, 201);
    const seen = modes(dataDir);
    for (const name of EXPECTED_FILES) assert.ok(name in seen, `${name} is in the data dir (${JSON.stringify(seen)})`);
    assert.deepEqual(
      seen,
      Object.fromEntries([
        ['.', '0700'],
        ...Object.keys(seen)
          .filter((n) => n !== '.')
          .map((n) => [n, '0600']),
      ]),
    );
    const stopped = await stopNodeProcess(node);
    assert.equal(stopped.code, 0);
    node = undefined;
  });

  it('tightens a world-readable data dir at start and logs each change', async () => {
    chmodSync(dataDir, 0o755);
    for (const name of readdirSync(dataDir)) chmodSync(join(dataDir, name), 0o644);
    writeFileSync(join(dataDir, 'operator-notes.txt'), 'left here by hand\n');
    chmodSync(join(dataDir, 'operator-notes.txt'), 0o666);
    const loosened = readdirSync(dataDir);

    node = await startWithUmask(0o000, dataDir);
    const seen = modes(dataDir);
    assert.equal(seen['.'], '0700');
    for (const [name, mode] of Object.entries(seen)) if (name !== '.') assert.equal(mode, '0600', `${name} is ${mode}`);
    const logged = node.output
      .join('')
      .split('\n')
      .filter((line) => line.includes('tightened the mode of a data-dir entry'))
      .map((line) => JSON.parse(line) as { path: string; from: string; to: string });
    const byPath = new Map(logged.map((l) => [l.path, l]));
    assert.deepEqual(byPath.get(dataDir), { ...byPath.get(dataDir), from: '0755', to: '0700' });
    for (const name of loosened) {
      const from = name === 'operator-notes.txt' ? '0666' : '0644';
      assert.deepEqual(
        byPath.get(join(dataDir, name)),
        { ...byPath.get(join(dataDir, name)), from, to: '0600' },
        `${name}'s change is logged`,
      );
    }
  });
});
