/**
 * The SQLite backend against the Store conformance suite (a fresh file in a fresh temp dir per
 * store), plus what only this backend has: the data-dir lock, the file on disk, its pragmas.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { runStoreConformance } from '../conformance/store-conformance.ts';
import { LOCK_FILE_NAME } from './data-dir-lock.ts';
import { openSqliteStore } from './sqlite-store.ts';

const dirs: string[] = [];
function tempDir(): string {
  const dir = mkdtempSync(join(tmpdir(), 'belfry-test-'));
  dirs.push(dir);
  return dir;
}
after(() => {
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

runStoreConformance('sqlite', async () => {
  const dataDir = tempDir();
  const store = await openSqliteStore({ dataDir });
  return {
    store,
    cleanup: async () => {
      await store.close();
      rmSync(dataDir, { recursive: true, force: true });
    },
    reopen: () => openSqliteStore({ dataDir }),
  };
});

/** A pid that is certainly not running: a child that has already exited. */
function deadPid(): number {
  const child = spawnSync(process.execPath, ['-e', 'process.stdout.write(String(process.pid))']);
  return Number(child.stdout.toString());
}

describe('SqliteStore specifics', () => {
  it('creates the data dir, the database file and its lock; close releases the lock', async () => {
    const dataDir = join(tempDir(), 'nested', 'data');
    const store = await openSqliteStore({ dataDir, fileName: 'custom.db' });
    assert.ok(existsSync(join(dataDir, 'custom.db')));
    assert.equal(readFileSync(join(dataDir, LOCK_FILE_NAME), 'utf8').trim(), String(process.pid));
    assert.deepEqual(store.capabilities, { skipLocked: false, multiNode: false });
    await store.close();
    assert.equal(existsSync(join(dataDir, LOCK_FILE_NAME)), false);
    await store.close();
  });

  it('refuses a data dir held by a live process, naming the pid', async () => {
    const dataDir = tempDir();
    const store = await openSqliteStore({ dataDir });
    try {
      await assert.rejects(openSqliteStore({ dataDir }), (err: Error) => {
        assert.match(err.message, new RegExp(`data dir .* is in use by pid ${process.pid}`));
        return true;
      });
      await store.ping();
    } finally {
      await store.close();
    }
    const again = await openSqliteStore({ dataDir });
    await again.close();
  });

  it('takes over a lock left by a dead process', async () => {
    const dataDir = tempDir();
    writeFileSync(join(dataDir, LOCK_FILE_NAME), `${deadPid()}\n`);
    const store = await openSqliteStore({ dataDir });
    assert.equal(readFileSync(join(dataDir, LOCK_FILE_NAME), 'utf8').trim(), String(process.pid));
    await store.close();
  });

  it('runs WAL with synchronous=FULL and records its migrations', async () => {
    const dataDir = tempDir();
    const store = await openSqliteStore({ dataDir });
    await store.close();
    const reopened = await openSqliteStore({ dataDir });
    try {
      const db = (reopened as unknown as { db: import('better-sqlite3').Database }).db;
      assert.equal(db.pragma('journal_mode', { simple: true }), 'wal');
      assert.equal(db.pragma('synchronous', { simple: true }), 2);
      assert.equal(db.pragma('foreign_keys', { simple: true }), 1);
      // Bookkeeping writes commit without their own fsync, and leave FULL in force for the API's.
      await reopened.eventClaim({ refs: [{ tenantId: 'none', id: 'none', version: 1 }], now: 0, owner: 'x', leaseUntil: 1 });
      await reopened.eventRecordAttempts({ outcomes: [{ tenantId: 'none', id: 'none', version: 1, owner: 'x', to: 'succeeded', durationMs: 1 }], now: 0 });
      assert.equal(db.pragma('synchronous', { simple: true }), 2);
      const versions = db.prepare('SELECT version FROM schema_migrations ORDER BY version').pluck().all();
      assert.deepEqual(versions, [1, 2, 3], 'reopening applies nothing twice');
    } finally {
      await reopened.close();
    }
  });

  it('rejects a bad list cursor and an out-of-bounds limit', async () => {
    const dataDir = tempDir();
    const store = await openSqliteStore({ dataDir });
    try {
      await assert.rejects(store.eventList({ tenantId: 't', limit: 10, cursor: 'not-a-cursor!' }), /cursor/);
      await assert.rejects(store.eventList({ tenantId: 't', limit: 0 }), RangeError);
    } finally {
      await store.close();
    }
  });
});
