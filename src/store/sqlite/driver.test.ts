import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { isStoreFull, storeFailureKind } from '../failure-kind.ts';
import { sqliteErrorCode } from '../sqlite-code.ts';
import { openConnection, withSqliteCode, type Connection } from './driver.ts';

const dirs: string[] = [];
after(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});
function tempFile(): string {
  const dir = mkdtempSync(join(tmpdir(), 'belfry-sqlite-driver-'));
  dirs.push(dir);
  return join(dir, 'x.db');
}

/** The error `fn` throws (it must throw). */
function thrown(fn: () => unknown): unknown {
  try {
    fn();
  } catch (err) {
    return err;
  }
  assert.fail('expected an error');
}

describe('the SQLite driver (node:sqlite)', () => {
  const open = (file: string, opts = {}): Connection => openConnection(file, opts);

  it('binds ? positionally and @x from an object (ignoring keys it does not name); rows as objects or arrays', () => {
    const db = open(tempFile());
    try {
      db.exec('CREATE TABLE t (id INTEGER PRIMARY KEY, a TEXT, n INTEGER)');
      const ins = db.prepare('INSERT INTO t (a, n) VALUES (@a, @n)');
      assert.deepEqual({ ...ins.run({ a: 'x', n: 1, unused: 'ignored' }) }, { changes: 1, lastInsertRowid: 1 });
      db.prepare('INSERT INTO t (a, n) VALUES (?, ?)').run('y', null);
      const row = db.prepare<{ a: string; n: number }>('SELECT a, n FROM t WHERE id = ?').get(1);
      assert.equal(row?.a, 'x');
      assert.equal(row?.n, 1);
      assert.equal(db.prepare('SELECT a FROM t WHERE id = 99').get(), undefined);
      const arrays = db.prepareArrays<[number, string]>('SELECT id, a FROM t ORDER BY id').all();
      assert.deepEqual(
        arrays.map((r) => [...r]),
        [
          [1, 'x'],
          [2, 'y'],
        ],
      );
    } finally {
      db.close();
    }
  });

  it('runs immediate() as one transaction: committed, or rolled back when it throws (nested as a savepoint)', () => {
    const db = open(tempFile());
    try {
      db.exec('CREATE TABLE t (id INTEGER PRIMARY KEY)');
      const ins = db.prepare('INSERT INTO t (id) VALUES (?)');
      const count = () => db.prepare<{ n: number }>('SELECT count(*) AS n FROM t').get()?.n;
      assert.equal(
        db.immediate(() => ins.run(1).changes),
        1,
      );
      assert.throws(() =>
        db.immediate(() => {
          ins.run(2);
          throw new Error('boom');
        }),
      );
      assert.equal(count(), 1, 'the failed transaction left nothing');
      db.immediate(() => {
        ins.run(3);
        assert.throws(() =>
          db.immediate(() => {
            ins.run(4);
            throw new Error('inner');
          }),
        );
      });
      assert.deepEqual(
        db
          .prepare<{ id: number }>('SELECT id FROM t ORDER BY id')
          .all()
          .map((r) => r.id),
        [1, 3],
        'the inner one rolled back alone',
      );
    } finally {
      db.close();
    }
  });

  it('names its errors by SQLite code, and failure-kind classifies them: constraint, busy, full, not a database', () => {
    const file = tempFile();
    const db = open(file);
    const other = open(file, { timeoutMs: 0 });
    try {
      db.exec('PRAGMA journal_mode = WAL; CREATE TABLE t (id INTEGER PRIMARY KEY, body TEXT)');
      const ins = db.prepare('INSERT INTO t (id, body) VALUES (?, ?)');
      ins.run(1, 'a');
      const dup = thrown(() => ins.run(1, 'a'));
      assert.equal(sqliteErrorCode(dup), 'SQLITE_CONSTRAINT_PRIMARYKEY');
      assert.equal(storeFailureKind(dup), 'permanent');

      const busy = thrown(() =>
        db.immediate(() => {
          ins.run(2, 'b');
          other.immediate(() => 0);
        }),
      );
      assert.equal(sqliteErrorCode(busy), 'SQLITE_BUSY');
      assert.equal(storeFailureKind(busy), 'retryable');

      // A database that may not grow: the disk-full code, as on a full disk.
      db.exec(`PRAGMA max_page_count = ${db.prepare<{ page_count: number }>('PRAGMA page_count').get()!.page_count}`);
      const full = thrown(() => db.immediate(() => ins.run(3, 'x'.repeat(100_000))));
      assert.equal(sqliteErrorCode(full), 'SQLITE_FULL');
      assert.equal(isStoreFull(full), true);
      assert.equal(storeFailureKind(full), 'unavailable');
      assert.equal(withSqliteCode(full as { code?: unknown }).code, 'SQLITE_FULL', 'the name in code, for the wire');
    } finally {
      other.close();
      db.close();
    }

    const junk = tempFile();
    writeFileSync(junk, 'not a database, just some text that is long enough to have a header '.repeat(100));
    const notDb = thrown(() => {
      const bad = open(junk, { readonly: true, fileMustExist: true });
      try {
        bad.prepare('SELECT * FROM sqlite_master').all();
      } finally {
        bad.close();
      }
    });
    assert.equal(sqliteErrorCode(notDb), 'SQLITE_NOTADB');
  });

  it('refuses to create a file that must exist', () => {
    const missing = join(tempFile(), '..', 'missing.db');
    for (const readonly of [true, false]) {
      const err = thrown(() => open(missing, { readonly, fileMustExist: true }));
      assert.match(String(sqliteErrorCode(err) ?? (err as Error).message), /CANTOPEN|does not exist/);
    }
  });
});
