/**
 * One node's reader of one Kafka source: a KafkaJS consumer in the source's consumer group (the
 * nodes of a cluster share the topic's partitions through it), and a producer for the dead-letter
 * topic.
 *
 * Per batch of a partition, in chunks of at most CHUNK_MESSAGES_MAX messages, each no larger
 * than the tenant's scheduleRequestsPerSecond admits now (one request per message: the sink's
 * admit()); when it admits none the reader waits, heart-beating, and fetches nothing more meanwhile,
 * so a topic filled faster than the tenant's rate is read at that rate, and nothing is refused:
 *   1. the sink checks the messages and stores the accepted ones' events (group commit: durable);
 *   2. the rejected ones go to the dead-letter topic, bytes and key unchanged, their headers kept,
 *      plus `belfry-error` (the reason), `belfry-source`, `belfry-partition`, `belfry-offset`,
 *      acknowledged by all in-sync replicas (acks -1);
 *   3. only then is the offset after the chunk committed, and the counts and the partition's lag
 *      reported to the store.
 * A failure at 1 or 2 commits nothing: the chunk is read again, and the store's insert by id
 * (derived ids for events without one) makes nothing twice. The consumer does not restart itself
 * (restartOnFailure: false): a crash ends this reader, and the manager starts a new one after a
 * backoff, recording the error.
 *
 * Every broker connection, bootstrap or named by the cluster's metadata, passes the
 * private-address guard (the Kafka channel's socket factory), and is destroyed when the reader
 * stops (after leaving the group, which is waited for at most STOP_MS_MAX: KafkaJS's disconnect
 * only half-closes its sockets, which a broker that stopped answering would keep open).
 * `ssl: true` is TLS or nothing; SASL PLAIN without it is refused unless the source says
 * `allowInsecureCredentials` (a source stored before the rule fails with the reason, and sends nothing).
 */
import {
  Kafka,
  logLevel,
  type Consumer,
  type IHeaders,
  type KafkaMessage,
  type Producer,
  type SASLOptions,
} from 'kafkajs';
import type { AddressPolicy } from '../../core/address.ts';
import { SystemClock } from '../../core/clock.ts';
import { guardedSocketFactory } from '../../channels/kafka/channel.ts';
import { clearCredentials } from '../../channels/kafka/spec.ts';
import { assertCredentialsTls, type InsecureCredentialsOptIn } from '../../channels/broker/config.ts';
import type { SourceError, SourceRecord, SourceState } from '../../store/sources.ts';

export const CHUNK_MESSAGES_MAX = 500;
/** A reason in `belfry-error` and in lastErrors is cut to this many characters. */
export const REASON_LENGTH_MAX = 500;

/** One message as the sink gets it. */
export interface SourceMessage {
  partition: number;
  /** Kafka offsets are int64: the decimal string KafkaJS gives. */
  offset: string;
  value: Buffer | null;
}

export type MessageOutcome = { kind: 'accepted'; created: number } | { kind: 'rejected'; reason: string };

/** Checks and stores the events of messages (api/source-ingest.ts). */
export interface SourceSink {
  /**
   * How many of `want` messages may be ingested now (the tenant's scheduleRequestsPerSecond, one
   * request per message); when `granted` is 0, `waitMs` says when to ask again.
   */
  admit(source: SourceRecord, want: number): Promise<{ granted: number; waitMs: number }>;
  ingest(source: SourceRecord, messages: SourceMessage[]): Promise<MessageOutcome[]>;
}

export interface ReaderReport {
  acceptedAdd: number;
  rejectedAdd: number;
  errors: SourceError[];
  state?: SourceState;
  lag?: Record<string, number>;
}

