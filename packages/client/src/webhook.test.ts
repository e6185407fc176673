/** verifyWebhook against the reference Standard Webhooks library's own signatures, and the other way round. */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { describe, test } from 'node:test';
import { Webhook } from 'standardwebhooks';
import { signPayload } from './signing.ts';
import { verifyWebhook, WebhookVerificationError, type WebhookVerificationFailure } from './webhook.ts';

const newSecret = () => `whsec_${randomBytes(32).toString('base64')}`;
const NOW_MS = Date.UTC(2026, 10, 23, 12, 0, 0);
const BODY = JSON.stringify({ orderId: 8812, note: 'zürich ✓' });

/** Headers as the reference library signs them, at `atMs`. */
function referenceHeaders(
  secret: string,
  id: string,
  atMs: number,
  body: string | Buffer = BODY,
): Record<string, string> {
  const at = new Date(atMs);
  return {
    'webhook-id': id,
    'webhook-timestamp': String(Math.floor(atMs / 1000)),
    'webhook-signature': new Webhook(secret).sign(id, at, body),
  };
}

function failsWith(reason: WebhookVerificationFailure, fn: () => unknown): void {
  assert.throws(fn, (err: unknown) => err instanceof WebhookVerificationError && err.reason === reason);
}

describe('verifyWebhook', () => {
  test("accepts the reference library's signature and returns the id, timestamp and payload", () => {
    const secret = newSecret();
    const verified = verifyWebhook(secret, referenceHeaders(secret, 'evt-1', NOW_MS), BODY, { nowMs: NOW_MS });
    assert.deepEqual(verified, {
      id: 'evt-1',
      timestampSec: NOW_MS / 1000,
      payload: { orderId: 8812, note: 'zürich ✓' },
    });
  });

  test('accepts the raw body as bytes, and fetch Headers or mixed-case header names', () => {
    const secret = newSecret();
    const headers = referenceHeaders(secret, 'evt-2', NOW_MS);
    const bytes = Buffer.from(BODY, 'utf8');
    assert.equal(verifyWebhook(secret, new Headers(headers), bytes, { nowMs: NOW_MS }).id, 'evt-2');
    const mixed = {
      'Webhook-Id': headers['webhook-id'],
      'Webhook-Timestamp': headers['webhook-timestamp'],
      'Webhook-Signature': headers['webhook-signature'],
    };
    assert.equal(verifyWebhook(secret, mixed, new Uint8Array(bytes), { nowMs: NOW_MS }).id, 'evt-2');
  });

  test('the reference library accepts what Belfry signs, with one or several secrets', () => {
    const [oldSecret, newer] = [newSecret(), newSecret()];
    const timestampSec = NOW_MS / 1000;
    const signature = signPayload({ msgId: 'evt-3', timestampSec, body: BODY, secrets: [newer, oldSecret] });
    assert.equal(signature.split(' ').length, 2);
    const headers = {
      'webhook-id': 'evt-3',
      'webhook-timestamp': String(timestampSec),
      'webhook-signature': signature,
    };
    // The reference checks the timestamp against the real clock: sign "now" for it.
    const nowSec = Math.floor(Date.now() / 1000);
    const live = {
      ...headers,
      'webhook-timestamp': String(nowSec),
      'webhook-signature': signPayload({
        msgId: 'evt-3',
        timestampSec: nowSec,
        body: BODY,
        secrets: [newer, oldSecret],
      }),
    };
    assert.deepEqual(new Webhook(oldSecret).verify(BODY, live), JSON.parse(BODY));
    assert.deepEqual(new Webhook(newer).verify(BODY, live), JSON.parse(BODY));
    // And this verifier with either secret.
    assert.equal(verifyWebhook(oldSecret, headers, BODY, { nowMs: NOW_MS }).id, 'evt-3');
    assert.equal(verifyWebhook(newer, headers, BODY, { nowMs: NOW_MS }).id, 'evt-3');
  });

  test('a header with several v1 signatures verifies when any of them matches; a receiver may hold several secrets', () => {
    const [mine, other] = [newSecret(), newSecret()];
    const ref = referenceHeaders(mine, 'evt-4', NOW_MS);
    const otherSig = new Webhook(other).sign('evt-4', new Date(NOW_MS), BODY);
    const headers = { ...ref, 'webhook-signature': `v2,abc ${otherSig} ${ref['webhook-signature']}` };
    assert.equal(verifyWebhook(mine, headers, BODY, { nowMs: NOW_MS }).id, 'evt-4');
    assert.equal(
      verifyWebhook([newSecret(), mine], referenceHeaders(mine, 'evt-4', NOW_MS), BODY, { nowMs: NOW_MS }).id,
      'evt-4',
    );
  });

  test('a changed body, id or timestamp, or another secret, is a bad signature', () => {
    const secret = newSecret();
    const headers = referenceHeaders(secret, 'evt-5', NOW_MS);
    failsWith('bad_signature', () => verifyWebhook(secret, headers, BODY.replace('8812', '8813'), { nowMs: NOW_MS }));
    failsWith('bad_signature', () =>
      verifyWebhook(secret, { ...headers, 'webhook-id': 'evt-6' }, BODY, { nowMs: NOW_MS }),
    );
    failsWith('bad_signature', () =>
      verifyWebhook(secret, { ...headers, 'webhook-timestamp': String(NOW_MS / 1000 + 1) }, BODY, { nowMs: NOW_MS }),
    );
    failsWith('bad_signature', () => verifyWebhook(newSecret(), headers, BODY, { nowMs: NOW_MS }));
    failsWith('bad_signature', () =>
      verifyWebhook(secret, { ...headers, 'webhook-signature': 'v1,' }, BODY, { nowMs: NOW_MS }),
    );
    failsWith('bad_signature', () => verifyWebhook('not-a-secret!', headers, BODY, { nowMs: NOW_MS }));
  });

  test('the timestamp must lie within 5 minutes of now, either side', () => {
    const secret = newSecret();
    const atEdge = referenceHeaders(secret, 'evt-7', NOW_MS - 300_000);
    assert.equal(verifyWebhook(secret, atEdge, BODY, { nowMs: NOW_MS }).id, 'evt-7');
    failsWith('timestamp_out_of_tolerance', () =>
      verifyWebhook(secret, referenceHeaders(secret, 'evt-7', NOW_MS - 301_000), BODY, { nowMs: NOW_MS }),
    );
    failsWith('timestamp_out_of_tolerance', () =>
      verifyWebhook(secret, referenceHeaders(secret, 'evt-7', NOW_MS + 301_000), BODY, { nowMs: NOW_MS }),
    );
    assert.equal(
      verifyWebhook(secret, referenceHeaders(secret, 'evt-7', NOW_MS - 3_600_000), BODY, {
        nowMs: NOW_MS,
        toleranceSec: 3_600,
      }).id,
      'evt-7',
    );
  });

  test('missing or malformed headers fail with their own reason', () => {
    const secret = newSecret();
    const headers = referenceHeaders(secret, 'evt-8', NOW_MS);
    failsWith('missing_headers', () =>
      verifyWebhook(secret, { ...headers, 'webhook-signature': undefined }, BODY, { nowMs: NOW_MS }),
    );
    failsWith('missing_headers', () => verifyWebhook(secret, {}, BODY, { nowMs: NOW_MS }));
    failsWith('bad_timestamp', () =>
      verifyWebhook(secret, { ...headers, 'webhook-timestamp': '2026-11-23T12:00:00Z' }, BODY, { nowMs: NOW_MS }),
    );
  });
});
