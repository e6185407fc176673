/**
 * schedules (Belfry only): how punctual recurring schedules are. N schedules (default 1,000), each
 * `every: 1s`, created by the tenant over the API with startAts spread evenly over one second (as
 * schedules made at different times are), so N occurrences fall due each second, evenly, for D
 * (default 30 s) after a 5 s warm-up; with `--concurrency 1` (any value) they all share one startAt
 * instead: N occurrences due in the same millisecond each second. The receiver (its own process) measures each occurrence's lateness from the time in its
 * id. Reported: p50/p99/max of occurrence lateness after the warm-up (target: as one-shot events,
 * p99 ≤ 25 ms), occurrences delivered, missed (the schedules' missedCount), duplicates, and the
 * node's CPU per occurrence.
 */
import { runConcurrently } from '../lib/http.ts';
import { createBelfryStore, startBenchNode, type StoreKind } from '../lib/node.ts';
import { startReceiverProcess } from '../lib/receiver-process.ts';
import type { ScenarioOptions, ScenarioResult } from '../lib/report.ts';
import { distribution, sleep } from '../lib/stats.ts';

const N_DEFAULT = 1_000;
const DURATION_MS_DEFAULT = 30_000;
const WARMUP_MS = 5_000;
const CREATE_CONCURRENCY = 16;
const DRAIN_MS = 5_000;

export async function schedules(kind: StoreKind, opts: ScenarioOptions): Promise<ScenarioResult> {
  const n = opts.n ?? N_DEFAULT;
  const durationMs = opts.durationMs ?? DURATION_MS_DEFAULT;
  const store = await createBelfryStore(kind);
  const rx = await startReceiverProcess();
  const node = await startBenchNode(store);
  const setup = node.client(CREATE_CONCURRENCY);
  try {
    await node.putDestination('rx', rx.url, 256);
    // Creating takes a while: the first occurrence is due after all of them exist.
    const startAt = Math.ceil((Date.now() + 3_000 + n * 2) / 1000) * 1000;
    const together = opts.concurrency !== undefined;
    const startOf = (i: number) => (together ? startAt : startAt + Math.floor((i * 1000) / n));
    await runConcurrently(n, CREATE_CONCURRENCY, async (i) => {
      const res = await setup.call('POST', '/v1/schedules', {
        id: `s${i}`,
        every: '1s',
        startAt: startOf(i),
        destination: 'rx',
        payload: { i },
      });
      if (res.status !== 201) throw new Error(`create schedule: ${res.status} ${JSON.stringify(res.body)}`);
    });
    const measuredFrom = startAt + WARMUP_MS;
    const endAt = measuredFrom + durationMs;
    await sleep(Math.max(0, measuredFrom - Date.now()));
    const cpu0 = node.cpuSeconds();
    await sleep(Math.max(0, endAt - Date.now()));
    const cpu1 = node.cpuSeconds();
    await sleep(DRAIN_MS);
    const stats = await rx.stats();
    const measured: number[] = [];
    stats.fireAtMs.forEach((at, i) => {
      if (at >= measuredFrom && at < endAt) measured.push(stats.latenessMs[i]);
    });
    const expected = n * Math.round(durationMs / 1000);
    let missed = 0;
    await runConcurrently(n, CREATE_CONCURRENCY, async (i) => {
      missed += ((await setup.call('GET', `/v1/schedules/s${i}`)).body as { missedCount: number }).missedCount;
    });
    const lateness = distribution(measured);
    return {
      label: `schedules ${n.toLocaleString('en-US')} × every 1s${together ? ' (due together)' : ''} · Belfry · ${kind === 'sqlite' ? 'SQLite' : 'PostgreSQL'}`,
      scenario: 'schedules',
      system: `belfry-${kind}`,
      options: { n, durationMs, warmupMs: WARMUP_MS, dueTogether: together },
      metrics: [
        { name: 'occurrence lateness p50', value: lateness.p50, unit: 'ms' },
        { name: 'occurrence lateness p99', value: lateness.p99, unit: 'ms', target: '≤ 25' },
        { name: 'occurrence lateness max', value: lateness.max, unit: 'ms' },
        { name: 'occurrences delivered (measured window)', value: measured.length, unit: '' },
        { name: 'occurrences due (measured window)', value: expected, unit: '' },
        { name: 'missed (all schedules, whole run)', value: missed, unit: '' },
        { name: 'early', value: stats.early, unit: '', target: '0' },
        { name: 'duplicates', value: stats.duplicates, unit: '' },
        { name: 'node CPU µs per occurrence', value: ((cpu1 - cpu0) * 1e6) / Math.max(1, measured.length), unit: 'µs' },
      ],
      details: {
        startAt,
        measuredFrom,
        endAt,
        latenessMs: lateness,
        receiver: { count: stats.count, distinct: stats.distinct, unparsed: stats.unparsed },
      },
    };
  } finally {
    await setup.close();
    await node.stop();
    await rx.close();
    await store.dispose();
  }
}
