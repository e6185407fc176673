/** `belfry schedules ...` in process (runCli with the real fetch) against a real in-process node. */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { Io } from '../../src/cli/command.ts';
import { runCli } from '../../src/cli/main.ts';
import { startTestNode, type TestNode } from '../support/node.ts';

let node: TestNode;

before(async () => {
  node = await startTestNode();
});
after(async () => {
  await node?.close();
});

async function cli(...argv: string[]): Promise<{ code: number; out: string; err: string }> {
  const out: string[] = [];
  const err: string[] = [];
  const io: Io = {
    env: { BELFRY_URL: node.url, BELFRY_API_KEY: node.tenantKey },
    out: (t) => void out.push(t),
    err: (t) => void err.push(t),
    fetch: globalThis.fetch,
    readFile: async () => {
      throw new Error('no files here');
    },
  };
  const code = await runCli(argv, io);
  return { code, out: out.join('\n'), err: err.join('\n') };
}

describe('belfry schedules', () => {
  it('preview shows occurrences in UTC and in the zone, creating nothing', async () => {
    const r = await cli(
      'schedules',
      'preview',
      '--cron',
      '0 9 * * *',
      '--timezone',
      'Europe/London',
      '--start-at',
      '2027-10-30T00:00:00Z',
      '--count',
      '3',
      '--json',
    );
    assert.equal(r.code, 0, r.err);
    assert.deepEqual(
      JSON.parse(r.out).next.map((o: { local: string }) => o.local),
      ['2027-10-30T09:00:00.000+01:00', '2027-10-31T09:00:00.000+00:00', '2027-11-01T09:00:00.000+00:00'],
    );
  });

  it('create, list, get, pause, resume, trigger, delete', async () => {
    const created = await cli(
      'schedules',
      'create',
      '--id',
      'nightly',
      '--cron',
      '0 2 * * *',
      '--timezone',
      'America/New_York',
      '--destination',
      'http://127.0.0.1:9/hook',
      '--payload',
      '{"job":"backup"}',
      '--missed',
      'fire-once',
      '--type',
      'job.backup',
    );
    assert.equal(created.code, 0, created.err);
    assert.match(created.out, /created/);
    assert.match(created.out, /cron 0 2 \* \* \* \(America\/New_York\)/);
    assert.match((await cli('schedules', 'list')).out, /nightly/);
    const got = JSON.parse((await cli('schedules', 'get', 'nightly', '--json')).out);
    assert.equal(got.next.length, 5);
    assert.equal(got.type, 'job.backup');
    assert.match(got.next[0].local, /T02:00:00\.000-0[45]:00$/);
    assert.equal(JSON.parse((await cli('schedules', 'pause', 'nightly', '--json')).out).paused, true);
    assert.equal(
      JSON.parse((await cli('schedules', 'resume', 'nightly', '--json', '--if-match', '"2"')).out).paused,
      false,
    );
    const fired = JSON.parse((await cli('schedules', 'trigger', 'nightly', '--json')).out);
    assert.match(fired.id, /^nightly@\d{4}-/);
    const occurrences = await cli('events', 'list', '--schedule', 'nightly');
    assert.equal(occurrences.code, 0, occurrences.err);
    assert.match(
      occurrences.out,
      new RegExp(`^${fired.id.replace(/[.+]/g, '\\$&')}\\s+\\S+\\s`, 'm'),
      'the triggered occurrence, in whatever state its delivery reached',
    );
    assert.equal((await cli('schedules', 'delete', 'nightly')).code, 0);
    const gone = await cli('schedules', 'get', 'nightly');
    assert.equal(gone.code, 1);
    assert.match(gone.err, /no schedule/);
  });

  it('a bad cron is the API’s 400 naming the field; no timing is a usage error', async () => {
    const bad = await cli('schedules', 'create', '--cron', '0 25 * * *', '--destination', 'http://127.0.0.1:9/hook');
    assert.equal(bad.code, 1);
    assert.match(bad.err, /cron/);
    assert.equal((await cli('schedules', 'create', '--destination', 'http://127.0.0.1:9/hook')).code, 2);
  });
});
