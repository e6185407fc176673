/**
 * A whole node (scheduler, dispatcher, HTTP channel, bulk runner, forecast sampler, SQLite):
 * a typed event reaches the receiver with `belfry-type`; a bulk shift run by the node's own runner
 * moves events and they fire at their new time; /metrics shows the due load ahead.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { startReceiver, type Receiver } from '../support/receiver.ts';
import { startTestNode, type TestNode } from '../support/node.ts';

describe('a node with event types, bulk jobs and the forecast', () => {
  let t: TestNode;
  let rx: Receiver;
  before(async () => {
    t = await startTestNode({}, { bulk: { intervalMs: 50 } });
    rx = await startReceiver({ behavior: () => ({ status: 200 }) });
    assert.equal((await t.api('PUT', '/v1/destinations/main', { url: rx.url + '/hook' })).status, 201);
  });
  after(async () => {
    await t.close();
    await rx.close();
  });
  const got = (id: string) => rx.requests.filter((r) => r.headers['webhook-id'] === id);

  it('delivers belfry-type with a typed event, and no such header without one', async () => {
    assert.equal(
      (await t.api('POST', '/v1/events', { id: 'typed', destination: 'main', type: 'order.timeout' })).status,
      201,
    );
    assert.equal((await t.api('POST', '/v1/events', { id: 'plain', destination: 'main' })).status, 201);
    await rx.waitFor(() => got('typed').length > 0 && got('plain').length > 0, 10_000);
    assert.equal(got('typed')[0].headers['belfry-type'], 'order.timeout');
    assert.equal(got('plain')[0].headers['belfry-type'], undefined);
  });

  it('runs a bulk shift in the background; the shifted events fire at their new time', async () => {
    const base = Date.now() + 60 * 60_000;
    const events = Array.from({ length: 30 }, (_, i) => ({
      id: `later-${i}`,
      destination: 'main',
      fireAt: base + i,
      type: 'pull.forward',
    }));
    assert.equal((await t.api('POST', '/v1/events/batch', { events })).status, 200);
    const started = await t.api('POST', '/v1/events/bulk', {
      filter: { type: 'pull.forward' },
      action: { shift: '-60m' },
    });
    assert.equal(started.status, 202, JSON.stringify(started.body));
    const deadline = Date.now() + 15_000;
    let job = (await t.api('GET', `/v1/bulk/${started.body.id}`)).body;
    while (job.state === 'running' && Date.now() < deadline) {
      await new Promise((r) => setTimeout(r, 50));
      job = (await t.api('GET', `/v1/bulk/${started.body.id}`)).body;
    }
    assert.deepEqual([job.state, job.done], ['succeeded', 30]);
    await rx.waitFor(() => events.every((e) => got(e.id).length > 0), 10_000);
    for (const e of events) assert.ok(got(e.id)[0].receivedAt >= e.fireAt - 60 * 60_000, `${e.id} fired early`);
  });

  it('shows the due load of the next minutes on /metrics', async () => {
    const soon = Date.now() + 90_000;
    const events = Array.from({ length: 20 }, (_, i) => ({ id: `soon-${i}`, destination: 'main', fireAt: soon + i }));
    assert.equal((await t.api('POST', '/v1/events/batch', { events })).status, 200);
    // The sampler counts in the background (its first count ran at start); count now rather than
    // wait 15 s for the next.
    await t.node.forecast.runOnce();
    const text = await (await fetch(`${t.url}/metrics`)).text();
    const within5m = Number(/belfry_forecast_due_events\{within="5m"\} (\d+)/.exec(text)?.[1]);
    assert.ok(within5m >= 20, text);
    assert.match(text, /belfry_forecast_spikes \d+/);
  });
});
