/** TenantGate: a bound per key on calls in flight, a bounded line behind it, keys apart. */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { TenantGate } from './tenant-gate.ts';

test('lets inFlightMax calls of a key run, lines up waitingMax more in order, refuses the rest', async () => {
  const gate = new TenantGate(1, 2);
  const order: string[] = [];
  const first = gate.enter('a');
  assert.ok(first);
  const leaveFirst = await first;
  const second = gate.enter('a');
  const third = gate.enter('a');
  assert.ok(second && third);
  assert.equal(gate.enter('a'), null, 'the line is full');
  void second.then(() => order.push('second'));
  void third.then(() => order.push('third'));
  assert.deepEqual(gate.load('a'), { running: 1, waiting: 2 });
  await new Promise((r) => setImmediate(r));
  assert.deepEqual(order, [], 'nobody runs before the first leaves');
  leaveFirst();
  leaveFirst(); // a second call changes nothing
  const leaveSecond = await second;
  assert.deepEqual(gate.load('a'), { running: 1, waiting: 1 });
  leaveSecond();
  (await third)();
  assert.deepEqual(order, ['second', 'third']);
  assert.deepEqual(gate.load('a'), { running: 0, waiting: 0 }, 'an idle key holds nothing');
});

test('another key goes ahead at once while one key is full', async () => {
  const gate = new TenantGate(1, 0);
  const leaveA = await gate.enter('a')!;
  assert.equal(gate.enter('a'), null, 'no line: refused at once');
  const b = gate.enter('b');
  assert.ok(b, 'b has its own room');
  (await b)();
  leaveA();
  assert.ok(gate.enter('a'), 'room again once the call left');
});

test('refuses a bound that is not a positive integer', () => {
  assert.throws(() => new TenantGate(0, 1), RangeError);
  assert.throws(() => new TenantGate(1, -1), RangeError);
});
