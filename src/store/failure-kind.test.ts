import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { isStoreFull, storeFailureKind, type StoreFailureKind } from './failure-kind.ts';
import { StoreFullError, StoreUnavailableError } from './store.ts';

function withCode(code: string): Error {
  return Object.assign(new Error(`failed with ${code}`), { code });
}

describe('storeFailureKind', () => {
  const cases: [string, unknown, StoreFailureKind][] = [
    ['store unavailable', new StoreUnavailableError('PostgreSQL unavailable: ECONNREFUSED'), 'unavailable'],
    ['pg connection exception class 08', withCode('08006'), 'unavailable'],
    ['pg serialization failure', withCode('40001'), 'retryable'],
    ['pg deadlock', withCode('40P01'), 'retryable'],
    ['pg lock timeout', withCode('55P03'), 'retryable'],
    ['pg admin shutdown', withCode('57P01'), 'retryable'],
    ['pg crash shutdown', withCode('57P02'), 'retryable'],
    ['pg cannot connect now', withCode('57P03'), 'retryable'],
    ['pg too many connections', withCode('53300'), 'retryable'],
    ['sqlite busy', withCode('SQLITE_BUSY'), 'retryable'],
    ['sqlite busy snapshot (extended)', withCode('SQLITE_BUSY_SNAPSHOT'), 'retryable'],
    ['sqlite locked', withCode('SQLITE_LOCKED'), 'retryable'],
    ['store full (mapped)', new StoreFullError('sqlite: database or disk is full'), 'unavailable'],
    ['sqlite full (raw driver error)', withCode('SQLITE_FULL'), 'unavailable'],
    ['pg disk full (raw driver error)', withCode('53100'), 'unavailable'],
    ['pg unique violation', withCode('23505'), 'permanent'],
    ['pg invalid text representation', withCode('22P02'), 'permanent'],
    ['pg statement timeout (query_canceled)', withCode('57014'), 'permanent'],
    ['sqlite constraint', withCode('SQLITE_CONSTRAINT_CHECK'), 'permanent'],
    ['sqlite busy-looking prefix of another code', withCode('SQLITE_BUSYNESS'), 'permanent'],
    ['a plain error', new Error('bug'), 'permanent'],
    ['a numeric code', Object.assign(new Error('x'), { code: 40001 }), 'permanent'],
    ['not an error', 'boom', 'permanent'],
    ['null', null, 'permanent'],
  ];
  for (const [name, err, kind] of cases) {
    it(`${name} → ${kind}`, () => assert.equal(storeFailureKind(err), kind));
  }
});

describe('isStoreFull', () => {
  it("is true of StoreFullError and of the drivers' disk-full codes only", () => {
    assert.equal(isStoreFull(new StoreFullError('full')), true);
    assert.equal(isStoreFull(withCode('SQLITE_FULL')), true);
    assert.equal(isStoreFull(withCode('53100')), true);
    assert.equal(isStoreFull(new StoreUnavailableError('down')), false);
    assert.equal(isStoreFull(withCode('53300')), false);
    assert.equal(isStoreFull(withCode('SQLITE_IOERR')), false);
    assert.equal(isStoreFull(null), false);
  });
});
