/**
 * Prometheus metrics of one node, in one registry: prom-client's implementation of the metrics
 * port (core/metrics.ts) that scheduler/, dispatch/ and api/ update, plus what only the node's
 * wiring updates (sources, schedules, retention, threads).
 */
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import type { Metrics as MetricsPort } from '../core/metrics.ts';
import type { BusyThread } from '../core/thread-busy.ts';

export class Metrics implements MetricsPort {
  readonly registry = new Registry();
  private threads: () => BusyThread[] = () => [];
  /** Each thread's busy milliseconds at the previous scrape, by the thread itself. */
  private readonly threadBusyMs = new WeakMap<object, number>();
  readonly threadBusySeconds = new Counter({
    name: 'belfry_thread_busy_seconds_total',
    help: "Seconds each of the node's threads was busy (its event loop not waiting for work; synchronous SQL and fsync count): the thread whose rate nears 1 bounds the node",
    labelNames: ['thread'] as const,
    registers: [this.registry],
    collect: () => this.collectThreads(),
  });
  readonly eventsScheduled = new Counter({
    name: 'belfry_events_scheduled_total',
    help: 'Events accepted (created) through the API',
    registers: [this.registry],
  });
  readonly sourceMessages = new Counter({
    name: 'belfry_source_messages_total',
    help: 'Messages of Kafka sources read by this node and committed: their events stored (accepted) or refused (rejected, to the dead-letter topic)',
    labelNames: ['outcome'] as const,
    registers: [this.registry],
  });
  readonly sourceReaderFailures = new Counter({
    name: 'belfry_source_reader_failures_total',
    help: 'Kafka source readers of this node that failed (could not connect, or crashed) and are started again after a backoff',
    registers: [this.registry],
  });
  readonly scheduleOccurrences = new Counter({
    name: 'belfry_schedule_occurrences_total',
    help: 'Occurrences of recurring schedules: made into events (made) or missed and not made (missed)',
    labelNames: ['outcome'] as const,
    registers: [this.registry],
  });
  readonly eventsFired = new Counter({
    name: 'belfry_events_fired_total',
    help: 'Events claimed for delivery (scheduled or awaiting_retry to executing)',
    registers: [this.registry],
  });
  readonly deliveries = new Counter({
    name: 'belfry_deliveries_total',
    help: 'Delivery attempts by outcome (delivered, retry, discard)',
    labelNames: ['outcome'] as const,
    registers: [this.registry],
  });
  readonly fireLatenessSeconds = new Histogram({
    name: 'belfry_fire_lateness_seconds',
    help: 'Delay between an event being due and its delivery attempt starting',
    buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60],
    registers: [this.registry],
  });
  readonly deliveryDurationSeconds = new Histogram({
    name: 'belfry_delivery_duration_seconds',
    help: 'Duration of delivery attempts',
    buckets: [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
    registers: [this.registry],
  });
  readonly outcomeUnrecordedSeconds = new Histogram({
    name: 'belfry_outcome_unrecorded_seconds',
    help: 'Time from the end of a delivery attempt to the commit of its outcome: a node that dies within it has its event delivered again',
    buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
    registers: [this.registry],
  });
  readonly outcomeBatchesSetAside = new Counter({
    name: 'belfry_outcome_batches_set_aside_total',
    help: 'Batches of delivery outcomes the store refused for a reason retrying does not cure; their outcomes were then recorded one by one',
    registers: [this.registry],
  });
  readonly outcomesDropped = new Counter({
    name: 'belfry_outcomes_dropped_total',
    help: 'Delivery outcomes the store refused on their own; their events stay executing until rescued, then are delivered again',
    registers: [this.registry],
  });
  readonly writeQueueRejected = new Counter({
    name: 'belfry_write_queue_rejected_total',
    help: 'Event writes answered 503 because the group-commit queue was full',
    registers: [this.registry],
  });
  readonly eventsPending = new Gauge({
    name: 'belfry_events',
    help: 'Stored events per state, as of the latest background count (its age: belfry_events_sample_age_seconds)',
    labelNames: ['state'] as const,
    registers: [this.registry],
  });
  readonly eventsSampleAgeSeconds = new Gauge({
    name: 'belfry_events_sample_age_seconds',
    help: 'Age of the counts in belfry_events: time since that background count began',
    registers: [this.registry],
  });
  readonly eventsSamples = new Counter({
    name: 'belfry_events_samples_total',
    help: 'Background counts of events that ended (belfry_events comes from the latest)',
    registers: [this.registry],
  });
  readonly eventsSampleDurationSeconds = new Gauge({
    name: 'belfry_events_sample_duration_seconds',
    help: 'How long the latest background count of events took (counts are at least 20 times that apart)',
    registers: [this.registry],
  });

  readonly eventsParked = new Gauge({
    name: 'belfry_events_parked',
    help: 'Due events held back unclaimed because their virtual queue (or the node) is at its claim bound',
    registers: [this.registry],
  });
  readonly eventsClaimed = new Gauge({
    name: 'belfry_events_claimed',
    help: 'Events claimed by this node and not yet recorded (in its virtual queues or being delivered)',
    registers: [this.registry],
  });
  readonly queuesOverflowed = new Gauge({
    name: 'belfry_queues_overflowed',
    help: 'Virtual queues with more due events than they may hold in memory (the rest wait in the store)',
    registers: [this.registry],
  });
  readonly retentionDeleted = new Counter({
    name: 'belfry_retention_deleted_total',
    help: 'Rows deleted by the retention cleaner: table events (by the state they were in) or transitions',
    labelNames: ['table', 'state'] as const,
    registers: [this.registry],
  });
  readonly retentionBatchDurationSeconds = new Histogram({
    name: 'belfry_retention_batch_duration_seconds',
    help: 'Duration of one retention delete batch (on SQLite the event loop is held this long)',
    buckets: [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1],
    registers: [this.registry],
  });
  readonly retentionPassDurationSeconds = new Histogram({
    name: 'belfry_retention_pass_duration_seconds',
    help: 'Duration of one retention pass over every tenant, pauses included',
    buckets: [0.01, 0.1, 0.5, 1, 5, 10, 30, 60, 300, 900, 3600],
    registers: [this.registry],
  });
  readonly retentionLastPassSeconds = new Gauge({
    name: 'belfry_retention_last_pass_timestamp_seconds',
    help: 'When the last retention pass of this node ended (unix seconds); only the leader cleans',
    registers: [this.registry],
  });
  readonly pullClaimed = new Counter({
    name: 'belfry_pull_claimed_total',
    help: 'Events handed out by pull claims (scheduled or awaiting_retry to executing)',
    registers: [this.registry],
  });
  readonly pullEnded = new Counter({
    name: 'belfry_pull_ended_total',
    help: 'Pull claims ended, by what ended them (ack, nack, expire) and the state the event went to',
    labelNames: ['action', 'state'] as const,
    registers: [this.registry],
  });
  readonly buildInfo = new Gauge({
    name: 'belfry_build_info',
    help: 'Always 1; its labels say what runs: Belfry version, Node.js version and store (sqlite or postgres)',
    labelNames: ['version', 'node', 'store'] as const,
    registers: [this.registry],
  });
  readonly pullParked = new Gauge({
    name: 'belfry_pull_parked_claims',
    help: 'Pull claims of this node waiting for events (long polls)',
    registers: [this.registry],
  });

  constructor(opts: { defaultMetrics?: boolean } = {}) {
    if (opts.defaultMetrics) collectDefaultMetrics({ register: this.registry, prefix: 'belfry_' });
  }

  /** Sets belfry_build_info to 1 with these labels (once, at the node's start). */
  setBuildInfo(info: { version: string; node: string; store: 'sqlite' | 'postgres' }): void {
    this.buildInfo.reset();
    this.buildInfo.set(info, 1);
  }

  /** The threads /metrics reports the busy time of, read at each scrape. */
  watchThreads(threads: () => BusyThread[]): void {
    this.threads = threads;
  }

  private collectThreads(): void {
    for (const t of this.threads()) {
      const ms = t.activeMs();
      // A thread new under a name (a delivery thread replaced) counts from its own start.
      const last = this.threadBusyMs.get(t.key) ?? 0;
      this.threadBusyMs.set(t.key, ms);
      this.threadBusySeconds.inc({ thread: t.name }, Math.max(0, ms - last) / 1_000);
    }
  }
}
