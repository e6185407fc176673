/** Starts receiver-child.ts as a separate process and asks it for counts and statistics over IPC. */
import type { ChildProcess } from 'node:child_process';
import { firstMessage, forkTs } from './fork-ts.ts';
import type { BenchChannel } from './bench-channel.ts';
import type { ChildMessage, ChildRequest, PullConsumerConfig, ReceiverStats } from './receiver-child.ts';
import { sleep } from './stats.ts';

const CHILD = new URL('./receiver-child.ts', import.meta.url);
const START_MS_MAX = 15_000;
const ANSWER_MS_MAX = 15_000;
const POLL_MS = 250;

export interface ReceiverProcess {
  /** The webhook URL ('' for a broker channel). */
  url: string;
  /** For a broker channel: the destination body that delivers to the consumer. */
  destination: Record<string, unknown> | null;
  /** The receiver's process id (its CPU is a pull consumer's). */
  pid: number | undefined;
  /** Counts only (no lateness samples): cheap enough to poll. */
  count(): Promise<ReceiverStats>;
  stats(): Promise<ReceiverStats>;
  /** Resolves once `distinct >= n`, or at `deadline` (epoch ms) with whatever arrived. */
  waitForDistinct(n: number, deadline: number): Promise<ReceiverStats>;
  close(): Promise<void>;
}

/**
 * The receiver of `channel` (http: a webhook URL; a broker: a live consumer), or, with a
 * PullConsumerConfig, a pull consumer (Belfry's SDK consumer, BullMQ's Worker) in its process.
 */
export async function startReceiverProcess(
  channel: BenchChannel | PullConsumerConfig = 'http',
): Promise<ReceiverProcess> {
  const args = typeof channel === 'string' ? [channel] : ['pull', JSON.stringify(channel)];
  // 'advanced' (structured clone): a million lateness samples cross as arrays, not JSON text.
  const child = forkTs(CHILD, args, { serialization: 'advanced' });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const { url, destination } = await receiverReady(child).catch((err: unknown) => {
    child.kill('SIGKILL');
    throw err;
  });
  let seq = 0;
  const ask = (type: ChildRequest['type']) =>
    new Promise<ReceiverStats>((resolve, reject) => {
      const mine = ++seq;
      const timer = setTimeout(
        () => done(new Error(`receiver did not answer "${type}" within ${ANSWER_MS_MAX}ms`)),
        ANSWER_MS_MAX,
      );
      const onMessage = (msg: ChildMessage) => {
        if ('seq' in msg && msg.seq === mine) done(null, msg.stats);
      };
      const done = (err: Error | null, stats?: ReceiverStats) => {
        clearTimeout(timer);
        child.off('message', onMessage);
        if (err) reject(err);
        else resolve(stats!);
      };
      child.on('message', onMessage);
      child.send({ seq: mine, type } satisfies ChildRequest);
    });
  const count = () => ask('count');
  return {
    url,
    destination,
    pid: child.pid,
    count,
    stats: () => ask('stats'),
    async waitForDistinct(n, deadline) {
      for (;;) {
        const now = await count();
        if (now.distinct >= n || Date.now() >= deadline) return now;
        await sleep(POLL_MS);
      }
    },
    async close() {
      if (child.connected) child.send({ seq: 0, type: 'close' } satisfies ChildRequest);
      const timer = setTimeout(() => child.kill('SIGKILL'), ANSWER_MS_MAX);
      await exited;
      clearTimeout(timer);
    },
  };
}

async function receiverReady(
  child: ChildProcess,
): Promise<{ url: string; destination: Record<string, unknown> | null }> {
  const msg = await firstMessage<ChildMessage>(child, 'receiver', START_MS_MAX);
  if (!('url' in msg)) throw new Error('receiver: unexpected first message');
  return { url: msg.url, destination: msg.destination };
}
