/**
 * Tenant isolation, endpoint by endpoint: every route of the OpenAPI document that a tenant key
 * may call is walked with tenant B's key and the ids of tenant A's objects (an event in each
 * state that matters, a destination, a key). B must get exactly what it gets for ids that do not
 * exist at all (so it cannot even learn that A's exist), never one of A's objects in a list, and
 * A's objects must come out unchanged. A route the walk does not know fails the test, so a new
 * endpoint cannot skip it.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { InjectOptions } from 'fastify';
import { ADMIN_KEY, bearer, makeTestApp, moveEvent, type TestApp } from '../support/app.ts';

let t: TestApp;
/** A's objects. */
const A = {
  scheduled: 'a-secret-order',
  archived: 'a-archived-order',
  destination: 'a-private-hooks',
  schedule: 'a-private-schedule',
  source: 'a-private-source',
  keyId: '',
  bulkId: '',
  marker: 'a-confidential-7f3e',
};

before(async () => {
  t = await makeTestApp();
  const as = bearer(t.tenantKey);
  const put = await t.app.inject({
    method: 'PUT',
    url: `/v1/destinations/${A.destination}`,
    headers: as,
    payload: { url: `https://${A.marker}.example.com/hook` },
  });
  assert.equal(put.statusCode, 201);
  for (const id of [A.scheduled, A.archived]) {
    const res = await t.app.inject({
      method: 'POST',
      url: '/v1/events',
      headers: as,
      payload: { id, destination: A.destination, delay: '1h', payload: { marker: A.marker } },
    });
    assert.equal(res.statusCode, 201);
  }
  const sch = await t.app.inject({
    method: 'POST',
    url: '/v1/schedules',
    headers: as,
    payload: { id: A.schedule, every: '1h', destination: A.destination, payload: { marker: A.marker } },
  });
  assert.equal(sch.statusCode, 201);
  const src = await t.app.inject({
    method: 'PUT',
    url: `/v1/sources/${A.source}`,
    headers: as,
    payload: { kind: 'kafka', brokers: ['127.0.0.1:9092'], topic: A.marker },
  });
  assert.equal(src.statusCode, 201);
  await t.clock.advance(3_600_000);
  await moveEvent(t.store, t.tenantId, A.archived, 'archived', t.clock.now());
  A.keyId = (await t.app.inject({ method: 'GET', url: '/v1/keys', headers: as })).json().keys[0].id;
  A.bulkId = (
    await t.app.inject({
      method: 'POST',
      url: '/v1/events/bulk',
      headers: as,
      payload: { filter: { type: 'a.nothing' }, action: 'cancel' },
    })
  ).json().id;
});
after(() => t.cleanup());

/** What B sends to one route: the path with A's ids filled in, and a body. */
interface Probe {
  path: string;
  /** The same request naming objects that exist nowhere. */
  nowherePath: string;
  body?: (ids: { event: string; destination: string }) => unknown;
  /** B makes its own object under the name (ids are per tenant): walked last, so earlier probes find nothing of B's there. */
  creates?: boolean;
}

const NOWHERE = {
  event: 'no-such-event-91',
  destination: 'no-such-destination-91',
  schedule: 'no-such-schedule-91',
  source: 'no-such-source-91',
  keyId: 'k_nosuchkey91',
  bulkId: 'bulk_00000000000000000000000091',
};

