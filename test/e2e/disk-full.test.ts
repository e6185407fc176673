/**
 * A full disk, for real: a real node process whose data dir is a small tmpfs.
 *
 * 1. Events are created one by one until the disk is full: every answer is 201, or 503
 *    storage_full with Retry-After and no driver text (never a 500); /readyz says not ready with
 *    the reason storage_full and nothing else.
 * 2. The tmpfs is grown (`mount -o remount,size=...`): the node is ready again by itself, and
 *    creates events again, without a restart.
 * 3. Every event answered 201 (before, during and after) is there and is delivered, and ends
 *    succeeded; every event refused with 503 is absent (nothing half-written); and once the node has
 *    stopped, SQLite's integrity_check finds the file sound.
 *
 * Needs root (mount); skipped with a message otherwise, or when tmpfs cannot be mounted.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { callApi as api } from '../support/http.ts';
import { startReceiver, type Receiver } from '../support/receiver.ts';
import { killNodeProcess, startNodeProcess, stopNodeProcess, type NodeProcess } from '../support/process.ts';
import { waitUntil } from '../support/node.ts';
import { openConnection } from '../../src/store/sqlite/driver.ts';

const ADMIN_KEY = 'e2e-admin-key-0123456789abcdef';
/** Room for the node's start (schema, WAL, shared memory) and a few dozen events. */
const TMPFS_SMALL = '1m';
/** Past the node's threshold for "room again" (16 MiB free). */
const TMPFS_GROWN = '48m';
/** Events of this payload fill the small tmpfs in a few dozen creates. */
const PAYLOAD_CHARS = 4_000;
/** Creates past the first refusal: the disk is full, not a blip. */
const REFUSALS_IN_A_ROW = 5;
/** Bound on the creates of the filling step. */
const CREATES_MAX = 2_000;
/** Events created after space returns. */
const AFTER_RECOVERY = 20;

/** Why this test cannot run here, or null: it mounts a tmpfs, which needs root. */
function cannotRun(): string | null {
  if (process.platform !== 'linux') return 'needs Linux (tmpfs)';
  if (process.getuid?.() !== 0) return 'needs root to mount a tmpfs (run as root to test a full disk)';
  const probe = mkdtempSync(join(tmpdir(), 'belfry-tmpfs-probe-'));
  try {
    execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=64k', 'tmpfs', probe], { stdio: 'pipe' });
    execFileSync('umount', [probe], { stdio: 'pipe' });
    return null;
  } catch (err) {
    return `cannot mount a tmpfs here: ${String((err as { stderr?: Buffer }).stderr ?? err).trim()}`;
  } finally {
    rmSync(probe, { recursive: true, force: true });
  }
}

const skip = cannotRun();
if (skip) console.log(`disk-full e2e skipped: ${skip}`);

