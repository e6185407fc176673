/** ProduceBatcher: deliveries started together share one send; each settles with its batch; batches are bounded. */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { Message } from 'kafkajs';
import { ProduceBatcher } from './batcher.ts';

const msg = (v: string): Message => ({ value: v });

describe('ProduceBatcher', () => {
  it('sends the messages added in one turn as one batch, in order, and resolves them all', async () => {
    const sent: string[][] = [];
    const b = new ProduceBatcher(async (ms) => void sent.push(ms.map((m) => String(m.value))));
    await Promise.all(['a', 'b', 'c'].map((v) => b.add(msg(v))));
    await b.add(msg('d'));
    assert.deepEqual(sent, [['a', 'b', 'c'], ['d']]);
  });

  it('fails every message of a failed batch with its error, and only those', async () => {
    let calls = 0;
    const b = new ProduceBatcher(async () => {
      if (++calls === 1) throw new Error('leader moved');
    });
    const first = await Promise.allSettled([b.add(msg('a')), b.add(msg('b'))]);
    assert.deepEqual(
      first.map((r) => r.status),
      ['rejected', 'rejected'],
    );
    assert.match(String((first[0] as PromiseRejectedResult).reason), /leader moved/);
    await b.add(msg('c'));
    assert.equal(calls, 2);
  });

  it('puts at most batchMax messages in one send', async () => {
    const sizes: number[] = [];
    const b = new ProduceBatcher(async (ms) => void sizes.push(ms.length), 4);
    await Promise.all(Array.from({ length: 10 }, (_, i) => b.add(msg(String(i)))));
    assert.deepEqual(sizes, [4, 4, 2]);
  });
});
