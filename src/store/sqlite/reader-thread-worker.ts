/**
 * The worker side of reader-thread.ts: a read-only connection of its own on the store's file, on
 * its own thread, so a long read (a count over millions of events) never blocks the node's event
 * loop. Protocol: ReaderProtocol (reader-thread.ts), by core/thread-rpc.ts.
 */
import { serveRpc } from '../../core/thread-rpc.ts';
import { openConnection, withSqliteCode, type Connection, type Statement } from './driver.ts';
import type { ReaderProtocol } from './reader-thread.ts';

let db: Connection | null = null;
let openError: Error | null = null;
let statements: Record<string, string> = {};
const prepared = new Map<string, Statement>();

serveRpc<ReaderProtocol>(
  {
    open(file, sql) {
      try {
        // A read waits for nothing in WAL mode but a checkpoint's brief lock on a fresh connection
        // (the default busy timeout, 5 s).
        db = openConnection(file, { readonly: true, fileMustExist: true });
      } catch (err) {
        openError = withSqliteCode(err as Error);
        throw openError;
      }
      statements = sql;
    },
    all(name, params) {
      // Every read fails as the open did (the caller sends no read before open).
      if (!db) throw openError ?? new Error('not open');
      try {
        let stmt = prepared.get(name);
        if (!stmt) {
          const sql = statements[name];
          if (typeof sql !== 'string') throw new Error(`reader thread: no statement named ${name}`);
          stmt = db.prepare(sql);
          prepared.set(name, stmt);
        }
        return params === undefined ? stmt.all() : stmt.all(params);
      } catch (err) {
        throw withSqliteCode(err);
      }
    },
  },
  { order: 'sequential' },
);
