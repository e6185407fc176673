/**
 * The worker side of reader-thread.ts: a read-only connection of its own on the store's file, on
 * its own thread, so a long read (a count over millions of events) never blocks the node's event
 * loop. Protocol: ReaderProtocol (reader-thread.ts), by core/thread-rpc.ts.
 */
import Database from 'better-sqlite3';
import { serveRpc } from '../../core/thread-rpc.ts';
import type { ReaderProtocol } from './reader-thread.ts';

let db: Database.Database | null = null;
let openError: Error | null = null;
let statements: Record<string, string> = {};
const prepared = new Map<string, Database.Statement>();

serveRpc<ReaderProtocol>(
  {
    open(file, sql) {
      try {
        db = new Database(file, { readonly: true, fileMustExist: true });
      } catch (err) {
        openError = err as Error;
        throw err;
      }
      // A read waits for nothing in WAL mode but a checkpoint's brief lock on a fresh connection.
      db.pragma('busy_timeout = 5000');
      statements = sql;
    },
    all(name, params) {
      // Every read fails as the open did (the caller sends no read before open).
      if (!db) throw openError ?? new Error('not open');
      let stmt = prepared.get(name);
      if (!stmt) {
        const sql = statements[name];
        if (typeof sql !== 'string') throw new Error(`reader thread: no statement named ${name}`);
        stmt = db.prepare(sql);
        prepared.set(name, stmt);
      }
      return params === undefined ? stmt.all() : stmt.all(params);
    },
  },
  { order: 'sequential' },
);