/** How to walk each tenant route; keyed by "METHOD /openapi/path". */
const WALK: Record<string, (a: typeof A) => Probe> = {
  'POST /v1/events': () => ({
    creates: true,
    path: '/v1/events',
    nowherePath: '/v1/events',
    body: (ids) => ({ id: ids.event, destination: { url: 'https://b.example.com/' }, delay: '1h' }),
  }),
  'POST /v1/events/batch': () => ({
    creates: true,
    path: '/v1/events/batch',
    nowherePath: '/v1/events/batch',
    body: (ids) => ({
      events: [{ id: `${ids.event}-batch`, destination: { url: 'https://b.example.com/' }, delay: '1h' }],
    }),
  }),
  'GET /v1/events': () => ({
    path: `/v1/events?destination=${A.destination}`,
    nowherePath: `/v1/events?destination=${NOWHERE.destination}`,
  }),
  'GET /v1/events/{id}': (a) => ({ path: `/v1/events/${a.scheduled}`, nowherePath: `/v1/events/${NOWHERE.event}` }),
  'PATCH /v1/events/{id}': (a) => ({
    path: `/v1/events/${a.scheduled}`,
    nowherePath: `/v1/events/${NOWHERE.event}`,
    body: () => ({ delay: '5m' }),
  }),
  'DELETE /v1/events/{id}': (a) => ({ path: `/v1/events/${a.scheduled}`, nowherePath: `/v1/events/${NOWHERE.event}` }),
  'GET /v1/events/{id}/transitions': (a) => ({
    path: `/v1/events/${a.scheduled}/transitions`,
    nowherePath: `/v1/events/${NOWHERE.event}/transitions`,
  }),
  'POST /v1/events/{id}/replay': (a) => ({
    path: `/v1/events/${a.archived}/replay`,
    nowherePath: `/v1/events/${NOWHERE.event}/replay`,
  }),
  'PUT /v1/destinations/{name}': (a) => ({
    creates: true,
    path: `/v1/destinations/${a.destination}`,
    nowherePath: `/v1/destinations/${NOWHERE.destination}`,
    body: () => ({ url: 'https://b.example.com/hook' }),
  }),
  'GET /v1/destinations/{name}': (a) => ({
    path: `/v1/destinations/${a.destination}`,
    nowherePath: `/v1/destinations/${NOWHERE.destination}`,
  }),
  'GET /v1/destinations/{name}/health': (a) => ({
    path: `/v1/destinations/${a.destination}/health`,
    nowherePath: `/v1/destinations/${NOWHERE.destination}/health`,
  }),
  'DELETE /v1/destinations/{name}': (a) => ({
    path: `/v1/destinations/${a.destination}`,
    nowherePath: `/v1/destinations/${NOWHERE.destination}`,
  }),
  'POST /v1/destinations/{name}/rotate-secret': (a) => ({
    path: `/v1/destinations/${a.destination}/rotate-secret`,
    nowherePath: `/v1/destinations/${NOWHERE.destination}/rotate-secret`,
    body: () => ({}),
  }),
  'POST /v1/schedules': () => ({
    creates: true,
    path: '/v1/schedules',
    nowherePath: '/v1/schedules',
    body: (ids) => ({ id: ids.event, every: '1h', destination: { url: 'https://b.example.com/' } }),
  }),
  'GET /v1/schedules': () => ({ path: '/v1/schedules', nowherePath: '/v1/schedules' }),
  'POST /v1/schedules/preview': () => ({
    path: '/v1/schedules/preview',
    nowherePath: '/v1/schedules/preview',
    body: () => ({ every: '1h' }),
  }),
  'GET /v1/schedules/{id}': (a) => ({
    path: `/v1/schedules/${a.schedule}`,
    nowherePath: `/v1/schedules/${NOWHERE.schedule}`,
  }),
  'PATCH /v1/schedules/{id}': (a) => ({
    path: `/v1/schedules/${a.schedule}`,
    nowherePath: `/v1/schedules/${NOWHERE.schedule}`,
    body: () => ({ paused: true }),
  }),
  'DELETE /v1/schedules/{id}': (a) => ({
    path: `/v1/schedules/${a.schedule}`,
    nowherePath: `/v1/schedules/${NOWHERE.schedule}`,
  }),
  'POST /v1/schedules/{id}/trigger': (a) => ({
    path: `/v1/schedules/${a.schedule}/trigger`,
    nowherePath: `/v1/schedules/${NOWHERE.schedule}/trigger`,
  }),
  'PUT /v1/sources/{name}': (a) => ({
    creates: true,
    path: `/v1/sources/${a.source}`,
    nowherePath: `/v1/sources/${NOWHERE.source}`,
    body: () => ({ kind: 'kafka', brokers: ['127.0.0.1:9092'], topic: 'b-topic' }),
  }),
  'GET /v1/sources': () => ({ path: '/v1/sources', nowherePath: '/v1/sources' }),
  'GET /v1/sources/{name}': (a) => ({ path: `/v1/sources/${a.source}`, nowherePath: `/v1/sources/${NOWHERE.source}` }),
  'DELETE /v1/sources/{name}': (a) => ({
    path: `/v1/sources/${a.source}`,
    nowherePath: `/v1/sources/${NOWHERE.source}`,
  }),
  'GET /v1/destinations': () => ({ path: '/v1/destinations', nowherePath: '/v1/destinations' }),
  'GET /v1/limits': () => ({ path: '/v1/limits', nowherePath: '/v1/limits' }),
  'GET /v1/keys': () => ({ path: '/v1/keys', nowherePath: '/v1/keys' }),
  'POST /v1/keys': () => ({ path: '/v1/keys', nowherePath: '/v1/keys' }),
  'DELETE /v1/keys/{keyId}': (a) => ({ path: `/v1/keys/${a.keyId}`, nowherePath: `/v1/keys/${NOWHERE.keyId}` }),
  'POST /v1/keys/{keyId}/rotate': (a) => ({
    path: `/v1/keys/${a.keyId}/rotate`,
    nowherePath: `/v1/keys/${NOWHERE.keyId}/rotate`,
    body: () => ({}),
  }),
  // The tenant comes from the key alone: B rotates its own secret, never A's (snapshotA checks).
  // A dry run over A's destination name selects none of A's events (a real run would make B a job of its own).
  'POST /v1/events/bulk': () => ({
    path: '/v1/events/bulk',
    nowherePath: '/v1/events/bulk',
    body: (ids) => ({ filter: { destination: ids.destination }, action: 'cancel', dryRun: true }),
  }),
  'GET /v1/bulk/{id}': (a) => ({ path: `/v1/bulk/${a.bulkId}`, nowherePath: `/v1/bulk/${NOWHERE.bulkId}` }),
  'GET /v1/forecast': () => ({
    path: '/v1/forecast?to=2h&by=destination',
    nowherePath: '/v1/forecast?to=2h&by=destination',
  }),
  // Pull delivery: a claim of A's destination name, and an ack, nack or extend of A's event (409 as
  // for an id that exists nowhere: a receipt never tells whether an id exists).
  'POST /v1/destinations/{name}/claim': (a) => ({
    path: `/v1/destinations/${a.destination}/claim`,
    nowherePath: `/v1/destinations/${NOWHERE.destination}/claim`,
    body: () => ({ max: 5 }),
  }),
  'POST /v1/events/{id}/ack': (a) => ({
    path: `/v1/events/${a.scheduled}/ack`,
    nowherePath: `/v1/events/${NOWHERE.event}/ack`,
    body: () => ({ receipt: 'r-guess' }),
  }),
  'POST /v1/events/{id}/nack': (a) => ({
    path: `/v1/events/${a.scheduled}/nack`,
    nowherePath: `/v1/events/${NOWHERE.event}/nack`,
    body: () => ({ receipt: 'r-guess', discard: true }),
  }),
  'POST /v1/events/settle': () => ({
    path: '/v1/events/settle',
    nowherePath: '/v1/events/settle',
    body: (ids) => ({
      ack: [{ id: ids.event, receipt: 'r-guess' }],
      nack: [{ id: `${ids.event}-n`, receipt: 'r-guess' }],
    }),
  }),
  'POST /v1/events/{id}/extend': (a) => ({
    path: `/v1/events/${a.scheduled}/extend`,
    nowherePath: `/v1/events/${NOWHERE.event}/extend`,
    body: () => ({ receipt: 'r-guess', visibilityTimeout: '5s' }),
  }),
  'POST /v1/signing-secret/rotate': () => ({
    path: '/v1/signing-secret/rotate',
    nowherePath: '/v1/signing-secret/rotate',
    body: () => ({}),
  }),
};

