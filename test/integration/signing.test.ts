/**
 * Signing secrets: write-only (shown once, never returned again, never in a list), and rotated
 * with a grace period during which deliveries carry a signature for the old and the new secret.
 * A destination signs with its own; a delivery to an inline URL with its tenant's, verified here
 * by a real loopback receiver, through rotations, and for a tenant made before tenants had one.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { activeSecrets, verifySignature } from '../../src/channels/http/signing.ts';
import { ADMIN_KEY, startTestNode, type TestNode } from '../support/node.ts';
import { startReceiver, type ReceivedRequest, type Receiver } from '../support/receiver.ts';

function verifies(req: ReceivedRequest, secret: string): boolean {
  return verifySignature({
    msgId: String(req.headers['webhook-id']),
    timestampSec: String(req.headers['webhook-timestamp']),
    body: req.body,
    signatureHeader: String(req.headers['webhook-signature']),
    secret,
    nowSec: Math.floor(Date.now() / 1000),
  });
}

describe('signing secrets', () => {
  let t: TestNode;
  let rx: Receiver;

  before(async () => {
    t = await startTestNode();
    rx = await startReceiver();
  });
  after(async () => {
    await t.close();
    await rx.close();
  });

  async function deliver(id: string): Promise<ReceivedRequest> {
    assert.equal((await t.api('POST', '/v1/events', { id, destination: 'signed', payload: { id } })).status, 201);
    await rx.waitFor((reqs) => reqs.some((r) => r.headers['webhook-id'] === id), 10_000);
    return rx.requests.find((r) => r.headers['webhook-id'] === id)!;
  }

  it('never returns a secret after the response that made it', async () => {
    const put = await t.api('PUT', '/v1/destinations/signed', { url: `${rx.url}/hook` });
    assert.equal(put.status, 201);
    const first: string = put.body.secret;
    assert.match(first, /^whsec_/);
    for (const res of [
      await t.api('GET', '/v1/destinations/signed'),
      await t.api('GET', '/v1/destinations'),
      await t.api('PUT', '/v1/destinations/signed', { url: `${rx.url}/hook` }),
    ]) {
      assert.ok(!JSON.stringify(res.body).includes(first), 'secret leaked');
      assert.ok(!JSON.stringify(res.body).includes('whsec_'), 'a secret leaked');
    }
    assert.ok(verifies(await deliver('before-rotation'), first));
  });

  it('a rotation signs with the new and the old secret through the grace period, then the new only', async () => {
    const [{ secret: old }] = (await t.node.store.destinationGet({ tenantId: t.tenantId, name: 'signed' }))!.secrets;
    const rotated = await t.api('POST', '/v1/destinations/signed/rotate-secret', { gracePeriod: '1h' });
    assert.equal(rotated.status, 200, JSON.stringify(rotated.body));
    const fresh: string = rotated.body.secret;
    assert.notEqual(fresh, old);
    assert.ok(Math.abs(Date.parse(rotated.body.previousSecretsExpireAt) - (Date.now() + 3_600_000)) < 10_000);
    assert.ok(!JSON.stringify((await t.api('GET', '/v1/destinations/signed')).body).includes(fresh));

    const during = await deliver('during-grace');
    assert.equal(String(during.headers['webhook-signature']).split(' ').length, 2);
    assert.ok(verifies(during, fresh), 'the new secret verifies');
    assert.ok(verifies(during, old), 'the old secret still verifies');

    // Past the grace period (judged per delivery, as the dispatcher does), the old one stops signing.
    const stored = (await t.node.store.destinationGet({ tenantId: t.tenantId, name: 'signed' }))!.secrets;
    assert.deepEqual(activeSecrets(stored, Date.now()), [fresh, old]);
    assert.deepEqual(activeSecrets(stored, Date.now() + 3_600_000 + 1_000), [fresh]);

    // An old secret whose grace period has ended no longer signs (judged at each delivery).
    const record = (await t.node.store.destinationGet({ tenantId: t.tenantId, name: 'signed' }))!;
    await t.node.store.destinationPut({
      destination: { ...record, secrets: [stored[0], { secret: old, expiresAt: Date.now() - 1 }] },
    });
    await t.node.dispatcher.destinationChanged(t.tenantId, 'signed');
    const expired = await deliver('after-grace');
    assert.equal(String(expired.headers['webhook-signature']).split(' ').length, 1);
    assert.ok(verifies(expired, fresh) && !verifies(expired, old));

    // A rotation without grace drops every old secret at once.
    const now = (await t.api('POST', '/v1/destinations/signed/rotate-secret', { gracePeriod: 0 })).body
      .secret as string;
    const after = await deliver('after-rotation');
    assert.equal(String(after.headers['webhook-signature']).split(' ').length, 1);
    assert.ok(verifies(after, now));
    assert.ok(!verifies(after, fresh) && !verifies(after, old));
  });

  it('rotate-secret: the default grace is 24h; bounds and unknown destinations are refused', async () => {
    const res = await t.api('POST', '/v1/destinations/signed/rotate-secret');
    assert.equal(res.status, 200);
    assert.ok(Math.abs(Date.parse(res.body.previousSecretsExpireAt) - (Date.now() + 86_400_000)) < 10_000);
    assert.equal((await t.api('POST', '/v1/destinations/signed/rotate-secret', { gracePeriod: '8d' })).status, 400);
    assert.equal((await t.api('POST', '/v1/destinations/signed/rotate-secret', { secret: 'nope' })).status, 400);
    assert.equal((await t.api('POST', '/v1/destinations/signed/rotate-secret', { grace: '1h' })).status, 400);
    assert.equal((await t.api('POST', '/v1/destinations/missing/rotate-secret')).status, 404);
    // Repeated rotations keep a bounded set of secrets.
    for (let i = 0; i < 10; i++) await t.api('POST', '/v1/destinations/signed/rotate-secret');
    assert.ok((await t.node.store.destinationGet({ tenantId: t.tenantId, name: 'signed' }))!.secrets.length <= 5);
  });
});

describe('the tenant signing secret signs every delivery to an inline URL', () => {
  let t: TestNode;
  let rx: Receiver;

  before(async () => {
    t = await startTestNode();
    rx = await startReceiver();
  });
  after(async () => {
    await t.close();
    await rx.close();
  });

  async function newTenant(name: string): Promise<{ id: string; key: string; secret: string }> {
    const made = await t.api('POST', '/v1/tenants', { name }, ADMIN_KEY);
    assert.equal(made.status, 201);
    const key = await t.api('POST', `/v1/tenants/${made.body.id}/keys`, {}, ADMIN_KEY);
    return { id: made.body.id, key: key.body.key, secret: made.body.signingSecret };
  }

  /** Schedules an event to an inline URL (due now unless `fireAt`) and returns its delivery. */
  async function deliverInline(key: string, id: string, fireAt?: number): Promise<ReceivedRequest> {
    const body = {
      id,
      destination: { url: `${rx.url}/inline/${id}` },
      payload: { id },
      ...(fireAt === undefined ? {} : { fireAt }),
    };
    assert.equal((await t.api('POST', '/v1/events', body, key)).status, 201);
    await rx.waitFor((reqs) => reqs.some((r) => r.headers['webhook-id'] === id), 15_000);
    return rx.requests.find((r) => r.headers['webhook-id'] === id)!;
  }

  const signatures = (req: ReceivedRequest) =>
    String(req.headers['webhook-signature'] ?? '')
      .split(' ')
      .filter(Boolean).length;

  it('signs with the secret returned when the tenant was made, which no GET shows', async () => {
    const a = await newTenant('inline-a');
    const b = await newTenant('inline-b');
    const req = await deliverInline(a.key, 'inline-1');
    assert.equal(signatures(req), 1);
    assert.ok(verifies(req, a.secret), "the tenant's secret verifies");
    assert.ok(!verifies(req, b.secret), "another tenant's does not");
    for (const [path, key] of [
      ['/v1/events/inline-1', a.key],
      [`/v1/tenants/${a.id}`, ADMIN_KEY],
      ['/v1/tenants', ADMIN_KEY],
      ['/v1/limits', a.key],
    ] as const) {
      const res = await t.api('GET', path, undefined, key);
      assert.equal(res.status, 200);
      assert.ok(!JSON.stringify(res.body).includes('whsec_'), `GET ${path} shows no secret`);
    }
  });

  it('through a rotation: the old and the new secret sign during the grace period, the new one alone after it', async () => {
    const a = await newTenant('inline-rotation');
    const rotated = await t.api('POST', '/v1/signing-secret/rotate', { gracePeriod: '3s' }, a.key);
    assert.equal(rotated.status, 200, JSON.stringify(rotated.body));
    const fresh: string = rotated.body.secret;
    const graceEndsAt = Date.parse(rotated.body.previousSecretsExpireAt);

    const during = await deliverInline(a.key, 'rotation-during');
    assert.ok(Date.now() < graceEndsAt, 'delivered within the grace period');
    assert.equal(signatures(during), 2);
    assert.ok(verifies(during, fresh) && verifies(during, a.secret), 'both secrets verify');

    // Due just after the grace period ends, so the node signs it with what is active then.
    const afterGrace = await deliverInline(a.key, 'rotation-after', graceEndsAt + 1);
    assert.ok(afterGrace.receivedAt > graceEndsAt);
    assert.equal(signatures(afterGrace), 1);
    assert.ok(verifies(afterGrace, fresh), 'the new secret verifies');
    assert.ok(!verifies(afterGrace, a.secret), 'the old one no longer signs');

    // The operator rotates too; without grace the previous secret stops at once.
    const byAdmin = await t.api('POST', `/v1/tenants/${a.id}/signing-secret/rotate`, { gracePeriod: 0 }, ADMIN_KEY);
    assert.equal(byAdmin.status, 200);
    const req = await deliverInline(a.key, 'rotation-admin');
    assert.equal(signatures(req), 1);
    assert.ok(verifies(req, byAdmin.body.secret) && !verifies(req, fresh));
  });

  it('a tenant made before tenants had secrets gets one at its first inline delivery, and a rotation gives it one it knows', async () => {
    const id = `t_legacy_${Date.now()}`;
    await t.node.store.tenantCreate({ id, name: 'legacy', settings: {}, createdAt: Date.now() });
    assert.deepEqual(await t.node.store.tenantSecretsGet({ id }), []);
    const key = (await t.api('POST', `/v1/tenants/${id}/keys`, {}, ADMIN_KEY)).body.key as string;

    const first = await deliverInline(key, 'legacy-1');
    const stored = (await t.node.store.tenantSecretsGet({ id }))!;
    assert.equal(stored.length, 1, 'one secret was made, and kept');
    assert.equal(signatures(first), 1);
    assert.ok(verifies(first, stored[0].secret), 'signed, with the secret it made');

    const rotated = await t.api('POST', '/v1/signing-secret/rotate', { gracePeriod: '1h' }, key);
    const next = await deliverInline(key, 'legacy-2');
    assert.ok(verifies(next, rotated.body.secret) && verifies(next, stored[0].secret));
  });
});
