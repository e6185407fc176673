/** `belfry events bulk` and `bulk-status`: the request built from the flags, output, usage errors. */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { Io } from './command.ts';
import { runCli } from './main.ts';

function fakeIo(reply: { status: number; body: unknown }) {
  const sent: { method: string; url: string; body: unknown }[] = [];
  const out: string[] = [];
  const err: string[] = [];
  const io: Io = {
    env: { BELFRY_API_KEY: 'tenant-key' },
    out: (text) => void out.push(text),
    err: (text) => void err.push(text),
    readFile: async () => {
      throw new Error('ENOENT');
    },
    fetch: async (input, init) => {
      sent.push({
        method: init?.method ?? 'GET',
        url: String(input),
        body: typeof init?.body === 'string' ? JSON.parse(init.body) : undefined,
      });
      return new Response(JSON.stringify(reply.body), {
        status: reply.status,
        headers: { 'content-type': 'application/json' },
      });
    },
  };
  return { io, sent, out: () => out.join('\n'), err: () => err.join('\n') };
}

test('events bulk --dry-run posts the filter and action, and prints the count and sample', async () => {
  const f = fakeIo({
    status: 200,
    body: { matched: 1000, exact: false, applicable: 990, sample: [{ id: 'e-1', state: 'scheduled' }] },
  });
  const code = await runCli(
    [
      'events',
      'bulk',
      '--shift=-30m',
      '--type',
      'order.timeout',
      '--tag',
      'team=checkout',
      '--from',
      '4102444800000',
      '--dry-run',
    ],
    f.io,
  );
  assert.equal(code, 0, f.err());
  assert.equal(f.sent[0].method, 'POST');
  assert.equal(f.sent[0].url, 'http://127.0.0.1:7070/v1/events/bulk');
  assert.deepEqual(f.sent[0].body, {
    filter: { type: 'order.timeout', tags: { team: 'checkout' }, fireAtFrom: 4102444800000 },
    action: { shift: '-30m' },
    dryRun: true,
  });
  assert.match(f.out(), /^dry run: at least 1000 events selected, 990 of them/);
  assert.match(f.out(), /e-1\s+scheduled/);
});

test('events bulk starts a job; bulk-status shows its progress', async () => {
  const f = fakeIo({ status: 202, body: { id: 'bulk_01', state: 'running' } });
  assert.equal(
    await runCli(['events', 'bulk', '--cancel', '--destination', 'orders', '--state', 'scheduled'], f.io),
    0,
    f.err(),
  );
  assert.deepEqual(f.sent[0].body, { filter: { destination: 'orders', state: 'scheduled' }, action: 'cancel' });
  assert.match(f.out(), /started bulk job bulk_01/);
  const s = fakeIo({
    status: 200,
    body: { id: 'bulk_01', state: 'succeeded', matched: 10, done: 9, skipped: 1, errors: [] },
  });
  assert.equal(await runCli(['events', 'bulk-status', 'bulk_01'], s.io), 0, s.err());
  assert.equal(s.sent[0].url, 'http://127.0.0.1:7070/v1/bulk/bulk_01');
  assert.match(s.out(), /^skipped\s+1$/m);
});

test('events bulk refuses no action, two actions, no filter and a bad shift, sending nothing', async () => {
  for (const argv of [
    ['--type', 'x'],
    ['--cancel', '--replay', '--type', 'x'],
    ['--cancel'],
    ['--shift', '1h', '--type', 'x'],
    ['--redirect', 'b', '--tag', 'novalue'],
  ]) {
    const f = fakeIo({ status: 200, body: {} });
    assert.equal(await runCli(['events', 'bulk', ...argv], f.io), 2, argv.join(' '));
    assert.equal(f.sent.length, 0);
  }
});
