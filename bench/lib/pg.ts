/**
 * The local PostgreSQL the bench uses: URLs, fresh schemas, and dropping them afterwards. The
 * functions that take a server's URL default to it; the `citus` scenario passes a Citus
 * coordinator's (or an instance's) instead.
 */
import { execFileSync } from 'node:child_process';
import pg from 'pg';

/** The server every PostgreSQL figure is measured on (trust authentication). */
export const PG_URL = process.env.BENCH_PG_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
export const REDIS_URL = process.env.BENCH_REDIS_URL ?? 'redis://127.0.0.1:6379';

/** A schema name no other run uses: bench_<what>_<pid>_<time>. Lower case, a valid identifier. */
export function freshSchemaName(what: string): string {
  return `bench_${what.replace(/[^a-z0-9]/g, '')}_${process.pid}_${Date.now().toString(36)}`;
}

/** The URL Belfry takes for a store in `schema` on the server at `url`; with `citus`, a schema distributed on that Citus coordinator. */
export function belfryPgUrl(schema: string, url = PG_URL, citus = false): string {
  return `${url}?schema=${schema}${citus ? '&citus=true' : ''}`;
}

/** Runs `fn` with one client of its own to the server at `url`, closed afterwards. */
export async function withPgClient<T>(fn: (client: pg.Client) => Promise<T>, url = PG_URL): Promise<T> {
  const client = new pg.Client({ connectionString: url });
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
export async function pgCheckpoint(url = PG_URL): Promise<void> {
  await withPgClient((c) => c.query('CHECKPOINT'), url).catch(() => {});
}

/**
 * Before a measured step: the previous step's writes reach the disk now (a CHECKPOINT of the
 * local server and of each server at `urls`, then the kernel's dirty pages), not during the
 * step's measurement.
 */
export async function settle(urls: string[] = []): Promise<void> {
  for (const url of new Set([PG_URL, ...urls])) await pgCheckpoint(url);
  execFileSync('sync');
}

export async function dropSchema(schema: string, url = PG_URL): Promise<void> {
  if (!/^[a-z_][a-z0-9_]*$/.test(schema)) throw new Error(`not a bench schema name: ${schema}`);
  await withPgClient((c) => c.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`), url);
}
