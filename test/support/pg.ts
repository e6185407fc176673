/**
 * The PostgreSQL the tests use (BELFRY_TEST_POSTGRES_URL, default the local server with trust
 * authentication). Each test makes a schema of its own and drops it afterwards with dropTestSchema.
 */
import pg from 'pg';

export const TEST_PG_URL = process.env.BELFRY_TEST_POSTGRES_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';

/**
 * Drops a test's schema. With `checkpoint`, then writes the server's dirty pages out at once: a
 * test that wrote a flood of rows keeps the disk busy for minutes otherwise (a spread checkpoint),
 * while the next test times its events.
 */
export async function dropTestSchema(schema: string, opts: { checkpoint?: boolean } = {}): Promise<void> {
  const db = new pg.Client({ connectionString: TEST_PG_URL });
  await db.connect();
  try {
    await db.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
    if (opts.checkpoint) await db.query('CHECKPOINT');
  } finally {
    await db.end();
  }
}
