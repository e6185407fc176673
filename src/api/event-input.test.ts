import assert from 'node:assert/strict';
import { test } from 'node:test';
import { BelfryError } from '../core/errors.ts';
import { checkHeaders, checkPayloadShape, checkUrl, payloadText, PAYLOAD_DEPTH_MAX, resolveFireAt, resolveRetry } from './event-input.ts';
import { parseIfMatch } from './routes/event-actions.ts';

function fieldOf(fn: () => unknown): string | undefined {
  try {
    fn();
  } catch (err) {
    assert.ok(err instanceof BelfryError, String(err));
    return err.details[0]?.field;
  }
  return undefined;
}

test('checkHeaders refuses reserved and duplicate names, case-insensitively', () => {
  assert.deepEqual(checkHeaders({ 'x-a': '1' }), { 'x-a': '1' });
  assert.deepEqual(checkHeaders(undefined), {});
  for (const name of ['Host', 'content-type', 'Content-Length', 'Transfer-Encoding', 'connection', 'Webhook-Signature', 'proxy-anything']) {
    assert.equal(fieldOf(() => checkHeaders({ [name]: 'x' })), `headers.${name}`);
  }
  assert.equal(fieldOf(() => checkHeaders({ 'X-A': '1', 'x-a': '2' })), 'headers.x-a');
});

test('checkUrl takes absolute http(s) URLs only', () => {
  assert.equal(checkUrl('url', 'https://a.example/x?y=1'), 'https://a.example/x?y=1');
  for (const url of ['ftp://a', 'javascript:alert(1)', '/relative', 'a.example', 'http://[::1']) assert.equal(fieldOf(() => checkUrl('url', url)), 'url');
});

test('resolveFireAt: fireAt, now + delay, neither, or both (refused)', () => {
  const now = Date.UTC(2026, 0, 1);
  assert.equal(resolveFireAt(now, '2026-01-02T00:00:00Z', undefined), Date.UTC(2026, 0, 2));
  assert.equal(resolveFireAt(now, undefined, '1m'), now + 60_000);
  assert.equal(resolveFireAt(now, undefined, undefined), null);
  assert.equal(fieldOf(() => resolveFireAt(now, 1, '1m')), 'delay');
  assert.equal(fieldOf(() => resolveFireAt(now, 5, undefined)), 'fireAt');
  assert.equal(fieldOf(() => resolveFireAt(now, undefined, '1 minute')), 'delay');
});

test('resolveRetry turns RangeErrors into 400s naming the field', () => {
  assert.equal(resolveRetry(undefined), null);
  assert.equal(resolveRetry({ maxAttempts: 3 })?.maxAttempts, 3);
  assert.equal(fieldOf(() => resolveRetry({ maxAttempts: 0 })), 'retry.maxAttempts');
  assert.equal(fieldOf(() => resolveRetry({ minBackoff: 'x' })), 'retry.minBackoff');
  assert.equal(fieldOf(() => resolveRetry({ coefficient: 11 })), 'retry.coefficient');
});

test('payload: nesting bound, non-finite numbers, size limit (413)', () => {
  let deep: unknown = 1;
  for (let i = 0; i < PAYLOAD_DEPTH_MAX; i++) deep = [deep];
  checkPayloadShape(deep);
  assert.equal(fieldOf(() => checkPayloadShape([deep])), 'payload');
  assert.equal(fieldOf(() => checkPayloadShape({ a: [1, Infinity] })), 'payload');
  assert.equal(fieldOf(() => checkPayloadShape(-Infinity)), 'payload');
  assert.equal(payloadText(undefined, 10), 'null');
  assert.equal(payloadText({ a: 'é' }, 10), '{"a":"é"}');
  assert.throws(() => payloadText({ a: 'éé' }, 10), (err: unknown) => err instanceof BelfryError && err.status === 413);
});

test('parseIfMatch: quoted, bare, weak, any; else 400', () => {
  assert.equal(parseIfMatch('"3"'), 3);
  assert.equal(parseIfMatch('3'), 3);
  assert.equal(parseIfMatch('W/"12"'), 12);
  assert.equal(parseIfMatch('*'), undefined);
  assert.equal(parseIfMatch(undefined), undefined);
  for (const bad of ['"x"', '', '1.5', '"1", "2"', '9'.repeat(20)]) assert.equal(fieldOf(() => parseIfMatch(bad)), 'If-Match');
});