describe('a full disk (real tmpfs, real node process)', { skip: skip ?? false }, () => {
  const dataDir = mkdtempSync(join(tmpdir(), 'belfry-e2e-full-'));
  let mounted = false;
  let rx: Receiver;
  let node: NodeProcess | undefined;

  before(() => {
    execFileSync('mount', ['-t', 'tmpfs', '-o', `size=${TMPFS_SMALL}`, 'tmpfs', dataDir]);
    mounted = true;
  });
  after(async () => {
    if (node) await killNodeProcess(node);
    await rx?.close();
    if (mounted) execFileSync('umount', [dataDir]);
    rmSync(dataDir, { recursive: true, force: true });
  });

  it('refuses writes with 503 storage_full, is not ready, recovers by itself when space returns, and keeps every acknowledged event', async () => {
    rx = await startReceiver();
    node = await startNodeProcess([
      '--data',
      dataDir,
      '--admin-key',
      ADMIN_KEY,
      '--allow-hosts',
      '127.0.0.1',
      '--shutdown-timeout',
      '5s',
    ]);
    const url = node.url;
    // The tmpfs root is 1777: the node made it its own.
    assert.equal(statSync(dataDir).mode & 0o7777, 0o700);
    const tenant = await api(url, ADMIN_KEY, 'POST', '/v1/tenants', { name: 'full' });
    assert.equal(tenant.status, 201);
    const key = (await api(url, ADMIN_KEY, 'POST', `/v1/tenants/${tenant.body.id}/keys`, {})).body.key as string;
    const dest = await api(url, key, 'PUT', '/v1/destinations/rx', {
      url: rx.url,
      retry: { maxAttempts: 50, minBackoff: '100ms', maxBackoff: '500ms' },
    });
    assert.equal(dest.status, 201);

    const acked: string[] = [];
    const refused: string[] = [];
    /** The answers in order, run-length encoded: [label, count][]. */
    const answers: [string, number][] = [];
    let creates = 0;
    let lastFireAt = 0;
    const create = async (id: string) => {
      // Half due at once (delivered, and their outcomes recorded, while the disk fills), half a
      // moment later (due while it is full).
      const fireAt = Date.now() + (creates++ % 2 === 0 ? 0 : 1_000);
      const res = await api(url, key, 'POST', '/v1/events', {
        id,
        destination: 'rx',
        fireAt,
        payload: { pad: 'x'.repeat(PAYLOAD_CHARS) },
      });
      const label = res.status === 201 ? '201' : `${res.status} ${res.body?.error?.code}`;
      if (answers.at(-1)?.[0] === label) answers.at(-1)![1]++;
      else answers.push([label, 1]);
      if (res.status === 201) {
        acked.push(id);
        lastFireAt = fireAt;
        return true;
      }
      assert.equal(res.status, 503, `create ${id}: ${res.status} ${JSON.stringify(res.body)}`);
      assert.equal(res.body.error.code, 'storage_full');
      assert.ok(Number(res.headers.get('retry-after')) >= 1, 'a Retry-After of at least a second');
      assert.doesNotMatch(
        JSON.stringify(res.body),
        /SQLITE|sqlite|disk I\/O|\n\s+at /,
        'no driver text nor stack in the answer',
      );
      refused.push(id);
      return false;
    };

    // 1. Fill the disk.
    let inARow = 0;
    for (let i = 0; inARow < REFUSALS_IN_A_ROW; i++) {
      assert.ok(i < CREATES_MAX, `the disk was not full after ${CREATES_MAX} creates`);
      inARow = (await create(`fill-${i}`)) ? 0 : inARow + 1;
    }
    const filled = { acked: acked.length, refused: refused.length };
    const notReady = await fetch(`${url}/readyz`);
    const notReadyText = await notReady.text();
    assert.equal(notReady.status, 503);
    assert.deepEqual(JSON.parse(notReadyText), { status: 'not_ready', reasons: ['storage_full'] });
    assert.equal((await fetch(`${url}/healthz`)).status, 200, 'alive though full');
    // Reads still work.
    assert.equal((await api(url, key, 'GET', `/v1/events/${acked[0]}`)).status, 200);
    // Still not ready once every acknowledged event has come due (the node fires, or tries to, on
    // a full disk). One more create: its answer is checked as every other (201, or 503
    // storage_full), and it is counted as acknowledged or refused.
    await waitUntil('every acknowledged event is due', () => Date.now() > lastFireAt, 5_000);
    await create('still-full');
    assert.equal((await fetch(`${url}/readyz`)).status, 503);

    // 2. Space returns; the node notices by itself.
    execFileSync('mount', ['-o', `remount,size=${TMPFS_GROWN}`, 'tmpfs', dataDir]);
    const grownAtMs = performance.now();
    await waitUntil('/readyz is 200 again', async () => (await fetch(`${url}/readyz`)).status === 200, 15_000);
    const readyAfterMs = Math.round(performance.now() - grownAtMs);
    for (let i = 0; i < AFTER_RECOVERY; i++)
      assert.ok(await create(`after-${i}`), `after-${i} was refused once space returned`);

    // 3. Every acknowledged event is there, delivered and succeeded; every refused one is absent.
    const ackedSet = new Set(acked);
    await rx.waitFor((reqs) => new Set(reqs.map((r) => String(r.headers['webhook-id']))).size >= ackedSet.size, 30_000);
    const delivered = new Set(rx.requests.map((r) => String(r.headers['webhook-id'])));
    for (const id of acked) assert.ok(delivered.has(id), `acknowledged event ${id} was never delivered`);
    for (const id of refused) assert.ok(!delivered.has(id), `refused event ${id} was delivered`);
    for (const id of acked) {
      await waitUntil(
        `${id} succeeded`,
        async () => (await api(url, key, 'GET', `/v1/events/${id}`)).body?.state === 'succeeded',
        10_000,
      );
    }
    for (const id of refused)
      assert.equal((await api(url, key, 'GET', `/v1/events/${id}`)).status, 404, `refused event ${id} exists`);

    const stopped = await stopNodeProcess(node);
    assert.equal(stopped.code, 0, node.output.join('').slice(-2000));
    const output = node.output.join('');
    assert.ok(output.includes('the disk is full'), 'the node logged that the disk is full');
    assert.ok(output.includes('the disk has room again'), 'the node logged that it has room again');
    const logged = (msg: string) => output.split('\n').filter((l) => l.includes(msg)).length;
    const failedInside = {
      claims: logged('claim failed; retrying'),
      outcomeBatches: logged('recording delivery outcomes failed; retrying'),
    };
    node = undefined;
    const db = openConnection(join(dataDir, 'belfry.db'), { readonly: true });
    try {
      const checked = db.prepare<{ integrity_check: string }>('PRAGMA integrity_check').all();
      assert.deepEqual(
        checked.map((r) => r.integrity_check),
        ['ok'],
      );
    } finally {
      db.close();
    }
    console.log(
      `disk full: filling, ${filled.acked} created (201) and ${filled.refused} refused (503) until ${REFUSALS_IN_A_ROW} refusals in a row; ` +
        `answers in order: ${answers.map(([label, n]) => `${label} x${n}`).join(', ')}; /readyz 503 ${notReadyText}; ` +
        `store calls of the node's own that failed for space meanwhile and were retried: ${JSON.stringify(failedInside)}; ` +
        `ready again ${readyAfterMs} ms after the tmpfs grew from ${TMPFS_SMALL} to ${TMPFS_GROWN}; ` +
        `${acked.length} acknowledged events all delivered and succeeded, ${refused.length} refused all absent; integrity_check ok`,
    );
  });
});
