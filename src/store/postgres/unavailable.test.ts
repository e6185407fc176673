/** A PostgreSQL that cannot be reached surfaces as StoreUnavailableError (the API answers 503), never as a generic error. */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { toApiError } from '../../api/errors.ts';
import { StoreUnavailableError } from '../store.ts';
import { openPostgresStore } from './postgres-store.ts';

describe('PostgreSQL unavailable', () => {
  it('a refused connection is StoreUnavailableError, mapped to 503 with Retry-After', async () => {
    // Port 1 on loopback: nothing listens there, the connection is refused at once.
    const err = await openPostgresStore({ url: 'postgres://postgres@127.0.0.1:1/postgres', schema: 'belfry_unreachable' }).then(
      () => null,
      (e: unknown) => e,
    );
    assert.ok(err instanceof StoreUnavailableError, `got ${String(err)}`);
    const mapped = toApiError(err, 1024);
    assert.equal(mapped?.status, 503);
    assert.equal(mapped?.code, 'unavailable');
    assert.equal(mapped?.headers?.['retry-after'], '1');
  });
});