export interface KafkaSourceReaderDeps {
  source: SourceRecord;
  sink: SourceSink;
  policy: AddressPolicy;
  now(): number;
  /** Adds to the source's counts in the store; failures are the caller's to log. */
  report(r: ReaderReport): Promise<void>;
  /** The consumer crashed: this reader is over. */
  onCrash(err: Error): void;
  /** Waits while the tenant's rate admits no message (the node's clock; default: real time). */
  sleep?(ms: number, signal: AbortSignal): Promise<void>;
  /** Tests: after a chunk's events are stored, before its offset is committed. */
  afterStore?(messages: SourceMessage[]): Promise<void>;
}

export interface KafkaSourceReaderOptions {
  connectTimeoutMs: number;
  sessionTimeoutMs: number;
}

/** The longest wait for the tenant's rate between two heartbeats. */
const RATE_WAIT_MS_MAX = 1_000;
/** The longest wait for the consumer to leave its group (and the producer to close) on stop. */
export const STOP_MS_MAX = 10_000;
const systemClock = new SystemClock();
const systemSleep = (ms: number, signal: AbortSignal) => systemClock.sleep(ms, signal);

const cut = (s: string) => (s.length > REASON_LENGTH_MAX ? `${s.slice(0, REASON_LENGTH_MAX - 1)}…` : s);

function deadLetterHeaders(source: string, m: KafkaMessage, partition: number, reason: string): IHeaders {
  return {
    ...(m.headers ?? {}),
    'belfry-error': cut(reason),
    'belfry-source': source,
    'belfry-partition': String(partition),
    'belfry-offset': m.offset,
  };
}

export class KafkaSourceReader {
  private consumer: Consumer | null = null;
  private producer: Producer | null = null;
  private stopped = false;
  /** Aborted by stop(): ends a wait for the tenant's rate at once. */
  private readonly abort = new AbortController();
  /** Aborted at the end of stop(): destroys every socket of the consumer and the producer. */
  private readonly sockets = new AbortController();

  constructor(
    private readonly deps: KafkaSourceReaderDeps,
    // A node killed without leaving holds its partitions until its session times out: 10 s.
    private readonly opts: KafkaSourceReaderOptions = { connectTimeoutMs: 10_000, sessionTimeoutMs: 10_000 },
  ) {}

  get source(): SourceRecord {
    return this.deps.source;
  }

  /** Connects and starts reading; rejects when the broker cannot be reached. */
  async start(): Promise<void> {
    const { spec, name } = this.deps.source;
    assertCredentialsTls(clearCredentials(spec), spec as InsecureCredentialsOptIn);
    const kafka = new Kafka({
      clientId: `belfry-source-${name}`,
      brokers: spec.brokers,
      ssl: spec.ssl,
      sasl: spec.sasl
        ? ({
            mechanism: spec.sasl.mechanism,
            username: spec.sasl.username,
            password: spec.sasl.password,
          } as SASLOptions)
        : undefined,
      connectionTimeout: this.opts.connectTimeoutMs,
      retry: { retries: 3, initialRetryTime: 300, maxRetryTime: 5_000 },
      socketFactory: guardedSocketFactory(this.deps.policy, this.sockets.signal),
      logLevel: logLevel.NOTHING,
    });
    const consumer = kafka.consumer({
      groupId: spec.groupId,
      sessionTimeout: this.opts.sessionTimeoutMs,
      allowAutoTopicCreation: false,
      retry: { retries: 3, initialRetryTime: 300, maxRetryTime: 5_000, restartOnFailure: async () => false },
    });
    this.consumer = consumer;
    consumer.on(consumer.events.CRASH, (e) => {
      if (!this.stopped) this.deps.onCrash(e.payload.error);
    });
    consumer.on(consumer.events.GROUP_JOIN, () => {
      this.deps.report({ acceptedAdd: 0, rejectedAdd: 0, errors: [], state: 'running' }).catch(() => {});
    });
    if (spec.deadLetterTopic) {
      this.producer = kafka.producer({ allowAutoTopicCreation: false, idempotent: false });
      await this.producer.connect();
    }
    await consumer.connect();
    await consumer.subscribe({ topic: spec.topic, fromBeginning: spec.start === 'earliest' });
    await consumer.run({
      autoCommit: false,
      eachBatchAutoResolve: false,
      eachBatch: async ({ batch, resolveOffset, heartbeat, isRunning, isStale }) => {
        let i = 0;
        while (i < batch.messages.length) {
          if (!isRunning() || isStale() || this.stopped) return;
          const want = Math.min(CHUNK_MESSAGES_MAX, batch.messages.length - i);
          const { granted, waitMs } = await this.deps.sink.admit(this.deps.source, want);
          if (granted === 0) {
            // Over the tenant's rate: wait (at most a second at a time, so the session stays alive).
            await this.sleep(Math.min(waitMs, RATE_WAIT_MS_MAX));
            await heartbeat();
            continue;
          }
          const chunk = batch.messages.slice(i, i + granted);
          await this.handleChunk(consumer, batch.topic, batch.partition, chunk, batch.highWatermark);
          resolveOffset(chunk[chunk.length - 1].offset);
          await heartbeat();
          i += granted;
        }
      },
    });
  }