type Operation = { method: string; path: string; tags: string[] };

/** Every operation of the OpenAPI document. */
async function operations(): Promise<Operation[]> {
  const doc = (await t.app.inject({ method: 'GET', url: '/openapi.json' })).json();
  return Object.entries(doc.paths as Record<string, Record<string, { tags?: string[] }>>).flatMap(([path, ops]) =>
    Object.entries(ops).map(([m, op]) => ({ method: m.toUpperCase(), path, tags: op.tags ?? [] })),
  );
}

/** A response with the volatile parts (ids, times, generated keys) taken out, to compare two. */
function shape(res: { statusCode: number; body: string }, ids: string[]): string {
  let body = res.body;
  for (const id of ids) body = body.split(id).join('<id>');
  body = body
    .replace(/\d{4}-\d\d-\d\dT[\d:.]+Z/g, '<time>')
    .replace(/"(k_|t_)?[0-9a-z]{26}"/g, '"<ulid>"')
    .replace(/bk_[A-Za-z0-9_-]{43}/g, '<key>')
    .replace(/whsec_[A-Za-z0-9+/=]+/g, '<secret>')
    .replace(/"prefix":"[^"]*"/g, '"prefix":"<p>"');
  return `${res.statusCode} ${body}`;
}

async function snapshotA() {
  const scheduled = await t.store.eventGet({ tenantId: t.tenantId, id: A.scheduled });
  const archived = await t.store.eventGet({ tenantId: t.tenantId, id: A.archived });
  const destination = await t.store.destinationGet({ tenantId: t.tenantId, name: A.destination });
  const keys = await t.store.apiKeyList({ tenantId: t.tenantId });
  const events = (await t.store.eventList({ tenantId: t.tenantId, limit: 1000 })).events.map(
    (e) => `${e.id}@${e.version}`,
  );
  const signingSecrets = await t.store.tenantSecretsGet({ id: t.tenantId });
  const schedule = await t.store.scheduleGet({ tenantId: t.tenantId, id: A.schedule });
  const source = await t.store.sourceGet({ tenantId: t.tenantId, name: A.source });
  return { scheduled, archived, destination, keys, events, signingSecrets, schedule, source };
}

