/**
 * The dispatcher's info lines on a real node against a loopback receiver: a destination that
 * starts failing is logged once, its circuit opening once and closing once, and a flood of events
 * archived is one line with an id plus one count at the stop, never one line per event. No line
 * quotes what the endpoint answered (here, a credential it echoes).
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { pino } from 'pino';
import { startTestNode, waitUntil } from '../support/node.ts';
import { startReceiver } from '../support/receiver.ts';

const EVENTS = 40;

describe('delivery log lines', () => {
  it('failing, circuit opened and closed once each; archives as one line and one count', {
    timeout: 60_000,
  }, async () => {
    const lines: Record<string, unknown>[] = [];
    const logger = pino({ level: 'info' }, { write: (line: string) => void lines.push(JSON.parse(line)) });
    const endpoint = { ok: false };
    const echoed = `Bearer sekrit-${process.pid}-echoed`;
    const rx = await startReceiver({
      behavior: () => (endpoint.ok ? { status: 200 } : { status: 500, body: `down; you sent ${echoed}` }),
    });
    const t = await startTestNode({}, { logger });
    const about = (prefix: string) =>
      lines.filter((l) => typeof l.msg === 'string' && l.msg.startsWith(prefix) && l.destination === 'orders');
    let stopped = false;
    try {
      const put = await t.api('PUT', '/v1/destinations/orders', { url: `${rx.url}/hook`, retry: { maxAttempts: 1 } });
      assert.equal(put.status, 201, JSON.stringify(put.body));
      const batch = await t.api('POST', '/v1/events/batch', {
        events: Array.from({ length: EVENTS }, (_, i) => ({ id: `flood-${i}`, destination: 'orders', payload: { i } })),
      });
      assert.equal(batch.status, 200, JSON.stringify(batch.body));
      // Each attempt fails (500, or fast while the circuit is open) and, with one attempt, archives its event.
      await waitUntil(
        `${EVENTS} events archived`,
        async () => (await t.api('GET', '/v1/events?state=archived&limit=100')).body.events.length === EVENTS,
        30_000,
      );
      assert.ok(rx.count >= 10, `the receiver was called ${rx.count} times`);
      assert.equal(about('destination failing').length, 1, JSON.stringify(lines));
      assert.equal(about('destination failing')[0].tenantId, t.tenantId);
      assert.equal(about('destination failing')[0].status, 500);
      assert.equal(about('destination failing')[0].timedOut, false);
      assert.match(String(about('destination failing')[0].id), /^flood-\d+$/, 'the event whose trace tells more');
      assert.equal(about('circuit opened').length, 1, JSON.stringify(about('circuit opened')));
      assert.equal(about('circuit closed').length, 0);
      const archived = about('event archived');
      assert.equal(archived.length, 1, `one line for ${EVENTS} archives: ${JSON.stringify(archived)}`);
      assert.equal(archived[0].level, 30);
      assert.match(String(archived[0].id), /^flood-\d+$/);
      assert.equal(archived[0].why, 'attempts_exhausted');
      assert.equal(archived[0].attempts, 1);

      // The endpoint is back: an event retried past the open circuit's time is its probe, and closes it.
      endpoint.ok = true;
      const probe = await t.api('POST', '/v1/events', {
        id: 'probe',
        destination: 'orders',
        payload: {},
        retry: { maxAttempts: 5, minBackoff: '1s', maxBackoff: '2s' },
      });
      assert.equal(probe.status, 201, JSON.stringify(probe.body));
      await waitUntil(
        'the probe succeeded',
        async () => (await t.api('GET', '/v1/events/probe')).body.state === 'succeeded',
        20_000,
      );
      assert.equal(about('circuit closed').length, 1, JSON.stringify(lines.slice(-5)));
      assert.equal(about('destination failing').length, 1, 'a success within 30 s of a failure changes nothing');
      assert.equal(about('destination recovered').length, 0);

      await t.close();
      stopped = true;
      // The stop logs the archives counted and not logged one by one.
      const counted = about('events archived');
      assert.equal(counted.length, 1, JSON.stringify(counted));
      assert.equal(counted[0].count, EVENTS - 1);
      assert.equal(about('event archived').length, 1);
      const leaked = lines.filter((l) => JSON.stringify(l).includes('sekrit'));
      assert.deepEqual(leaked, [], 'no line quotes what the endpoint answered');
    } finally {
      if (!stopped) await t.close();
      await rx.close();
    }
  });
});
