/**
 * The dispatcher: takes claimed (executing) events, routes each to its virtual queue, delivers it
 * through the channel, decides the next state and records it in batches.
 *
 *   claimed event ─▶ resolve destination ─▶ VirtualQueue(tenant, destination) ─▶ channel.deliver
 *        ─▶ decideNext ─▶ OutcomeRecorder (batched, conditional on version + owner)
 *        ─▶ retry: back into the scheduler's timer · terminal in a group: the group's next event
 *
 * Invariant: every event handed to submit() leaves through exactly one recorded outcome, or stays
 * `executing` in the store (a crash, or a store that is down) to be rescued: at-least-once.
 *
 * Logs (info), each at most once per change of a queue, never once per event: a queue's circuit
 * opened or closed, its endpoint started failing or recovered (virtual-queue.ts), events archived
 * (archive-log.ts: the first of a minute with its id, the rest of that minute as a count).
 *
 * Bounds: the events of each virtual queue submitted and not yet recorded are counted (`held`);
 * the scheduler claims for a queue only while `queueRoom` is positive (the queue's claimedMax
 * minus what it holds; none behind an open circuit, then one for its probe), and is told
 * (`onRoom`) when recorded outcomes free room or a circuit lets its probe through.
 */
import type { Logger } from 'pino';
import {
  brokerDueEvent,
  type Channel,
  type DeliveryOutcome,
  type DueEvent,
  type DueEventCommon,
} from '../channels/channel.ts';
import { DEFAULT_RETRY } from '../core/backoff.ts';
import type { Clock } from '../core/clock.ts';
import type { EventRecord } from '../core/event.ts';
import type { Metrics } from '../core/metrics.ts';
import { dueRefOf, type DueRef, type Store } from '../store/store.ts';
import { destinationNameOf, queueKeyOf, queueOf } from '../core/queue.ts';
import { ArchiveLog, archiveCauseOf, queueLogFields } from './archive-log.ts';
import { DestinationResolver, type DeliverySettings } from './destinations.ts';
import { decideNext } from './outcome.ts';
import { OutcomeRecorder, type RecordedOutcome } from './recorder.ts';
import { TenantPolicies, type TenantPolicy } from './tenant-policy.ts';
import { CLAIMED_MIN, VirtualQueue, type QueueChange, type QueueHealth } from './virtual-queue.ts';
import type { EventSink } from '../core/event-sink.ts';

export interface DispatcherDeps {
  store: Pick<Store, 'destinationGet' | 'tenantGet' | 'tenantSecretsGet' | 'tenantSecretsSwap' | 'eventRecordAttempts'>;
  clock: Clock;
  channel: Channel;
  owner: string;
  metrics: Metrics;
  logger: Logger;
  random?: () => number;
  /**
   * `due`: retries and released events, fireable again at their due time; `groupSettled`: an
   * event of a group reached a terminal state, so its next event may go.
   */
  events: Pick<EventSink, 'due' | 'groupSettled'>;
  /** Outcomes were recorded: queues have room for more claims. */
  onRoom?(): void;
}

type Ctx = { event: EventRecord };

/** Virtual queues kept before idle ones are forgotten. */
export const QUEUES_MAX = 10_000;

export class Dispatcher {
  private readonly queues = new Map<string, VirtualQueue<EventRecord>>();
  private readonly resolver: DestinationResolver;
  private readonly recorder: OutcomeRecorder<Ctx>;
  private readonly random: () => number;
  private readonly policies: TenantPolicies;
  /** Events submitted whose outcome is not yet recorded. */
  private outstanding = 0;
  /** The same, per virtual queue (entries at zero are removed). */
  private readonly held = new Map<string, number>();
  private idleWaiters: (() => void)[] = [];
  private readonly archiveLog: ArchiveLog;

  constructor(private readonly deps: DispatcherDeps) {
    this.random = deps.random ?? Math.random;
    this.archiveLog = new ArchiveLog(deps.logger, deps.clock);
    this.resolver = new DestinationResolver(deps.store, deps.clock);
    this.policies = new TenantPolicies((id) => deps.store.tenantGet({ id }), deps.clock);
    this.recorder = new OutcomeRecorder<Ctx>(
      deps.store,
      deps.clock,
      (batch, applied) => this.afterRecord(batch, applied),
      deps.logger,
      deps.metrics,
    );
  }