describe('tenant isolation: every endpoint, with B’s key and A’s ids', () => {
  test('B gets what it gets for ids that exist nowhere, sees none of A’s objects, and changes nothing of A’s', async () => {
    // Admin routes refuse tenant keys (next test); operations need no key and show no tenant data.
    const routes = (await operations())
      .filter((o) => !o.tags.includes('admin') && !o.tags.includes('operations'))
      .map((o) => [o.method, o.path] as const);
    const unknown = routes.filter(([m, p]) => !WALK[`${m} ${p}`]).map(([m, p]) => `${m} ${p}`);
    assert.deepEqual(unknown, [], 'tenant routes the isolation walk does not cover: add them to WALK');
    assert.ok(routes.length >= Object.keys(WALK).length);

    const before = await snapshotA();
    const createsLast = (r: readonly [string, string]) => (WALK[`${r[0]} ${r[1]}`](A).creates ? 1 : 0);
    routes.sort((x, y) => createsLast(x) - createsLast(y));
    for (const [method, route] of routes) {
      const probe = WALK[`${method} ${route}`](A);
      const send = (path: string, ids: { event: string; destination: string }) =>
        t.app.inject({
          method: method as InjectOptions['method'],
          url: path,
          headers: bearer(t.tenantKeyB),
          ...(probe.body ? { payload: probe.body(ids) as object } : {}),
        });
      const onA = await send(probe.path, { event: A.scheduled, destination: A.destination });
      const where = `${method} ${route}`;
      assert.ok(!onA.body.includes(A.marker), `${where} leaked A's data: ${onA.body.slice(0, 300)}`);
      assert.ok(!onA.body.includes(t.tenantId), `${where} named tenant A`);
      assert.ok(!onA.body.includes(A.keyId) || onA.statusCode === 404, `${where} showed A's key`);
      // Lists show none of A's objects. (B may own objects with the same ids: ids are per tenant,
      // and the walk's creates make some; those carry none of A's data, which the marker shows.)
      if (method === 'GET' && !route.includes('{') && onA.statusCode === 200) {
        for (const id of [A.archived, A.destination, A.schedule, A.source, A.keyId])
          assert.ok(!onA.body.includes(`"${id}"`), `${where} listed A's ${id}`);
      }
      // The answer must not depend on whether A's object exists: B cannot learn of it.
      const onNowhere = await send(probe.nowherePath, { event: NOWHERE.event, destination: NOWHERE.destination });
      const idsA = [A.scheduled, A.archived, A.destination, A.schedule, A.source, A.keyId, A.bulkId];
      const idsNowhere = [
        NOWHERE.event,
        NOWHERE.destination,
        NOWHERE.schedule,
        NOWHERE.source,
        NOWHERE.keyId,
        NOWHERE.bulkId,
      ];
      assert.equal(shape(onA, idsA), shape(onNowhere, idsNowhere), `${where}: B can tell A's object exists`);
    }
    const afterWalk = await snapshotA();
    assert.deepEqual(afterWalk.scheduled, before.scheduled, "A's scheduled event changed");
    assert.deepEqual(afterWalk.archived, before.archived, "A's archived event changed");
    assert.deepEqual(afterWalk.destination, before.destination, "A's destination changed");
    assert.deepEqual(afterWalk.keys, before.keys, "A's keys changed");
    assert.deepEqual(afterWalk.events, before.events, 'events were added to or removed from A');
    assert.deepEqual(afterWalk.signingSecrets, before.signingSecrets, "A's signing secret changed");
    assert.deepEqual(afterWalk.schedule, before.schedule, "A's schedule changed");
    assert.deepEqual(afterWalk.source, before.source, "A's source changed");
    assert.equal(
      (await t.app.inject({ method: 'GET', url: '/v1/events', headers: bearer(t.tenantKey) })).statusCode,
      200,
      "A's key still works",
    );
  });

  test('B cannot reach A through any admin route', async () => {
    const admin = (await operations()).filter((o) => o.tags.includes('admin'));
    assert.ok(admin.length >= 8);
    for (const { method, path } of admin) {
      const url = path.replace('{tenantId}', t.tenantId).replace('{keyId}', A.keyId);
      const res = await t.app.inject({
        method: method as InjectOptions['method'],
        url,
        headers: bearer(t.tenantKeyB),
        ...(method === 'GET' || method === 'DELETE' ? {} : { payload: { limits: { payloadBytesMax: 1 } } }),
      });
      assert.equal(res.statusCode, 403, `${method} ${path}`);
      assert.ok(!res.body.includes(A.marker) && !res.body.includes(A.keyId));
    }
    // Even the admin's view of A is A's alone: nothing of B's shows there.
    const keysA = (
      await t.app.inject({ method: 'GET', url: `/v1/tenants/${t.tenantId}/keys`, headers: bearer(ADMIN_KEY) })
    ).json().keys;
    const keysB = (
      await t.app.inject({ method: 'GET', url: `/v1/tenants/${t.tenantIdB}/keys`, headers: bearer(ADMIN_KEY) })
    ).json().keys;
    assert.ok(keysA.every((k: { id: string }) => !keysB.some((kb: { id: string }) => kb.id === k.id)));
  });
});
