import assert from 'node:assert/strict';
import { after, describe, it } from 'node:test';
import { BelfryError } from './errors.ts';
import type { FixtureOrder, FixtureProtocol } from './thread-rpc.fixture.ts';
import { RpcClient, startWorker, type RpcClientOptions } from './thread-rpc.ts';

const FIXTURE = new URL('./thread-rpc.fixture.ts', import.meta.url);

function open(order: FixtureOrder, options: RpcClientOptions = {}): RpcClient<FixtureProtocol> {
  return new RpcClient<FixtureProtocol>(startWorker(FIXTURE, order), options);
}

describe('thread-rpc', () => {
  const clients: RpcClient<FixtureProtocol>[] = [];
  const client = (order: FixtureOrder, options?: RpcClientOptions) => {
    const c = open(order, options);
    clients.push(c);
    return c;
  };
  after(async () => {
    await Promise.all(clients.map((c) => c.terminate()));
  });

  it('answers each call with its own result, the calls of one tick in one message', async () => {
    const c = client('sequential');
    assert.equal(await c.call('add', 1, 2), 3);
    const sums = await Promise.all(Array.from({ length: 50 }, (_, i) => c.call('add', i, 1)));
    assert.deepEqual(
      sums,
      Array.from({ length: 50 }, (_, i) => i + 1),
    );
    await c.call('add', 0, 0);
    // The first call alone, the 50 together, the third alone; batches() leaves its own message out.
    assert.deepEqual(await c.call('batches'), [1, 50, 1]);
    assert.equal(c.inFlight, 0);
  });

  it('runs sequential calls in the order made, each after the one before has settled', async () => {
    const c = client('sequential');
    const order: string[] = [];
    await Promise.all([
      c.call('later', 30, 'slow').then((v) => order.push(v)),
      c.call('later', 0, 'fast').then((v) => order.push(v)),
    ]);
    assert.deepEqual(order, ['slow', 'fast']);
  });

  it('runs a call named first as soon as the running one ends, before the calls queued ahead of it', async () => {
    const c = client('sequential-first');
    const flags = new Int32Array(new SharedArrayBuffer(8));
    const order: string[] = [];
    const held = c.call('hold', flags.buffer as SharedArrayBuffer).then((v) => order.push(v));
    // Once the call has gone out, wait (blocking this thread, at most 10 s) for the thread to be
    // inside `hold`: everything sent from here waits in its lines.
    await new Promise((resolve) => setImmediate(resolve));
    assert.notEqual(Atomics.wait(flags, 0, 0, 10_000), 'timed-out');
    const answers = [c.call('later', 0, 'queued-1').then((v) => order.push(v))];
    await new Promise((resolve) => setImmediate(resolve));
    // A message of its own: two queued calls and, last, one that goes first.
    for (const value of ['queued-2', 'queued-3', 'first'])
      answers.push(c.call('later', 0, value).then((v) => order.push(v)));
    await new Promise((resolve) => setImmediate(resolve));
    Atomics.store(flags, 1, 1);
    Atomics.notify(flags, 1);
    await Promise.all([held, ...answers]);
    assert.deepEqual(order, ['held', 'first', 'queued-1', 'queued-2', 'queued-3']);
  });

  it('runs concurrent calls at once: a quick one is answered before a slow one', async () => {
    const c = client('concurrent');
    const order: string[] = [];
    await Promise.all([
      c.call('later', 200, 'slow').then((v) => order.push(v)),
      c.call('later', 0, 'fast').then((v) => order.push(v)),
    ]);
    assert.deepEqual(order, ['fast', 'slow']);
  });

  it('carries errors over with their class, code, details and the thread stack', async () => {
    const seen: Error[] = [];
    const c = client('sequential', { onCallError: (err) => seen.push(err) });
    await assert.rejects(c.call('fail', 'belfry'), (err: unknown) => {
      assert.ok(err instanceof BelfryError);
      assert.equal(err.code, 'conflict');
      assert.deepEqual(err.details, [{ field: 'id', message: 'in use' }]);
      assert.match(
        err.stack ?? '',
        /thread-rpc\.fixture\.ts[\s\S]*--- in a worker thread, called from the event loop ---/,
      );
      return true;
    });
    await assert.rejects(c.call('fail', 'range'), RangeError);
    await assert.rejects(c.call('fail', 'coded'), { name: 'SqliteError', code: 'SQLITE_FULL', message: 'disk full' });
    await assert.rejects(c.call('fail', 'string'), { name: 'Error', message: 'a string' });
    const byName = c.send('nothing', []);
    await assert.rejects(byName, /no method "nothing" on this thread/);
    assert.equal(seen.length, 5);
    // A failed call leaves the thread serving.
    assert.equal(await c.call('add', 2, 2), 4);
  });

  it('fails only the call whose arguments or result cannot be cloned', async () => {
    const c = client('sequential');
    const [bad, good] = await Promise.allSettled([c.send('add', [() => 1, 2]), c.call('add', 2, 3)]);
    assert.equal(bad.status, 'rejected');
    assert.deepEqual(good, { status: 'fulfilled', value: 5 });
    const [badResult, next] = await Promise.allSettled([c.call('uncloneable'), c.call('add', 1, 1)]);
    assert.equal(badResult.status, 'rejected');
    assert.match(String((badResult as PromiseRejectedResult).reason), /could not be cloned/);
    assert.deepEqual(next, { status: 'fulfilled', value: 2 });
  });

  it('rebuilds errors with the caller\u2019s own classes', async () => {
    class Full extends Error {}
    const c = client('sequential', { rebuildError: (w) => new Full(w.message) });
    await assert.rejects(c.call('fail', 'coded'), Full);
  });

  it('refuses calls beyond its bound at once, and takes them again when answered', async () => {
    const c = client('concurrent', { inFlightMax: 2, overloaded: () => new Error('full up') });
    const first = [c.call('later', 50, 'a'), c.call('later', 50, 'b')];
    await assert.rejects(c.call('add', 1, 1), /full up/);
    assert.deepEqual(await Promise.all(first), ['a', 'b']);
    assert.equal(await c.call('add', 1, 1), 2);
  });

  it('moves transferred buffers instead of copying them', async () => {
    const c = client('sequential');
    const buffer = new ArrayBuffer(1024);
    assert.equal(await c.callTransferring('bytes', [buffer], buffer), 1024);
    assert.equal(buffer.byteLength, 0, 'detached here');
  });

  it('fails every pending and every later call once the thread dies', async () => {
    const c = client('concurrent', { dead: (why) => new Error(`gone: ${JSON.stringify(why)}`) });
    assert.equal(await c.call('add', 1, 1), 2);
    const pending = c.call('later', 10_000, 'never');
    const exit = c.call('exit', 3);
    await assert.rejects(pending, /gone: \{"exitCode":3\}/);
    await assert.rejects(exit, /gone/);
    await assert.rejects(c.call('add', 1, 1), /gone: \{"exitCode":3\}/);
    assert.equal(c.inFlight, 0);
    assert.ok(c.dead);
  });

  it('fails pending calls as closed when terminated', async () => {
    const c = client('concurrent');
    const pending = assert.rejects(c.call('later', 10_000, 'never'), /worker thread: closed/);
    await c.terminate();
    await pending;
    await assert.rejects(c.call('add', 1, 1), /worker thread: closed/);
  });
});