  /** Resolves after `ms`, or at once when the reader is stopped. */
  private async sleep(ms: number): Promise<void> {
    await (this.deps.sleep ?? systemSleep)(ms, this.abort.signal).catch(() => {});
  }

  private async handleChunk(
    consumer: Consumer,
    topic: string,
    partition: number,
    chunk: KafkaMessage[],
    highWatermark: string,
  ): Promise<void> {
    const { source, sink } = this.deps;
    const messages: SourceMessage[] = chunk.map((m) => ({ partition, offset: m.offset, value: m.value }));
    const outcomes = await sink.ingest(source, messages);
    await this.deps.afterStore?.(messages);
    const rejected = chunk.map((m, i) => ({ m, o: outcomes[i] })).filter((x) => x.o.kind === 'rejected') as {
      m: KafkaMessage;
      o: { kind: 'rejected'; reason: string };
    }[];
    if (rejected.length > 0 && this.producer && source.spec.deadLetterTopic) {
      await this.producer.send({
        topic: source.spec.deadLetterTopic,
        acks: -1,
        messages: rejected.map(({ m, o }) => ({
          key: m.key,
          value: m.value,
          headers: deadLetterHeaders(source.name, m, partition, o.reason),
        })),
      });
    }
    const next = (BigInt(chunk[chunk.length - 1].offset) + 1n).toString();
    await consumer.commitOffsets([{ topic, partition, offset: next }]);
    const lag = BigInt(highWatermark) - BigInt(next);
    const now = this.deps.now();
    // The offset is committed: a failed report loses only counts, never an event.
    await this.deps
      .report({
        acceptedAdd: outcomes.length - rejected.length,
        rejectedAdd: rejected.length,
        errors: rejected
          .slice(-10)
          .map(({ m, o }) => ({ at: now, message: cut(`partition ${partition} offset ${m.offset}: ${o.reason}`) })),
        state: 'running',
        lag: { [partition]: Number(lag > 0n ? lag : 0n) },
      })
      .catch(() => {});
  }

  /** Leaves the group (its partitions go to the other nodes) and closes both clients. */
  async stop(): Promise<void> {
    this.stopped = true;
    this.abort.abort();
    await bounded(this.consumer?.disconnect());
    await bounded(this.producer?.disconnect());
    this.sockets.abort();
  }
}

/** Waits for `p` (its failure ignored), at most STOP_MS_MAX. */
async function bounded(p: Promise<void> | undefined): Promise<void> {
  if (!p) return;
  let timer: NodeJS.Timeout | undefined;
  await Promise.race([p.catch(() => {}), new Promise<void>((r) => (timer = setTimeout(r, STOP_MS_MAX)))]);
  clearTimeout(timer);
}
