/** A PostgreSQL that cannot be reached surfaces as StoreUnavailableError (the API answers 503), never as a generic error. */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import pg from 'pg';
import { toApiError } from '../../api/errors.ts';
import { StoreUnavailableError } from '../store.ts';
import { createPool, inTransaction } from './db.ts';
import { openPostgresStore } from './postgres-store.ts';

const PG_URL = process.env.BELFRY_TEST_PG_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';

describe('PostgreSQL unavailable', () => {
  it('a refused connection is StoreUnavailableError, mapped to 503 with Retry-After', async () => {
    // Port 1 on loopback: nothing listens there, the connection is refused at once.
    const err = await openPostgresStore({
      url: 'postgres://postgres@127.0.0.1:1/postgres',
      schema: 'belfry_unreachable',
    }).then(
      () => null,
      (e: unknown) => e,
    );
    assert.ok(err instanceof StoreUnavailableError, `got ${String(err)}`);
    const mapped = toApiError(err, 1024);
    assert.equal(mapped?.status, 503);
    assert.equal(mapped?.code, 'unavailable');
    assert.equal(mapped?.headers?.['retry-after'], '1');
  });

  it('a connection that dies inside a transaction, between statements, fails the transaction as unavailable and does not end the process', async () => {
    const pool = createPool({ url: PG_URL, schema: 'public', size: 2, onError: () => {} });
    const admin = new pg.Client({ connectionString: PG_URL });
    await admin.connect();
    try {
      const err = await inTransaction(pool, 'BEGIN', async (client) => {
        const pid = (await client.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows[0].pid;
        // The server ends this backend while the transaction is open and no statement runs (as a
        // restart does): pg emits 'error' on the checked-out client, which would end the process
        // (this test's) had inTransaction no listener.
        // Waits for 'end' alone (events.once would listen for 'error' too).
        const ended = new Promise<void>((resolve, reject) => {
          const timer = setTimeout(() => reject(new Error('the client did not end within 10 s')), 10_000);
          client.once('end', () => {
            clearTimeout(timer);
            resolve();
          });
        });
        await admin.query('SELECT pg_terminate_backend($1)', [pid]);
        await ended;
        await client.query('SELECT 1');
      }).then(
        () => null,
        (e: unknown) => e,
      );
      assert.ok(err instanceof StoreUnavailableError, `got ${String(err)}`);
      // The dead client was discarded: the pool answers on a new connection.
      assert.equal((await pool.query<{ one: number }>('SELECT 1 AS one')).rows[0].one, 1);
    } finally {
      await admin.end();
      await pool.end();
    }
  });
});
