/**
 * The connection pool and the one way this backend sends SQL: named prepared statements from
 * queries.ts, on the pool or on a client holding a transaction.
 */
import pg from 'pg';
import { StoreFullError, StoreUnavailableError } from '../store.ts';
import { SQL, type QueryName } from './queries.ts';

/** A pool, or one client of it inside a transaction. */
export type Queryable = pg.Pool | pg.PoolClient;

/** Lower-case identifier, so it needs no quoting anywhere and cannot smuggle SQL. */
export const SCHEMA_NAME = /^[a-z_][a-z0-9_]{0,62}$/;

/** Bound on any one statement; migrate() lifts it for its own transaction. */
export const STATEMENT_TIMEOUT_MS = 30_000;

const INT8_OID = 20;
/**
 * bigint columns (epoch ms, seq, counts) as JS numbers rather than strings: every value this
 * backend stores in one is far below 2^53.
 */
const TYPES = {
  getTypeParser: ((oid: number, format?: 'text' | 'binary') =>
    oid === INT8_OID
      ? (value: string) => Number(value)
      : pg.types.getTypeParser(oid, format)) as typeof pg.types.getTypeParser,
};

export interface PoolOptions {
  url: string;
  schema: string;
  size: number;
  onError: (err: Error) => void;
  /**
   * Its commits answer before their WAL is flushed (synchronous_commit = off): for writes whose
   * loss in a crash of the server only repeats a delivery (claims), never for what a client was
   * told is stored.
   */
  asyncCommit?: boolean;
  /** Bound on any one statement of its connections; default STATEMENT_TIMEOUT_MS. */
  statementTimeoutMs?: number;
  /** More settings of its connections (`name=value` each). */
  settings?: string[];
  /**
   * Bound on getting a connection (opening one, or waiting for one of a full pool to be free);
   * none by default (pg: wait as long as it takes, the OS' own connect timeout included).
   */
  connectTimeoutMs?: number;
}

/** Every connection of the pool uses the store's schema (search_path) and the statement timeout. */
export function createPool(opts: PoolOptions): pg.Pool {
  if (!SCHEMA_NAME.test(opts.schema))
    throw new RangeError(`postgres: schema must match ${SCHEMA_NAME}, got ${JSON.stringify(opts.schema)}`);
  const pool = new pg.Pool({
    connectionString: opts.url,
    max: opts.size,
    ...(opts.connectTimeoutMs ? { connectionTimeoutMillis: opts.connectTimeoutMs } : {}),
    options: `-c search_path=${opts.schema} -c statement_timeout=${opts.statementTimeoutMs ?? STATEMENT_TIMEOUT_MS}${opts.asyncCommit ? ' -c synchronous_commit=off' : ''}${(opts.settings ?? []).map((s) => ` -c ${s}`).join('')}`,
    types: TYPES,
  });
  // An idle client's connection dies when the server restarts; without a listener the pool's
  // 'error' event would end the process. The next query opens a new connection.
  pool.on('error', opts.onError);
  return pool;
}

/**
 * Takes `connections` connections of `pool` at once (all taken before any is used, so each is one
 * of its own), runs `use` on each and gives them back: a warm-up's way to have them open, with
 * their statements prepared, before they are needed. A connection that cannot be opened, or a
 * `use` that fails, is left to first use.
 */
export async function onEachConnection(
  pool: pg.Pool,
  connections: number,
  use: (client: pg.PoolClient) => Promise<unknown>,
): Promise<void> {
  const taken = await Promise.allSettled(Array.from({ length: connections }, () => pool.connect()));
  const clients = taken.flatMap((t) => (t.status === 'fulfilled' ? [t.value] : []));
  try {
    await Promise.allSettled(clients.map(use));
  } finally {
    for (const client of clients) client.release();
  }
}

/** Waits for `work` at most `ms`; what is left of it goes on meanwhile. Never rejects. */
export async function atMost(work: Promise<unknown>, ms: number): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  const bound = new Promise<void>((resolve) => {
    timer = setTimeout(resolve, ms);
  });
  await Promise.race([work.catch(() => {}), bound]).finally(() => clearTimeout(timer));
}

/** Runs statement `name` of queries.ts with positional values. */
export function run<R extends pg.QueryResultRow = pg.QueryResultRow>(
  db: Queryable,
  name: QueryName,
  values: unknown[] = [],
): Promise<pg.QueryResult<R>> {
  return db.query<R>({ name: `belfry_${name}`, text: SQL[name], values }).catch(rethrowUnavailable);
}

/** Socket errors and PostgreSQL's connection-class SQLSTATEs (08xxx, 57P01-03 shutdown, 53300 too many connections). */
const UNAVAILABLE_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ETIMEDOUT',
  'EPIPE',
  'EHOSTUNREACH',
  '57P01',
  '57P02',
  '57P03',
  '53300',
]);

/** SQLSTATE disk_full: the server could not extend a file; the statement's transaction rolled back. */
const DISK_FULL_CODE = '53100';

/**
 * Rethrows a lost or refused connection as StoreUnavailableError, and a full disk on the server as
 * StoreFullError (answered 503 storage_full, retried by whoever retries an unavailable store); any
 * other error unchanged.
 */
export function rethrowUnavailable(err: unknown): never {
  const e = err as { code?: unknown; message?: unknown };
  const code = typeof e?.code === 'string' ? e.code : '';
  const message = typeof e?.message === 'string' ? e.message : String(err);
  if (code === DISK_FULL_CODE)
    throw Object.assign(new StoreFullError(`PostgreSQL disk full: ${message}`, { cause: err }), { code });
  if (
    UNAVAILABLE_CODES.has(code) ||
    code.startsWith('08') ||
    /Connection terminated|timeout exceeded when trying to connect|Client has encountered a connection error/.test(
      message,
    )
  ) {
    throw new StoreUnavailableError(`PostgreSQL unavailable: ${message}`, { cause: err });
  }
  throw err;
}

/**
 * Runs `fn` in one transaction on one client: `begin` opens it (TX.begin or TX.beginRelaxed),
 * COMMIT on success, ROLLBACK on a throw. A client whose connection failed or whose rollback
 * failed is discarded.
 *
 * A checked-out client has no 'error' listener of the pool's (pg-pool keeps one on idle clients
 * only), and pg emits 'error' on the client when its connection dies, whether or not a query is
 * running: without a listener of ours that ends the process. A PostgreSQL restart while a
 * transaction was open did exactly that to a node (cluster failure test, exit code 1). The
 * statement in progress fails on its own (as unavailable), and so does the next one.
 */
export async function inTransaction<T>(
  pool: pg.Pool,
  begin: string,
  fn: (client: pg.PoolClient) => Promise<T>,
): Promise<T> {
  const client = await pool.connect().catch(rethrowUnavailable);
  let broken: Error | undefined;
  const onError = (err: Error): void => {
    broken ??= err;
  };
  client.on('error', onError);
  try {
    await client.query(begin);
    const result = await fn(client);
    await client.query('COMMIT');
    return result;
  } catch (err) {
    await client.query('ROLLBACK').catch((rollbackErr: Error) => {
      broken = rollbackErr;
    });
    rethrowUnavailable(err);
  } finally {
    client.removeListener('error', onError);
    client.release(broken);
  }
}
