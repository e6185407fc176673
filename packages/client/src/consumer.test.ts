import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Consumer, visibilityMsOf } from './consumer.ts';

test('reads the visibility timeout as the API does, 1s to 12h', () => {
  assert.equal(visibilityMsOf('30s'), 30_000);
  assert.equal(visibilityMsOf('2m'), 120_000);
  assert.equal(visibilityMsOf('1500ms'), 1_500);
  assert.equal(visibilityMsOf('12h'), 43_200_000);
  assert.equal(visibilityMsOf(5_000), 5_000);
  for (const bad of ['999ms', '13h', 'soon', '1.5s', 0, 1.5, ''])
    assert.throws(() => visibilityMsOf(bad as string), /visibilityTimeout/, String(bad));
});

/** A stand-in for the API (a remote party's behaviour): claims wait until the test answers them; settles apply at once. */
function fakeApi() {
  const claims: { max: number; acks: number; answer(events: number): void }[] = [];
  const changed: (() => void)[] = [];
  let n = 0;
  const event = () => ({ id: `e${++n}`, receipt: `r${n}`, type: null, payload: {}, attempt: 1 });
  const transport = {
    call(route: { path: string }, input: { body: any; signal?: AbortSignal }) {
      if (route.path.endsWith('/settle')) {
        const items = [...(input.body.ack ?? []), ...(input.body.nack ?? [])];
        return Promise.resolve({ body: { results: items.map(({ id }) => ({ id, status: 'settled' })) } });
      }
      return new Promise((resolve, reject) => {
        const acks = input.body.ack?.length ?? 0;
        input.signal?.addEventListener('abort', () => reject(new Error('aborted')), { once: true });
        claims.push({
          max: input.body.max,
          acks,
          answer: (k) =>
            resolve({
              body: {
                events: Array.from({ length: k }, event),
                ...(acks > 0
                  ? { settled: input.body.ack.map(({ id }: { id: string }) => ({ id, status: 'settled' })) }
                  : {}),
              },
            }),
        });
        for (const c of changed.splice(0)) c();
      });
    },
  };
  /** Resolves once `count` claims were sent; rejects after 5 s. */
  const claimsReach = (count: number) =>
    new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`${claims.length} claims sent, not ${count}`)), 5_000);
      const look = () => {
        if (claims.length < count) return void changed.push(look);
        clearTimeout(timer);
        resolve();
      };
      look();
    });
  return { transport: transport as unknown as ConstructorParameters<typeof Consumer>[0], claims, claimsReach };
}

test('the consumer keeps two claims in flight, each for at most half its slots, and never claims past its free slots', async () => {
  const api = fakeApi();
  const release: (() => void)[] = [];
  let running = 0;
  let most = 0;
  const consumer = new Consumer(api.transport, 'jobs', { concurrency: 10, wait: '1s' }).on('*', async () => {
    most = Math.max(most, ++running);
    await new Promise<void>((resolve) => release.push(resolve));
    running--;
  });
  await consumer.start();
  await api.claimsReach(2);
  assert.deepEqual(
    api.claims.map((c) => c.max),
    [5, 5],
    'two claims at once, half the slots each',
  );
  api.claims[0].answer(5);
  api.claims[1].answer(2);
  // 7 handlers run: one claim goes out for the 3 slots left, and no other.
  await api.claimsReach(3);
  assert.equal(api.claims[2].max, 3);
  await new Promise((resolve) => setImmediate(resolve));
  assert.equal(api.claims.length, 3, 'no claim beyond the free slots');
  // The handlers finish: their acks ride in the next claim.
  for (const r of release.splice(0)) r();
  api.claims[2].answer(0);
  await api.claimsReach(5);
  assert.equal(
    api.claims.slice(3).reduce((sum, c) => sum + c.acks, 0),
    7,
    'the 7 acks rode in the next claims',
  );
  assert.ok(api.claims.slice(3).every((c) => c.max <= 5));
  await consumer.stop();
  assert.equal(most, 7);
});

test('a consumer of concurrency 1 keeps one claim in flight', async () => {
  const api = fakeApi();
  const consumer = new Consumer(api.transport, 'jobs', { concurrency: 1, wait: '1s' }).on('*', () => {});
  await consumer.start();
  await api.claimsReach(1);
  await new Promise((resolve) => setImmediate(resolve));
  assert.equal(api.claims.length, 1);
  assert.equal(api.claims[0].max, 1);
  api.claims[0].answer(1);
  await api.claimsReach(2);
  assert.equal(api.claims[1].acks, 1);
  await consumer.stop();
});
