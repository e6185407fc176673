/**
 * Pull delivery with several consumer processes on one destination, one SIGKILLed in the middle
 * of a handler: its claims come back after their visibility timeout (as failed attempts, traced
 * `expire`) and are handled by the others; every event succeeds; the events of each group run in
 * order and never on two consumers at once. Real processes: a node (SQLite) and three consumers
 * (test/support/pull-consumer-child.ts, the SDK's consumer). Prints the counts.
 */
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { after, describe, it } from 'node:test';
import { callApi as api } from '../support/http.ts';
import { waitUntil } from '../support/node.ts';
import { startNodeProcess, stopNodeProcess, type NodeProcess } from '../support/process.ts';

const ADMIN_KEY = 'e2e-admin-key-0123456789abcdef';
const CHILD = fileURLToPath(new URL('../support/pull-consumer-child.ts', import.meta.url));
const GROUPS = 8;
const PER_GROUP = 8;
const UNGROUPED = 60;
const TOTAL = GROUPS * PER_GROUP + UNGROUPED;

interface Line {
  ev: 'start' | 'end' | 'ready';
  id: string;
  g: string | null;
  s: number;
  attempt: number;
  at: number;
  consumer: number;
}

interface Consumer {
  child: ChildProcess;
  lines: Line[];
  exited: Promise<unknown>;
}

function startConsumer(n: number, url: string, key: string): Consumer {
  const child = spawn(process.execPath, ['--import', 'tsx', CHILD], {
    stdio: ['ignore', 'pipe', 'inherit'],
    env: {
      ...process.env,
      BELFRY_URL: url,
      BELFRY_KEY: key,
      BELFRY_DEST: 'jobs',
      BELFRY_VISIBILITY: '2s',
      HANDLER_MS: '120',
    },
  });
  const lines: Line[] = [];
  createInterface({ input: child.stdout! }).on('line', (l) => lines.push({ ...JSON.parse(l), consumer: n }));
  return { child, lines, exited: new Promise((r) => child.once('exit', r)) };
}

