import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { BATCH_DELAY_MS_DEFAULT, BATCH_EVENTS_DEFAULT, batchingSettings, itemError } from './batcher.ts';

describe('itemError: a batch item error as its single create throws it', () => {
  it('takes the status of its code, and names body where the batch names events/<i>', () => {
    const err = itemError(
      { code: 'invalid_request', message: 'events/3/fireAt must be string or integer', details: [{ field: 'fireAt' }] },
      3,
      1,
    );
    assert.equal(err.status, 400);
    assert.equal(err.message, 'body/fireAt must be string or integer');
    assert.deepEqual(err.details, [{ field: 'fireAt' }]);
    assert.equal(
      err.body,
      '{"error":{"code":"invalid_request","message":"body/fireAt must be string or integer","details":[{"field":"fireAt"}]}}',
    );
    assert.equal(
      itemError({ code: 'invalid_request', message: 'events/10 must be object' }, 10, 1).message,
      'body must be object',
    );
  });

  it('leaves other messages as they are: another index, another code, a message of the intake', () => {
    assert.equal(
      itemError({ code: 'invalid_request', message: 'events/10 must be object' }, 1, 1).message,
      'events/10 must be object',
    );
    const conflict = itemError({ code: 'conflict', message: 'an event with id "a" already exists', details: [] }, 0, 2);
    assert.deepEqual(
      [conflict.status, conflict.message, conflict.attempts],
      [409, 'an event with id "a" already exists', 2],
    );
    assert.equal(conflict.body, '{"error":{"code":"conflict","message":"an event with id \\"a\\" already exists"}}');
    assert.equal(itemError({ code: 'payload_too_large', message: 'payload: too large' }, 0, 1).status, 413);
    assert.equal(
      itemError({ code: 'some_new_code', message: 'x' }, 0, 1).status,
      400,
      'an unknown code is a client error',
    );
  });
});

describe('batchingSettings', () => {
  it('has defaults and refuses values out of bounds', () => {
    assert.deepEqual(batchingSettings({}), { maxDelayMs: BATCH_DELAY_MS_DEFAULT, maxEvents: BATCH_EVENTS_DEFAULT });
    assert.deepEqual(batchingSettings({ maxDelayMs: 0, maxEvents: 1 }), { maxDelayMs: 0, maxEvents: 1 });
    for (const bad of [
      { maxDelayMs: -1 },
      { maxDelayMs: 1_001 },
      { maxDelayMs: Number.NaN },
      { maxEvents: 0 },
      { maxEvents: 2.5 },
      { maxEvents: 10_001 },
    ])
      assert.throws(() => batchingSettings(bad), RangeError, JSON.stringify(bad));
  });
});
