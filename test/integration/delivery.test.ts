/**
 * The scheduler, dispatcher, HTTP channel and SQLite store together, through the HTTP API, against
 * real loopback receivers.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { startReceiver, type Receiver } from '../support/receiver.ts';
import { startTestNode, waitUntil, type TestNode } from '../support/node.ts';
import { verifySignature } from '../../src/channels/http/signing.ts';
import { parseMetrics } from '../support/metrics.ts';

describe('delivery', () => {
  let t: TestNode;
  let rx: Receiver;
  const failuresLeft = new Map<string, number>();

  before(async () => {
    t = await startTestNode();
    rx = await startReceiver({
      behavior: (req) => {
        const id = String(req.headers['webhook-id']);
        const left = failuresLeft.get(id) ?? 0;
        if (left > 0) {
          failuresLeft.set(id, left - 1);
          return { status: 500, body: 'try again' };
        }
        if (req.path === '/gone') return { status: 404 };
        return { status: 200 };
      },
    });
  });
  after(async () => {
    await t.close();
    await rx.close();
  });

  const got = (id: string) => rx.requests.filter((r) => r.headers['webhook-id'] === id);

  it('fires each event at its due time, never before, and signs it', async () => {
    const put = await t.api('PUT', '/v1/destinations/main', { url: rx.url + '/hook', headers: { 'x-team': 'core' } });
    assert.equal(put.status, 201);
    const secret: string = put.body.secret;
    const base = Date.now() + 700;
    const ids: string[] = [];
    for (let i = 0; i < 50; i++) {
      const res = await t.api('POST', '/v1/events', {
        id: `ontime-${i}`,
        fireAt: base + i * 10,
        destination: 'main',
        payload: { i },
        headers: { 'x-kind': 'test' },
      });
      assert.equal(res.status, 201, JSON.stringify(res.body));
      ids.push(res.body.id);
    }
    await rx.waitFor(() => ids.every((id) => got(id).length > 0), 10_000);
    for (let i = 0; i < ids.length; i++) {
      const [req] = got(ids[i]);
      assert.ok(req.receivedAt >= base + i * 10, `event ${i} arrived ${base + i * 10 - req.receivedAt} ms early`);
      assert.equal(req.headers['x-team'], 'core');
      assert.equal(req.headers['x-kind'], 'test');
      assert.deepEqual(req.json, { i });
      assert.ok(
        verifySignature({
          msgId: ids[i],
          timestampSec: Number(req.headers['webhook-timestamp']),
          body: req.body,
          signatureHeader: String(req.headers['webhook-signature']),
          secret,
          nowSec: Math.floor(Date.now() / 1000),
        }),
      );
    }
    await waitUntil(
      'succeeded state',
      async () => (await t.api('GET', `/v1/events/${ids[49]}`)).body.state === 'succeeded',
      5_000,
    );
    const trace = await t.api('GET', `/v1/events/${ids[0]}/transitions`);
    assert.deepEqual(
      trace.body.transitions.map((x: any) => x.toState),
      ['scheduled', 'executing', 'succeeded'],
    );
    assert.equal(trace.body.transitions[2].status, 200);
    assert.equal(typeof trace.body.transitions[1].latenessMs, 'number');
  });

  it('a past fireAt fires at once', async () => {
    const res = await t.api('POST', '/v1/events', {
      id: 'past',
      fireAt: '2020-01-01T00:00:00Z',
      destination: { url: rx.url + '/hook' },
      payload: {},
    });
    assert.equal(res.status, 201);
    await rx.waitFor(() => got('past').length === 1, 5_000);
  });

  it('a cancel or reschedule after the read-ahead wins', async () => {
    const fireAt = Date.now() + 1_200; // inside the 3 s look-ahead: loaded into memory at once
    for (const id of ['c-cancel', 'c-move', 'c-sentinel']) {
      const res = await t.api('POST', '/v1/events', {
        id,
        fireAt: id === 'c-sentinel' ? fireAt + 300 : fireAt,
        destination: 'main',
        payload: {},
      });
      assert.equal(res.status, 201);
    }
    await waitUntil('read-ahead', () => t.node.scheduler.pending >= 3, 2_000, 5);
    const cancel = await t.api('DELETE', '/v1/events/c-cancel');
    assert.equal(cancel.status, 200);
    assert.equal(cancel.body.state, 'canceled');
    const newFireAt = Date.now() + 60_000;
    const move = await t.api('PATCH', '/v1/events/c-move', { fireAt: newFireAt });
    assert.equal(move.status, 200);
    await rx.waitFor(() => got('c-sentinel').length === 1, 5_000);
    // The sentinel was due after both: had either fired, it would have been first.
    assert.equal(got('c-cancel').length, 0);
    assert.equal(got('c-move').length, 0);
    assert.equal((await t.api('GET', '/v1/events/c-move')).body.state, 'scheduled');
    // The receiver has the sentinel; its outcome is recorded just after (the delivery thread reports it).
    await waitUntil(
      'sentinel succeeded',
      async () => (await t.api('GET', '/v1/events/c-sentinel')).body.state === 'succeeded',
      5_000,
    );
    const late = await t.api('DELETE', '/v1/events/c-sentinel');
    assert.equal(late.status, 409);
    assert.equal(late.body.error.details[0].state, 'succeeded');
  });

  it('retries 5xx with backoff until it succeeds, and records each attempt', async () => {
    failuresLeft.set('retry-me', 2);
    const res = await t.api('POST', '/v1/events', {
      id: 'retry-me',
      destination: 'main',
      payload: {},
      retry: { maxAttempts: 5, minBackoff: '100ms', maxBackoff: '1s' },
    });
    assert.equal(res.status, 201);
    await waitUntil(
      'success after retries',
      async () => (await t.api('GET', '/v1/events/retry-me')).body.state === 'succeeded',
      10_000,
    );
    const attempts = got('retry-me');
    assert.equal(attempts.length, 3);
    assert.ok(
      attempts[1].receivedAt - attempts[0].receivedAt >= 50,
      'second attempt came before half the minimum backoff',
    );
    const trace = (await t.api('GET', '/v1/events/retry-me/transitions')).body.transitions;
    assert.deepEqual(
      trace.map((x: any) => x.toState),
      ['scheduled', 'executing', 'awaiting_retry', 'executing', 'awaiting_retry', 'executing', 'succeeded'],
    );
    assert.equal(trace[2].status, 500);
  });

  it('archives when attempts run out, and replay delivers again', async () => {
    failuresLeft.set('doomed', 3);
    await t.api('POST', '/v1/events', {
      id: 'doomed',
      destination: 'main',
      payload: {},
      retry: { maxAttempts: 2, minBackoff: '50ms', maxBackoff: '100ms' },
    });
    await waitUntil(
      'archived',
      async () => (await t.api('GET', '/v1/events/doomed')).body.state === 'archived',
      10_000,
    );
    assert.equal(got('doomed').length, 2);
    const replay = await t.api('POST', '/v1/events/doomed/replay');
    assert.equal(replay.status, 200);
    // One failure is left on the receiver, then success.
    await waitUntil(
      'replayed success',
      async () => (await t.api('GET', '/v1/events/doomed')).body.state === 'succeeded',
      10_000,
    );
    assert.equal(got('doomed').length, 4);
  });

  it('discards on a 4xx without retrying', async () => {
    await t.api('POST', '/v1/events', { id: 'gone', destination: { url: rx.url + '/gone' }, payload: {} });
    await waitUntil('discarded', async () => (await t.api('GET', '/v1/events/gone')).body.state === 'discarded', 5_000);
    assert.equal(got('gone').length, 1);
    const ev = (await t.api('GET', '/v1/events/gone')).body;
    assert.equal(ev.lastStatus, 404);
  });

  it('exposes what happened in /metrics', async () => {
    await t.node.counts.runOnce();
    const res = await fetch(t.url + '/metrics');
    assert.equal(res.status, 200);
    const metrics = parseMetrics(await res.text());
    const value = (name: string) => metrics.get(name) ?? NaN;
    assert.ok(value('belfry_events_scheduled_total') >= 50);
    assert.ok(value('belfry_events_fired_total') >= 50);
    assert.ok(value('belfry_deliveries_total{outcome="delivered"}') >= 50);
    assert.ok(value('belfry_deliveries_total{outcome="retry"}') >= 2);
    assert.ok(value('belfry_deliveries_total{outcome="discard"}') >= 1);
    assert.ok(value('belfry_fire_lateness_seconds_count') >= 50);
    assert.ok(value('belfry_events{state="succeeded"}') >= 50);
    assert.ok(value('belfry_events{state="canceled"}') >= 1);
    assert.ok(value('belfry_events_samples_total') >= 1, 'the node counts in the background');
    // Each of the node's threads reports the time it was busy: the event loop, the store thread
    // (every insert, claim and outcome above) and the delivery thread (every request sent).
    for (const thread of ['event-loop', 'sqlite-store', 'delivery-0']) {
      assert.ok(value(`belfry_thread_busy_seconds_total{thread="${thread}"}`) > 0, `${thread} busy`);
    }
  });
});
