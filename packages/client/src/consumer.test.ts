import assert from 'node:assert/strict';
import { test } from 'node:test';
import { visibilityMsOf } from './consumer.ts';

test('reads the visibility timeout as the API does, 1s to 12h', () => {
  assert.equal(visibilityMsOf('30s'), 30_000);
  assert.equal(visibilityMsOf('2m'), 120_000);
  assert.equal(visibilityMsOf('1500ms'), 1_500);
  assert.equal(visibilityMsOf('12h'), 43_200_000);
  assert.equal(visibilityMsOf(5_000), 5_000);
  for (const bad of ['999ms', '13h', 'soon', '1.5s', 0, 1.5, ''])
    assert.throws(() => visibilityMsOf(bad as string), /visibilityTimeout/, String(bad));
});