  /** Events submitted and not yet recorded: the scheduler's back-pressure signal. */
  get backlog(): number {
    return this.outstanding;
  }

  /**
   * How many more events of this queue may be claimed now: its bound (claimedMax of its settings,
   * or the least bound while its settings are not loaded yet) minus what it holds. Behind an open
   * circuit none, and when the circuit lets a probe through, one while the queue holds none.
   */
  queueRoom(queueKey: string): number {
    return this.queueBound(queueKey) - (this.held.get(queueKey) ?? 0);
  }

  /**
   * A registered destination's queue on this node: circuit, waiting, in flight, claimed (held
   * here, not yet recorded) and its recent deliveries; null when this node has no queue for it
   * (nothing delivered to it here since it started, or the idle queue was forgotten).
   */
  queueHealth(tenantId: string, destination: string): (QueueHealth & { claimed: number }) | null {
    const key = queueKeyOf(tenantId, queueOf({ name: destination }));
    const queue = this.queues.get(key);
    return queue ? { ...queue.health(), claimed: this.held.get(key) ?? 0 } : null;
  }

  /** What queueRoom counts down from: the queue's claimedMax; behind an open circuit 0, and 1 (the probe) once it lets one through. */
  queueBound(queueKey: string): number {
    const queue = this.queues.get(queueKey);
    if (!queue) return CLAIMED_MIN;
    switch (queue.admits().admits) {
      case 'all':
        return queue.claimedMax;
      case 'probe':
        return 1;
      case 'none':
        return 0;
    }
  }

  /**
   * Reads ahead what the events of these queues will need when they fall due (their tenant's
   * policy, a registered destination's settings, each cached and read once however many ask), so
   * the first claim of a queue not seen for a while does not wait for those reads.
   */
  prepare(queues: Map<string, { tenantId: string; queue: string }>): void {
    for (const [key, { tenantId, queue }] of queues) {
      if (this.policies.peek(tenantId) === undefined) this.policies.get(tenantId).catch(() => {});
      const name = destinationNameOf(queue);
      if (name !== null && !this.queues.has(key)) this.resolver.resolve(tenantId, { name }).catch(() => {});
    }
  }

  submit(events: EventRecord[]): void {
    this.outstanding += events.length;
    for (const event of events) {
      const key = queueKeyOf(event.tenantId, event.queue);
      this.held.set(key, (this.held.get(key) ?? 0) + 1);
      const policy = this.policies.peek(event.tenantId);
      if (policy) this.route(event, policy);
      else
        void this.policies.get(event.tenantId).then(
          (p) => this.route(event, p),
          (err) => {
            this.deps.logger.error({ err, id: event.id }, 'loading the tenant policy failed');
            this.finish(event, null, { kind: 'retry', reason: 'tenant lookup failed', durationMs: 0 });
          },
        );
    }
  }

  /** Archives a first fire that comes later than the tenant's missedAfter; queues the rest. */
  private route(event: EventRecord, policy: TenantPolicy): void {
    const lateMs = this.deps.clock.now() - event.fireAt;
    if (
      policy.missedAfterMs !== null &&
      event.attempts === 1 &&
      event.dueAt === event.fireAt &&
      lateMs > policy.missedAfterMs
    ) {
      this.deps.metrics.deliveries.inc({ outcome: 'missed' });
      this.recorder.add(
        {
          tenantId: event.tenantId,
          id: event.id,
          version: event.version,
          shard: event.shard,
          owner: this.deps.owner,
          to: 'archived',
          error: `missed: fired ${lateMs} ms late, beyond the tenant's missedAfter of ${policy.missedAfterMs} ms`,
          durationMs: 0,
        },
        { event },
      );
      return;
    }
    const queue = this.queues.get(queueKeyOf(event.tenantId, event.queue));
    if (queue) queue.push(event);
    else void this.resolveAndPush(event);
  }

  private async resolveAndPush(event: EventRecord): Promise<void> {
    let settings: DeliverySettings;
    try {
      settings = await this.resolver.resolve(event.tenantId, event.destination);
    } catch (err) {
      this.deps.logger.error({ err, id: event.id }, 'resolving destination failed');
      this.finish(event, null, { kind: 'retry', reason: 'destination lookup failed', durationMs: 0 });
      return;
    }
    // The queue the store keeps for the event (its destination's, read back with the row).
    const key = queueKeyOf(event.tenantId, event.queue);
    let queue = this.queues.get(key);
    if (!queue) {
      if (this.queues.size >= QUEUES_MAX) this.dropIdleQueues();
      const { tenantId, queue: queueName } = event;
      queue = new VirtualQueue<EventRecord>(
        settings,
        this.deps.clock,
        {
          deliver: (e, s, signal) => this.deliverOne(e, s, signal),
          done: (e, s, outcome) => this.finish(e, s, outcome),
          changed: (change, e) => this.queueChanged(tenantId, queueName, change, e),
          probeDue: () => this.deps.onRoom?.(),
        },
        this.random,
      );
      this.queues.set(key, queue);
    }
    queue.push(event);
  }

