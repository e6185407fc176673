/** The local PostgreSQL the bench uses: URLs, fresh schemas, and dropping them afterwards. */
import pg from 'pg';

/** The server every PostgreSQL figure is measured on (trust authentication). */
export const PG_URL = process.env.BENCH_PG_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
export const REDIS_URL = process.env.BENCH_REDIS_URL ?? 'redis://127.0.0.1:6379';

/** A schema name no other run uses: bench_<what>_<pid>_<time>. Lower case, a valid identifier. */
export function freshSchemaName(what: string): string {
  return `bench_${what.replace(/[^a-z0-9]/g, '')}_${process.pid}_${Date.now().toString(36)}`;
}

/** The URL Belfry takes for a store in `schema`. */
export function belfryPgUrl(schema: string): string {
  return `${PG_URL}?schema=${schema}`;
}

/** Runs `fn` with one client of its own, closed afterwards. */
export async function withPgClient<T>(fn: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: PG_URL });
  await client.connect();
  try {
    return await fn(client);
  } finally {
    await client.end();
  }
}

/** When the PostgreSQL server started (its postmaster), or null when it cannot be reached: a change means it restarted. */
export async function pgStartedAt(): Promise<string | null> {
  try {
    return await withPgClient(
      async (c) => (await c.query<{ t: string }>('SELECT pg_postmaster_start_time()::text AS t')).rows[0].t,
    );
  } catch {
    return null;
  }
}

/**
 * Writes the server's dirty pages out now (CHECKPOINT), so that the writes of one step (another
 * system's millions of rows, a dropped schema) are not flushed during the next step's
 * measurement. Nothing to do when the server cannot be reached (a run of SQLite and Redis only).
 */
export async function pgCheckpoint(): Promise<void> {
  await withPgClient((c) => c.query('CHECKPOINT')).catch(() => {});
}

export async function dropSchema(schema: string): Promise<void> {
  if (!/^[a-z_][a-z0-9_]*$/.test(schema)) throw new Error(`not a bench schema name: ${schema}`);
  await withPgClient((c) => c.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`));
}
