import assert from 'node:assert/strict';
import { test } from 'node:test';
import { BelfryError } from '../core/errors.ts';
import { StoreFullError, StoreUnavailableError } from '../store/store.ts';
import { errorFromWire } from '../store/sqlite/thread-wire.ts';
import { STORAGE_FULL_RETRY_AFTER_S, toApiError, validationError, type AjvErrorLike } from './errors.ts';

const e = (
  instancePath: string,
  keyword: string,
  params: Record<string, unknown> = {},
  extra: Partial<AjvErrorLike> = {},
): AjvErrorLike => ({
  instancePath,
  keyword,
  params,
  message: `${keyword} failed`,
  ...extra,
});

test('validationError names the field and picks the error that says what to fix', () => {
  const cases: [AjvErrorLike[], string, string][] = [
    [
      [e('', 'additionalProperties', { additionalProperty: 'fireAtt' })],
      'fireAtt',
      'body/fireAtt is not allowed (unknown field or invalid name)',
    ],
    [[e('', 'required', { missingProperty: 'destination' })], 'destination', 'body/destination is required'],
    [[e('/retry/maxAttempts', 'minimum', {})], 'retry.maxAttempts', 'body/retry/maxAttempts minimum failed'],
    [[e('/fireAt', 'type', { type: 'string,integer' })], 'fireAt', 'body/fireAt must be string or integer'],
    // A union: one type error per branch, then anyOf: the types are joined.
    [
      [
        e('/destination', 'type', { type: 'string' }),
        e('/destination', 'type', { type: 'object' }),
        e('/destination', 'anyOf'),
      ],
      'destination',
      'body/destination must be string or object',
    ],
    // A union where one branch got further: the deeper error wins.
    [
      [
        e('/destination', 'type', { type: 'string' }),
        e('/destination/url', 'type', { type: 'string' }),
        e('/destination', 'anyOf'),
      ],
      'destination.url',
      'body/destination/url must be string',
    ],
    // A union where one branch failed on a pattern: the pattern error wins over the other branch's type error.
    [
      [
        e('/destination', 'pattern', { pattern: '^a$' }),
        e('/destination', 'type', { type: 'object' }),
        e('/destination', 'anyOf'),
      ],
      'destination',
      'body/destination must match the pattern ^a$',
    ],
    [
      [
        e('/headers', 'pattern', { pattern: '^x$' }, { propertyName: 'bad name' }),
        e('/headers', 'propertyNames', { propertyName: 'bad name' }),
      ],
      'headers.bad name',
      'body/headers/bad name is not an allowed name',
    ],
    [[e('/state', 'enum', { allowedValues: ['a', 'b'] })], 'state', 'body/state must be one of a, b'],
    [[e('', 'type', { type: 'object' })], 'body', 'body must be object'],
  ];
  for (const [errors, field, message] of cases) {
    const err = validationError(errors, 'body');
    assert.equal(err.status, 400);
    assert.equal(err.details[0].field, field);
    assert.ok(err.message.startsWith(message), `${err.message} starts with ${message}`);
  }
});

test('toApiError maps typed, framework and unknown errors', () => {
  assert.deepEqual(toApiError(new BelfryError('conflict', 'x', [{ message: 'm', state: 'succeeded' }]), 1), {
    status: 409,
    code: 'conflict',
    message: 'x',
    details: [{ message: 'm', state: 'succeeded' }],
  });
  assert.equal(
    toApiError(Object.assign(new Error('too big'), { code: 'FST_ERR_CTP_BODY_TOO_LARGE', statusCode: 413 }), 99)
      ?.message,
    'request body is larger than the limit of 99 bytes',
  );
  assert.equal(
    toApiError(Object.assign(new Error('x'), { code: 'FST_ERR_CTP_INVALID_MEDIA_TYPE', statusCode: 415 }), 1)?.status,
    415,
  );
  assert.equal(
    toApiError(Object.assign(new Error('x'), { code: 'FST_ERR_CTP_EMPTY_JSON_BODY', statusCode: 400 }), 1)?.code,
    'invalid_request',
  );
  assert.equal(toApiError(new Error('database is locked'), 1), null);
  assert.equal(
    toApiError(Object.assign(new Error('not ours'), { statusCode: 400 }), 1),
    null,
    'only Fastify errors are trusted with their status',
  );
  assert.equal(toApiError('a string', 1), null);
  assert.equal(
    toApiError(Object.assign(new Error('aborted'), { code: 'ECONNRESET' }), 1)?.status,
    400,
    'a client hanging up mid-body is not a 500',
  );
  const limited = toApiError(new BelfryError('rate_limited', 'slow down', [], { 'retry-after': '1' }), 1);
  assert.deepEqual(limited?.headers, { 'retry-after': '1' });
});

test('a full disk is 503 storage_full with Retry-After and no driver text, whatever the backend said it with', () => {
  const sqliteFull = errorFromWire({
    name: 'SqliteError',
    message: 'database or disk is full',
    code: 'SQLITE_FULL',
    stack: 'SqliteError: database or disk is full\n    at Statement.run',
  });
  assert.ok(sqliteFull instanceof StoreFullError, 'the store thread rebuilds SQLITE_FULL as StoreFullError');
  const cases: unknown[] = [
    sqliteFull,
    new StoreFullError('PostgreSQL disk full: could not extend file "base/16384/16385": No space left on device'),
    Object.assign(new Error('could not extend file'), { code: '53100' }),
    Object.assign(new Error('database or disk is full'), { code: 'SQLITE_FULL' }),
  ];
  for (const err of cases) {
    const mapped = toApiError(err, 1);
    assert.equal(mapped?.status, 503, String(err));
    assert.equal(mapped?.code, 'storage_full');
    assert.equal(mapped?.headers?.['retry-after'], String(STORAGE_FULL_RETRY_AFTER_S));
    assert.doesNotMatch(mapped!.message, /SQLITE|extend file|No space|at /);
  }
  // A store that is merely away stays `unavailable`.
  assert.equal(toApiError(new StoreUnavailableError('PostgreSQL unavailable: ECONNREFUSED'), 1)?.code, 'unavailable');
});