  /**
   * A queue's endpoint changed state: one info line (virtual-queue.ts bounds how often), naming the
   * event whose attempt changed it, whose trace has the whole answer.
   */
  private queueChanged(tenantId: string, queue: string, change: QueueChange, event: EventRecord): void {
    const fields = { ...queueLogFields(tenantId, queue), id: event.id, attempt: event.attempts };
    const log = this.deps.logger;
    switch (change.kind) {
      case 'circuit_opened': {
        const { openMs, status, timedOut } = change;
        log.info({ ...fields, openMs, status, timedOut }, 'circuit opened: deliveries to this destination wait');
        break;
      }
      case 'circuit_closed':
        log.info(fields, 'circuit closed: deliveries to this destination go on');
        break;
      case 'failing':
        log.info({ ...fields, status: change.status, timedOut: change.timedOut }, 'destination failing');
        break;
      case 'recovered':
        log.info({ ...fields, failures: change.failures, failingMs: change.failingMs }, 'destination recovered');
        break;
    }
  }

  /**
   * Bounds the map of virtual queues (inline URLs can name any number of origins): forgets the
   * queues with nothing waiting or in flight. Their breakers start closed if the origin comes back.
   */
  private dropIdleQueues(): void {
    for (const [key, queue] of this.queues) if (queue.size === 0 && !this.held.has(key)) this.queues.delete(key);
  }

  /** A destination changed on this node: later deliveries use its new settings. */
  async destinationChanged(tenantId: string, name: string): Promise<void> {
    this.resolver.invalidate(tenantId, name);
    // A broker destination's pooled connection closes: the next delivery connects to what it is now.
    this.deps.channel.forget?.(queueKeyOf(tenantId, queueOf({ name })));
    const queue = this.queues.get(queueKeyOf(tenantId, queueOf({ name })));
    if (queue) queue.applySettings(await this.resolver.resolve(tenantId, { name }));
  }

  /** A tenant's signing secrets changed on this node: later inline deliveries sign with the new ones. */
  tenantSecretsChanged(tenantId: string): void {
    this.resolver.invalidateTenantSecrets(tenantId);
  }

  /** The secrets of a delivery to an inline URL: its tenant's; null when they cannot be read now. */
  private async inlineSecrets(event: EventRecord): Promise<DeliverySettings['secrets'] | null> {
    try {
      return await this.resolver.tenantSecrets(event.tenantId);
    } catch (err) {
      this.deps.logger.error({ err, id: event.id }, 'loading the tenant signing secret failed');
      return null;
    }
  }

  private async deliverOne(
    event: EventRecord,
    settings: DeliverySettings,
    signal: AbortSignal,
  ): Promise<DeliveryOutcome> {
    if (settings.missing) {
      const name = 'name' in event.destination ? event.destination.name : '';
      return { kind: 'discard', reason: `destination "${name}" does not exist`, durationMs: 0 };
    }
    const startedAt = this.deps.clock.now();
    let due: DueEvent;
    if (settings.broker) {
      due = brokerDueEvent(this.dueEvent(event, settings), settings.broker, settings.queueKey);
    } else {
      // A webhook goes with its secrets, and the HTTP channel signs it (never unsigned: without
      // them it is retried later). A destination's are its own; an inline URL's, its tenant's.
      const secrets = 'name' in event.destination ? settings.secrets : await this.inlineSecrets(event);
      if (secrets === null) return { kind: 'retry', reason: 'signing secret lookup failed', durationMs: 0 };
      due = {
        ...this.dueEvent(event, settings),
        kind: 'http',
        // An inline destination's queue is shared by its origin; the URL is the event's own.
        target: 'url' in event.destination ? event.destination.url : settings.target,
        secrets,
      };
    }
    this.deps.metrics.fireLatenessSeconds.observe(Math.max(0, startedAt - event.dueAt) / 1000);
    const outcome = await this.deps.channel.deliver(due, signal);
    this.deps.metrics.deliveryDurationSeconds.observe(outcome.durationMs / 1000);
    return outcome;
  }

