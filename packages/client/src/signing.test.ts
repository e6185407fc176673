import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { decodeSecret, signPayload, verifySignature } from './signing.ts';

// The reference vector of the Standard Webhooks libraries (test "sign function works").
const VECTOR = {
  secret: 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw',
  msgId: 'msg_p5jXN8AQM9LWM0D4loKWxJek',
  timestampSec: 1614265330,
  body: '{"test": 2432232314}',
  signature: 'v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=',
};
const OTHER_SECRET = 'whsec_' + Buffer.alloc(24, 7).toString('base64');

describe('signPayload', () => {
  it('reproduces the Standard Webhooks reference vector', () => {
    const header = signPayload({ ...VECTOR, secrets: [VECTOR.secret] });
    assert.equal(header, VECTOR.signature);
  });

  it('accepts a secret without the whsec_ prefix, as the reference libraries do', () => {
    const header = signPayload({ ...VECTOR, secrets: [VECTOR.secret.slice('whsec_'.length)] });
    assert.equal(header, VECTOR.signature);
  });

  it('signs once per secret, space-separated, newest first', () => {
    const header = signPayload({ ...VECTOR, secrets: [OTHER_SECRET, VECTOR.secret] });
    const parts = header.split(' ');
    assert.equal(parts.length, 2);
    assert.match(parts[0], /^v1,[A-Za-z0-9+/]{43}=$/);
    assert.notEqual(parts[0], VECTOR.signature);
    assert.equal(parts[1], VECTOR.signature);
  });

  it('returns an empty header for no secrets', () => {
    assert.equal(signPayload({ ...VECTOR, secrets: [] }), '');
  });

  it('rejects malformed secrets and timestamps', () => {
    assert.throws(() => signPayload({ ...VECTOR, secrets: ['whsec_not base64!'] }), RangeError);
    assert.throws(() => signPayload({ ...VECTOR, secrets: ['whsec_'] }), RangeError);
    assert.throws(() => signPayload({ ...VECTOR, timestampSec: 1.5, secrets: [VECTOR.secret] }), RangeError);
    assert.throws(() => decodeSecret(''), RangeError);
  });
});

describe('verifySignature', () => {
  const base = {
    msgId: VECTOR.msgId,
    timestampSec: VECTOR.timestampSec,
    body: VECTOR.body,
    signatureHeader: VECTOR.signature,
    secret: VECTOR.secret,
    nowSec: VECTOR.timestampSec,
  };

  it('accepts the reference vector, with the timestamp as number or header text', () => {
    assert.equal(verifySignature(base), true);
    assert.equal(verifySignature({ ...base, timestampSec: String(VECTOR.timestampSec) }), true);
  });

  it('accepts when any one of several signatures matches (rotation)', () => {
    const header = signPayload({ ...VECTOR, secrets: [OTHER_SECRET, VECTOR.secret] });
    assert.equal(verifySignature({ ...base, signatureHeader: header }), true);
    assert.equal(verifySignature({ ...base, signatureHeader: header, secret: OTHER_SECRET }), true);
  });

  it('rejects a tampered body, id or timestamp', () => {
    assert.equal(verifySignature({ ...base, body: '{"test": 2432232315}' }), false);
    assert.equal(verifySignature({ ...base, msgId: 'msg_other' }), false);
    assert.equal(verifySignature({ ...base, timestampSec: VECTOR.timestampSec + 1 }), false);
  });

  it('rejects a wrong secret', () => {
    assert.equal(verifySignature({ ...base, secret: OTHER_SECRET }), false);
  });

  it('rejects stale and future timestamps beyond the tolerance', () => {
    assert.equal(verifySignature({ ...base, nowSec: VECTOR.timestampSec + 300 }), true);
    assert.equal(verifySignature({ ...base, nowSec: VECTOR.timestampSec + 301 }), false);
    assert.equal(verifySignature({ ...base, nowSec: VECTOR.timestampSec - 301 }), false);
    assert.equal(verifySignature({ ...base, nowSec: VECTOR.timestampSec + 20, toleranceSec: 10 }), false);
  });

  it('returns false, never throws, on malformed input', () => {
    assert.equal(verifySignature({ ...base, signatureHeader: '' }), false);
    assert.equal(verifySignature({ ...base, signatureHeader: 'garbage' }), false);
    assert.equal(verifySignature({ ...base, signatureHeader: 'v2,' + VECTOR.signature.slice(3) }), false);
    assert.equal(verifySignature({ ...base, signatureHeader: 'v1,short' }), false);
    assert.equal(verifySignature({ ...base, timestampSec: 'soon' }), false);
    assert.equal(verifySignature({ ...base, secret: 'whsec_!!' }), false);
  });
});
