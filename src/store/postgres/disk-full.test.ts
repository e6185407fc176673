/**
 * PostgreSQL's disk_full (SQLSTATE 53100), raised by a real server through the real driver, is a
 * StoreFullError (the API answers 503 storage_full with Retry-After, and whoever retries an
 * unavailable store retries it), and the transaction it ended wrote nothing.
 *
 * The server cannot be made to run out of disk here, so a statement raises the very error it
 * raises then (`could not extend file ...`, ERRCODE disk_full): what reaches the driver is the same.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import type pg from 'pg';
import { STORAGE_FULL_RETRY_AFTER_S, toApiError } from '../../api/errors.ts';
import { storeFailureKind } from '../failure-kind.ts';
import { StoreFullError } from '../store.ts';
import { createPool, inTransaction, rethrowUnavailable } from './db.ts';

const PG_URL = process.env.BELFRY_TEST_PG_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
const RAISE_DISK_FULL = `DO $$ BEGIN RAISE EXCEPTION 'could not extend file "base/5/16385": No space left on device' USING ERRCODE = 'disk_full'; END $$`;

describe('PostgreSQL disk full', () => {
  const schema = `belfry_full_${randomBytes(4).toString('hex')}`;
  let pool: pg.Pool;
  before(async () => {
    pool = createPool({ url: PG_URL, schema, size: 2, onError: () => {} });
    await pool.query(`CREATE SCHEMA ${schema}`);
    await pool.query(`CREATE TABLE ${schema}.t (id int PRIMARY KEY)`);
  });
  after(async () => {
    await pool.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
    await pool.end();
  });

  it('a statement failing with 53100 is StoreFullError, answered 503 storage_full, and classed unavailable', async () => {
    const err = await pool
      .query(RAISE_DISK_FULL)
      .catch(rethrowUnavailable)
      .then(
        () => null,
        (e: unknown) => e,
      );
    assert.ok(err instanceof StoreFullError, `got ${String(err)}`);
    assert.equal((err as { code?: string }).code, '53100');
    assert.equal(storeFailureKind(err), 'unavailable');
    const mapped = toApiError(err, 1024);
    assert.equal(mapped?.status, 503);
    assert.equal(mapped?.code, 'storage_full');
    assert.equal(mapped?.headers?.['retry-after'], String(STORAGE_FULL_RETRY_AFTER_S));
    assert.doesNotMatch(mapped!.message, /extend file|No space/);
  });

  it('a transaction ended by 53100 is rolled back: nothing of it is written', async () => {
    const err = await inTransaction(pool, 'BEGIN', async (client) => {
      await client.query(`INSERT INTO ${schema}.t (id) VALUES (1)`);
      await client.query(RAISE_DISK_FULL);
    }).then(
      () => null,
      (e: unknown) => e,
    );
    assert.ok(err instanceof StoreFullError, `got ${String(err)}`);
    assert.equal((await pool.query(`SELECT count(*)::int AS n FROM ${schema}.t`)).rows[0].n, 0);
  });
});
