/**
 * A bulk job survives a SIGKILL of its node mid-job: the restarted node takes the job over at the
 * cursor stored with its last batch and finishes it; every event is shifted exactly once (a batch
 * commits its changes and the cursor together).
 */
import { after, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { callApi as api } from '../support/http.ts';
import { killNodeProcess, startNodeProcess, type NodeProcess } from '../support/process.ts';

const ADMIN_KEY = 'e2e-admin-key-0123456789abcdef';
const EVENTS = 20_000;
const HOUR = 3_600_000;

/** Polls `fn` until it returns a value, or fails at the deadline. */
async function waitFor<T>(what: string, fn: () => Promise<T | null>, deadlineMs: number): Promise<T> {
  const end = Date.now() + deadlineMs;
  for (;;) {
    const v = await fn();
    if (v !== null) return v;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

describe('bulk job across a SIGKILL', () => {
  const dataDir = mkdtempSync(join(tmpdir(), 'belfry-e2e-bulk-'));
  let node: NodeProcess | undefined;
  after(async () => {
    if (node) await killNodeProcess(node);
    rmSync(dataDir, { recursive: true, force: true });
  });

  it('resumes from its stored cursor after a restart and shifts every event exactly once', async () => {
    const args = ['--data', dataDir, '--admin-key', ADMIN_KEY, '--allow-hosts', '127.0.0.1'];
    node = await startNodeProcess(args);
    const tenant = await api(node.url, ADMIN_KEY, 'POST', '/v1/tenants', { name: 'e2e-bulk' });
    const key = (await api(node.url, ADMIN_KEY, 'POST', `/v1/tenants/${tenant.body.id}/keys`, {})).body.key as string;
    assert.equal(
      (await api(node.url, key, 'PUT', '/v1/destinations/rx', { url: 'http://127.0.0.1:9/unused' })).status,
      201,
    );
    const base = Date.now() + 24 * HOUR;
    for (let b = 0; b < EVENTS; b += 1_000) {
      const events = Array.from({ length: 1_000 }, (_, k) => ({
        id: `s-${b + k}`,
        destination: 'rx',
        fireAt: base + b + k,
        type: 'shift.me',
      }));
      assert.equal((await api(node.url, key, 'POST', '/v1/events/batch', { events })).status, 200);
    }
    const started = await api(node.url, key, 'POST', '/v1/events/bulk', {
      filter: { type: 'shift.me' },
      action: { shift: '+1h' },
    });
    assert.equal(started.status, 202, JSON.stringify(started.body));
    const id = started.body.id as string;
    const status = async (n: NodeProcess) => (await api(n.url, key, 'GET', `/v1/bulk/${id}`)).body;
    const mid = await waitFor(
      'the job to be part way',
      async () => {
        const s = await status(node!);
        return s.state === 'running' && s.done >= 1_000 ? s : null;
      },
      60_000,
    );
    await killNodeProcess(node);
    const doneBeforeKill = mid.done;

    node = await startNodeProcess(args);
    const afterRestart = await status(node);
    assert.ok(
      afterRestart.done >= doneBeforeKill && afterRestart.done < EVENTS,
      `resumes part way: ${JSON.stringify(afterRestart)}`,
    );
    const final = await waitFor(
      'the job to finish',
      async () => {
        const s = await status(node!);
        return s.state === 'running' ? null : s;
      },
      120_000,
    );
    console.log(
      `bulk restart: killed at ${doneBeforeKill} of ${EVENTS} done; finished ${JSON.stringify({ state: final.state, matched: final.matched, done: final.done, skipped: final.skipped })}`,
    );
    assert.deepEqual([final.state, final.matched, final.done, final.skipped], ['succeeded', EVENTS, EVENTS, 0]);

    // Every event moved by exactly one hour: none twice, none missed.
    const wrong: string[] = [];
    let seen = 0;
    let cursor: string | null = null;
    do {
      const page: { events: { id: string; fireAt: string }[]; nextCursor: string | null } = (
        await api(node.url, key, 'GET', `/v1/events?type=shift.me&limit=1000${cursor ? `&cursor=${cursor}` : ''}`)
      ).body;
      for (const e of page.events) {
        seen += 1;
        const i = Number(e.id.slice(2));
        if (Date.parse(e.fireAt) !== base + i + HOUR) wrong.push(`${e.id}: ${e.fireAt}`);
      }
      cursor = page.nextCursor;
    } while (cursor);
    assert.equal(seen, EVENTS);
    assert.deepEqual(wrong.slice(0, 5), [], `${wrong.length} events not shifted exactly once`);
    const trace = (await api(node.url, key, 'GET', '/v1/events/s-0/transitions')).body.transitions;
    assert.deepEqual(
      trace.map((t: { kind: string }) => t.kind),
      ['created', 'updated'],
      'one shift, one transition',
    );
  });
});
