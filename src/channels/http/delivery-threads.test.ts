import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { Worker } from 'node:worker_threads';
import {
  startReceiver,
  type ReceivedRequest,
  type Receiver,
  type ReceiverResponse,
} from '../../../test/support/receiver.ts';
import type { HttpDueEvent } from '../channel.ts';
import { HttpThreadChannel, openHttpThreadChannel } from './delivery-threads.ts';
import { verifySignature } from './signing.ts';

const SECRET = 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw';
const LOOPBACK = ['127.0.0.1', '::1'];

function dueEvent(target: string, overrides: Partial<HttpDueEvent> = {}): HttpDueEvent {
  return {
    tenantId: 't1',
    id: 'evt-1',
    attempt: 1,
    payload: '{"n":1}',
    headers: {},
    kind: 'http',
    target,
    secrets: [{ secret: SECRET, expiresAt: null }],
    timeoutMs: 5_000,
    dueAt: 0,
    ...overrides,
  };
}

function routes(req: ReceivedRequest): ReceiverResponse {
  if (req.path === '/hang') return { status: 200, hang: true };
  if (req.path === '/fail') return { status: 500, body: 'down' };
  return { status: 200, body: 'ok' };
}

/** The threads' workers, for the test that ends one as a crash would. */
function workersOf(channel: HttpThreadChannel): Worker[] {
  return (channel as unknown as { lanes: { worker: Worker }[] }).lanes.map((l) => l.worker);
}

async function until(what: string, ok: () => boolean, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!ok()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

describe('HTTP deliveries on delivery threads', () => {
  let receiver: Receiver;
  let channel: HttpThreadChannel;

  before(async () => {
    receiver = await startReceiver({ behavior: routes });
    channel = await openHttpThreadChannel(2, { allowHosts: LOOPBACK });
  });
  after(async () => {
    await channel.close();
    await receiver.close();
  });

  it('delivers signed POSTs from the threads and brings back each outcome', async () => {
    const events = Array.from({ length: 200 }, (_, i) =>
      dueEvent(`${receiver.url}/ok`, {
        id: `e-${i}`,
        payload: `{"i":${i}}`,
        headers: { 'x-k': String(i) },
      }),
    );
    const outcomes = await Promise.all(events.map((e) => channel.deliver(e, new AbortController().signal)));
    assert.ok(outcomes.every((o) => o.kind === 'delivered' && o.status === 200));
    const got = receiver.requests.filter((r) => r.path === '/ok');
    assert.equal(got.length, 200);
    for (const r of got) {
      const i = Number(r.headers['x-k']);
      assert.equal(r.body, `{"i":${i}}`);
      assert.equal(r.headers['webhook-id'], `e-${i}`);
      const verified = verifySignature({
        secret: SECRET,
        msgId: `e-${i}`,
        timestampSec: String(r.headers['webhook-timestamp']),
        body: r.body,
        signatureHeader: String(r.headers['webhook-signature']),
        nowSec: Math.floor(Date.now() / 1000),
      });
      assert.equal(verified, true);
    }
    assert.equal(channel.inFlight, 0);
  });

  it("keeps the channel's classification: a 500 is a retry with the status", async () => {
    const outcome = await channel.deliver(dueEvent(`${receiver.url}/fail`), new AbortController().signal);
    assert.equal(outcome.kind, 'retry');
    assert.equal(outcome.status, 500);
  });

  it('keeps the private-address guard on the threads', async () => {
    const guarded = await openHttpThreadChannel(1);
    try {
      const outcome = await guarded.deliver(dueEvent(`${receiver.url}/ok`), new AbortController().signal);
      assert.equal(outcome.kind, 'discard');
      assert.match(outcome.kind === 'discard' ? outcome.reason : '', /address denied/);
    } finally {
      await guarded.close();
    }
  });

  it('aborts the deliveries of an aborted signal on the threads', async () => {
    const ctrl = new AbortController();
    const hanging = Array.from({ length: 4 }, (_, i) =>
      channel.deliver(dueEvent(`${receiver.url}/hang`, { id: `h-${i}`, timeoutMs: 60_000 }), ctrl.signal),
    );
    await until(
      'the hanging requests to arrive',
      () => receiver.requests.filter((r) => r.path === '/hang').length >= 4,
    );
    ctrl.abort(new Error('shutdown deadline'));
    const outcomes = await Promise.all(hanging);
    assert.deepEqual(
      outcomes.map((o) => o.kind === 'retry' && o.reason),
      ['aborted', 'aborted', 'aborted', 'aborted'],
    );
    const after = await channel.deliver(dueEvent(`${receiver.url}/ok`), ctrl.signal);
    assert.equal(after.kind, 'retry', 'a signal already aborted sends nothing');
  });

  it("settles a dead thread's deliveries as retries and replaces the thread", async () => {
    const one = await openHttpThreadChannel(1, { allowHosts: LOOPBACK });
    try {
      const before = receiver.requests.filter((r) => r.path === '/hang').length;
      const hanging = Array.from({ length: 6 }, (_, i) =>
        one.deliver(
          dueEvent(`${receiver.url}/hang`, { id: `d-${i}`, timeoutMs: 60_000 }),
          new AbortController().signal,
        ),
      );
      await until(
        'the hanging requests to arrive',
        () => receiver.requests.filter((r) => r.path === '/hang').length >= before + 6,
      );
      const [victim] = workersOf(one);
      await victim.terminate();
      const outcomes = await Promise.all(hanging);
      assert.ok(
        outcomes.every((o) => o.kind === 'retry' && /delivery thread exited/.test(o.reason)),
        JSON.stringify(outcomes),
      );
      assert.equal(one.inFlight, 0);
      await until('a replacement thread', () => one.threads === 1 && !workersOf(one).includes(victim));
      const outcome = await one.deliver(dueEvent(`${receiver.url}/ok`), new AbortController().signal);
      assert.equal(outcome.kind, 'delivered');
    } finally {
      await one.close();
    }
  });
});