describe('pull consumers across a SIGKILL', () => {
  const dataDir = mkdtempSync(join(tmpdir(), 'belfry-e2e-pull-'));
  let node: NodeProcess | undefined;
  const consumers: Consumer[] = [];
  after(async () => {
    for (const c of consumers) if (c.child.exitCode === null && c.child.signalCode === null) c.child.kill('SIGKILL');
    await Promise.all(consumers.map((c) => c.exited));
    if (node) await stopNodeProcess(node);
    rmSync(dataDir, { recursive: true, force: true });
  });

  it("loses nothing, re-delivers the killed consumer's claims, keeps groups in order and exclusive", async () => {
    node = await startNodeProcess(['--data', dataDir, '--admin-key', ADMIN_KEY]);
    const tenant = await api(node.url, ADMIN_KEY, 'POST', '/v1/tenants', { name: 'e2e' });
    const key = (await api(node.url, ADMIN_KEY, 'POST', `/v1/tenants/${tenant.body.id}/keys`, {})).body.key as string;
    const put = await api(node.url, key, 'PUT', '/v1/destinations/jobs', {
      kind: 'pull',
      retry: { minBackoff: '100ms', maxBackoff: '200ms', maxAttempts: 20 },
    });
    assert.equal(put.status, 201, JSON.stringify(put.body));
    const now = Date.now();
    const events = [
      ...Array.from({ length: GROUPS * PER_GROUP }, (_, i) => {
        const g = `g${i % GROUPS}`;
        const s = Math.floor(i / GROUPS);
        return { id: `${g}-${s}`, destination: 'jobs', fireAt: now + s, group: g, payload: { g, s } };
      }),
      ...Array.from({ length: UNGROUPED }, (_, i) => ({
        id: `u-${i}`,
        destination: 'jobs',
        fireAt: now,
        payload: { g: null, s: i },
      })),
    ];
    const batch = await api(node.url, key, 'POST', '/v1/events/batch', { events });
    assert.equal(batch.status, 200, JSON.stringify(batch.body).slice(0, 500));

    for (let n = 0; n < 3; n++) consumers.push(startConsumer(n, node.url, key));
    // Kill consumer 0 in the middle of a handler, once it has finished a few.
    const victim = consumers[0];
    const inFlight = () => {
      const open = new Map<string, Line>();
      for (const l of victim.lines) {
        if (l.ev === 'start') open.set(`${l.id}#${l.attempt}`, l);
        if (l.ev === 'end') open.delete(`${l.id}#${l.attempt}`);
      }
      return [...open.values()];
    };
    await waitUntil(
      'consumer 0 mid-handler after a few',
      () => victim.lines.filter((l) => l.ev === 'end').length >= 3 && inFlight().length > 0,
      60_000,
      5,
    );
    victim.child.kill('SIGKILL');
    await victim.exited;
    const killedAt = Date.now();
    const orphans = inFlight();
    assert.ok(orphans.length > 0);

    const count = async (state: string) => {
      let n = 0;
      let cursor: string | null = null;
      do {
        const page: { body: { events: unknown[]; nextCursor: string | null } } = await api(
          node!.url,
          key,
          'GET',
          `/v1/events?state=${state}&limit=1000${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`,
        );
        n += page.body.events.length;
        cursor = page.body.nextCursor;
      } while (cursor);
      return n;
    };
    await waitUntil('every event succeeded', async () => (await count('succeeded')) === TOTAL, 90_000, 200);

    // The killed consumer's claims came back: each orphan was started again elsewhere, after its
    // visibility timeout, and its trace shows the expiry.
    const all = consumers.flatMap((c) => c.lines).filter((l) => l.ev !== 'ready');
    for (const o of orphans) {
      const again = all.filter((l) => l.ev === 'start' && l.id === o.id && l.consumer !== 0);
      assert.ok(again.length > 0, `${o.id} handled again by another consumer`);
      assert.ok(
        again.every((l) => l.attempt > o.attempt),
        `${o.id}: a later attempt`,
      );
      const trace = await api(node.url, key, 'GET', `/v1/events/${o.id}/transitions`);
      assert.ok(
        trace.body.transitions.some((t: { detail: { pull?: string } | null }) => t.detail?.pull === 'expire'),
        `${o.id}: an expire transition`,
      );
    }

    // Groups: runs (start to end, or to the kill) in start order never overlap, and go in order.
    for (let gi = 0; gi < GROUPS; gi++) {
      const g = `g${gi}`;
      const starts = all.filter((l) => l.ev === 'start' && l.g === g).sort((a, b) => a.at - b.at);
      let prevEnd = -Infinity;
      let prevSeq = -1;
      for (const st of starts) {
        const end = all.find(
          (l) => l.ev === 'end' && l.id === st.id && l.attempt === st.attempt && l.consumer === st.consumer,
        );
        assert.ok(
          st.at >= prevEnd,
          `group ${g}: ${st.id} (attempt ${st.attempt}) started before the previous run ended`,
        );
        assert.ok(st.s >= prevSeq, `group ${g}: ${st.id} ran after a later event of its group`);
        prevEnd = end ? end.at : killedAt;
        prevSeq = st.s;
      }
      assert.deepEqual(
        [...new Set(starts.map((l) => l.s))],
        Array.from({ length: PER_GROUP }, (_, s) => s),
        `group ${g}: every event, in order`,
      );
    }
    const handled = new Set(all.filter((l) => l.ev === 'end').map((l) => l.id));
    assert.equal(handled.size, TOTAL, 'every event handled to its end');
    const runs = all.filter((l) => l.ev === 'start').length;
    console.log(
      `pull e2e: ${TOTAL} events, ${runs} handler runs (${runs - TOTAL} again), ${orphans.length} orphaned by the kill, all succeeded`,
    );
  });
});
