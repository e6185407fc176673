import assert from 'node:assert/strict';
import { test } from 'node:test';
import { AddressPolicy } from '../core/address.ts';
import { BelfryError } from '../core/errors.ts';
import {
  checkHeaders,
  checkPayloadShape,
  checkUrl,
  payloadText,
  PAYLOAD_DEPTH_MAX,
  resolveFireAt,
  resolveRetry,
} from './event-input.ts';
import { parseIfMatch } from './routes/event-actions.ts';

const OPEN = new AddressPolicy();

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
  for (const name of [
    'Host',
    'content-type',
    'Content-Length',
    'Transfer-Encoding',
    'connection',
    'Webhook-Signature',
    'proxy-anything',
  ]) {
    assert.equal(
      fieldOf(() => checkHeaders({ [name]: 'x' })),
      `headers.${name}`,
    );
  }
  assert.equal(
    fieldOf(() => checkHeaders({ 'X-A': '1', 'x-a': '2' })),
    'headers.x-a',
  );
});

test('checkUrl takes absolute http(s) URLs only', () => {
  assert.equal(checkUrl('url', 'https://a.example/x?y=1', OPEN), 'https://a.example/x?y=1');
  for (const url of ['ftp://a', 'javascript:alert(1)', '/relative', 'a.example', 'http://[::1'])
    assert.equal(
      fieldOf(() => checkUrl('url', url, OPEN)),
      'url',
    );
});

test('checkUrl refuses private, loopback, link-local and metadata hosts in any encoding, unless allowed', () => {
  const denied = [
    'http://127.0.0.1/x',
    'http://2130706433/x',
    'http://0x7f.1/x',
    'http://0177.0.0.1/x',
    'http://[::1]/x',
    'http://[::ffff:127.0.0.1]/x',
    'http://[::ffff:a9fe:a9fe]/latest',
    'http://169.254.169.254/latest/meta-data',
    'https://10.0.0.5/',
    'https://192.168.1.1:8443/',
    'http://[fd00:ec2::254]/',
    'http://[fe80::1]/',
    'http://localhost:8080/',
    'http://metadata.google.internal/computeMetadata/v1/',
  ];
  for (const url of denied) {
    assert.equal(
      fieldOf(() => checkUrl('url', url, OPEN)),
      'url',
      url,
    );
    try {
      checkUrl('url', url, OPEN);
    } catch (err) {
      assert.match((err as Error).message, /host not allowed: .*--allow-hosts/);
    }
  }
  const loopback = new AddressPolicy(['127.0.0.1', '::1']);
  assert.equal(checkUrl('url', 'http://127.0.0.1:9/x', loopback), 'http://127.0.0.1:9/x');
  assert.equal(checkUrl('url', 'http://[::1]:9/x', loopback), 'http://[::1]:9/x');
  assert.equal(
    fieldOf(() => checkUrl('url', 'http://10.0.0.1/x', loopback)),
    'url',
  );
});

test('resolveFireAt: fireAt, now + delay, neither, or both (refused)', () => {
  const now = Date.UTC(2026, 0, 1);
  assert.equal(resolveFireAt(now, '2026-01-02T00:00:00Z', undefined), Date.UTC(2026, 0, 2));
  assert.equal(resolveFireAt(now, undefined, '1m'), now + 60_000);
  assert.equal(resolveFireAt(now, undefined, undefined), null);
  assert.equal(
    fieldOf(() => resolveFireAt(now, 1, '1m')),
    'delay',
  );
  assert.equal(
    fieldOf(() => resolveFireAt(now, 5, undefined)),
    'fireAt',
  );
  assert.equal(
    fieldOf(() => resolveFireAt(now, undefined, '1 minute')),
    'delay',
  );
});

test('resolveRetry turns RangeErrors into 400s naming the field', () => {
  assert.equal(resolveRetry(undefined), null);
  assert.equal(resolveRetry({ maxAttempts: 3 })?.maxAttempts, 3);
  assert.equal(
    fieldOf(() => resolveRetry({ maxAttempts: 0 })),
    'retry.maxAttempts',
  );
  assert.equal(
    fieldOf(() => resolveRetry({ minBackoff: 'x' })),
    'retry.minBackoff',
  );
  assert.equal(
    fieldOf(() => resolveRetry({ coefficient: 11 })),
    'retry.coefficient',
  );
});

test('payload: nesting bound, non-finite numbers, size limit (413)', () => {
  let deep: unknown = 1;
  for (let i = 0; i < PAYLOAD_DEPTH_MAX; i++) deep = [deep];
  checkPayloadShape(deep);
  assert.equal(
    fieldOf(() => checkPayloadShape([deep])),
    'payload',
  );
  assert.equal(
    fieldOf(() => checkPayloadShape({ a: [1, Infinity] })),
    'payload',
  );
  assert.equal(
    fieldOf(() => checkPayloadShape(-Infinity)),
    'payload',
  );
  assert.equal(payloadText(undefined, 10), 'null');
  assert.equal(payloadText({ a: 'é' }, 10), '{"a":"é"}');
  assert.throws(
    () => payloadText({ a: 'éé' }, 10),
    (err: unknown) => err instanceof BelfryError && err.status === 413,
  );
});

test('parseIfMatch: quoted, bare, weak, any; else 400', () => {
  assert.equal(parseIfMatch('"3"'), 3);
  assert.equal(parseIfMatch('3'), 3);
  assert.equal(parseIfMatch('W/"12"'), 12);
  assert.equal(parseIfMatch('*'), undefined);
  assert.equal(parseIfMatch(undefined), undefined);
  for (const bad of ['"x"', '', '1.5', '"1", "2"', '9'.repeat(20)])
    assert.equal(
      fieldOf(() => parseIfMatch(bad)),
      'If-Match',
    );
});