  /** What every kind's delivery carries of an event; the caller adds where it goes. */
  private dueEvent(event: EventRecord, settings: DeliverySettings): DueEventCommon {
    return {
      tenantId: event.tenantId,
      id: event.id,
      attempt: event.attempts,
      payload: event.payload,
      headers: { ...settings.headers, ...event.headers },
      timeoutMs: settings.timeoutMs,
      dueAt: event.dueAt,
      fireAt: event.fireAt,
      group: event.group,
      type: event.type,
    };
  }

  /** Decides the next state and queues it for recording. */
  private finish(event: EventRecord, settings: DeliverySettings | null, outcome: DeliveryOutcome): void {
    this.deps.metrics.deliveries.inc({ outcome: outcome.kind });
    const next = decideNext({
      outcome,
      attempts: event.attempts,
      policy: event.retry ?? settings?.retry ?? DEFAULT_RETRY,
      expireAt: event.expireAt,
      now: this.deps.clock.now(),
      random: this.random,
    });
    const status = 'status' in outcome ? outcome.status : undefined;
    this.recorder.add(
      {
        tenantId: event.tenantId,
        id: event.id,
        version: event.version,
        shard: event.shard,
        owner: this.deps.owner,
        to: next.to,
        retryAt: next.retryAt,
        status,
        error: next.error,
        durationMs: Math.round(outcome.durationMs),
      },
      { event },
    );
  }

  private afterRecord(batch: RecordedOutcome<Ctx>[], applied: boolean[]): void {
    const retries: DueRef[] = [];
    for (const { context } of batch) {
      const key = queueKeyOf(context.event.tenantId, context.event.queue);
      const n = (this.held.get(key) ?? 0) - 1;
      if (n > 0) this.held.set(key, n);
      else this.held.delete(key);
    }
    batch.forEach(({ outcome, context }, i) => {
      // An outcome that did not apply: the event was rescued or changed meanwhile; nothing follows.
      if (!applied[i]) return;
      const e = context.event;
      if (outcome.to === 'awaiting_retry') {
        retries.push({ ...dueRefOf(e), version: e.version + 1, dueAt: outcome.retryAt! });
      } else if (e.group !== null) {
        this.deps.events.groupSettled(e.tenantId, e.group, e.shard);
      }
      if (outcome.to === 'archived') {
        const { tenantId, id, queue, attempts } = e;
        this.archiveLog.archived({
          tenantId,
          id,
          queue,
          attempts,
          why: archiveCauseOf(outcome.error),
          status: outcome.status,
        });
      }
    });
    this.archiveLog.sweep();
    if (retries.length > 0) this.deps.events.due(retries);
    this.outstanding -= batch.length;
    if (this.outstanding <= 0) for (const w of this.idleWaiters.splice(0)) w();
    this.deps.onRoom?.();
  }

  /**
   * Shutdown: events not yet started are released (due again now); deliveries in flight get until
   * `deadlineMs` (monotonic) to finish, then are aborted; every outcome is recorded.
   */
  async drain(deadlineMs: number): Promise<void> {
    const now = this.deps.clock.now();
    for (const queue of this.queues.values()) {
      for (const event of queue.takeWaiting()) this.release(event, now);
    }
    const waitMs = deadlineMs - this.deps.clock.monotonicMs();
    if (this.outstanding > 0 && waitMs > 0) {
      const deadline = new AbortController();
      await Promise.race([
        new Promise<void>((r) => this.idleWaiters.push(r)),
        this.deps.clock.sleep(waitMs, deadline.signal).catch(() => {}),
      ]);
      deadline.abort();
    }
    for (const queue of this.queues.values()) queue.abortInflight();
    await this.recorder.flush();
    this.archiveLog.flush();
  }

  /** Hands an event that was claimed but never sent back to the store, due now (no backoff). */
  private release(event: EventRecord, now: number): void {
    this.recorder.add(
      {
        tenantId: event.tenantId,
        id: event.id,
        version: event.version,
        shard: event.shard,
        owner: this.deps.owner,
        to: 'awaiting_retry',
        retryAt: now,
        error: 'released at shutdown before sending',
        durationMs: 0,
      },
      { event },
    );
  }
}
