/**
 * A damaged database file is found at start: a real node process on a real SQLite file whose
 * pages were overwritten with garbage refuses to start, at once, with a message naming the file
 * and what PRAGMA quick_check found, and a non-zero exit; it never listens. The same for a file
 * whose first page (the header) is garbage. And the check is bounded: past its deadline the child
 * running it is killed and the check reports it timed out.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { closeSync, cpSync, existsSync, mkdtempSync, openSync, rmSync, statSync, writeSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { SQLITE_FILE_NAME_DEFAULT, openSqliteStore } from '../../src/store/sqlite/sqlite-store.ts';
import { checkIntegrity, DamagedDatabaseError } from '../../src/store/sqlite/integrity-check.ts';
import { REFUSAL_MS_MAX, runRefusedStart } from '../support/process.ts';

const ADMIN_KEY = 'e2e-admin-key-0123456789abcdef';
const PAGE_BYTES = 4096;
/** Enough events for a file of a few MB, most of it b-tree pages of events and their indexes. */
const EVENTS = 20_000;
const GARBAGE_PAGES = 8;
/** "At once": node starting, the check (a few MB), the refusal. */

/** Writes a sound store file of EVENTS events in `dataDir`, closed and checkpointed (no WAL left). */
async function writeStore(dataDir: string): Promise<string> {
  const store = await openSqliteStore({ dataDir });
  const t0 = Date.UTC(2030, 0, 1);
  await store.tenantCreate({ id: 't', name: 't', settings: {}, createdAt: t0 });
  for (let b = 0; b < EVENTS; b += 1_000) {
    const events = Array.from({ length: 1_000 }, (_, i) => ({
      tenantId: 't',
      id: `e-${b + i}`,
      shard: (b + i) % 256,
      fireAt: t0 + b + i,
      destination: { name: 'rx' },
      payload: JSON.stringify({ n: b + i, note: 'an ordinary payload' }),
      headers: {},
      group: null,
      retry: null,
      expireAt: null,
      tags: {},
      requestHash: `h-${b + i}`,
    }));
    await store.eventInsertMany({ events, now: t0 });
  }
  await store.close();
  const file = join(dataDir, SQLITE_FILE_NAME_DEFAULT);
  assert.ok(!existsSync(`${file}-wal`), 'the WAL was checkpointed into the file on close');
  return file;
}

/** Overwrites `count` pages of `file` from page `first` (0-based) with random bytes. */
function garble(file: string, first: number, count: number): void {
  const fd = openSync(file, 'r+');
  try {
    writeSync(fd, randomBytes(count * PAGE_BYTES), 0, count * PAGE_BYTES, first * PAGE_BYTES);
  } finally {
    closeSync(fd);
  }
}

/** Runs `belfry start` on `dataDir`, expecting it to refuse; its exit code, output and duration. */
function startRefused(dataDir: string) {
  return runRefusedStart(['--port', '0', '--data', dataDir, '--admin-key', ADMIN_KEY]);
}

describe('a damaged database file at start (real file, real node process)', () => {
  const root = mkdtempSync(join(tmpdir(), 'belfry-e2e-damaged-'));
  const sound = join(root, 'sound');
  let soundFile: string;
  before(async () => {
    soundFile = await writeStore(sound);
  });
  after(() => rmSync(root, { recursive: true, force: true }));

  /** A copy of the sound data dir, for one case to damage. */
  const copy = (name: string): { dir: string; file: string } => {
    const dir = join(root, name);
    cpSync(sound, dir, { recursive: true });
    return { dir, file: join(dir, SQLITE_FILE_NAME_DEFAULT) };
  };

  it('pages in the middle overwritten with garbage: refuses to start, naming the file and the damage, exit non-zero', async () => {
    const { dir, file } = copy('middle');
    const pages = statSync(file).size / PAGE_BYTES;
    garble(file, Math.floor(pages / 2), GARBAGE_PAGES);
    const refused = await startRefused(dir);
    assert.equal(refused.signal, null, `still running after ${REFUSAL_MS_MAX} ms\n${refused.output.slice(-2000)}`);
    assert.equal(refused.code, 1, refused.output.slice(-2000));
    assert.ok(
      refused.output.includes(`the database file ${file} is damaged (PRAGMA quick_check: `),
      refused.output.slice(-2000),
    );
    assert.ok(!refused.output.includes('"msg":"listening"'), 'it never listened');
    console.log(
      `damaged pages ${Math.floor(pages / 2)}..${Math.floor(pages / 2) + GARBAGE_PAGES - 1} of ${pages}: refused in ${Math.round(refused.elapsedMs)} ms: ${refused.output.split('\n').find((l) => l.startsWith('error: '))}`,
    );
  });

  it('the header page overwritten with garbage: refuses to start the same way', async () => {
    const { dir, file } = copy('header');
    garble(file, 0, 1);
    const refused = await startRefused(dir);
    assert.equal(refused.code, 1, refused.output.slice(-2000));
    assert.ok(refused.output.includes(`the database file ${file} is damaged`), refused.output.slice(-2000));
    assert.match(refused.output, /SQLITE_NOTADB/);
  });

  it('the check is bounded: past its deadline its child is killed and it reports timed_out; a sound file checks ok', async () => {
    assert.equal((await checkIntegrity(soundFile, 20_000)).status, 'ok');
    const startedMs = performance.now();
    const late = await checkIntegrity(soundFile, 1);
    assert.equal(late.status, 'timed_out');
    assert.ok(performance.now() - startedMs < 5_000, 'the killed check did not hold the caller');
    // And damage is an error of its own kind, which the node's start reports as it is.
    const { file } = copy('typed');
    garble(file, 0, 1);
    await assert.rejects(checkIntegrity(file, 20_000), DamagedDatabaseError);
  });
});
