/**
 * The clients of a run, each request through a node picked at random (its API, here the node's
 * store connection and its follow-up of the change, as node.ts wires the API):
 *   - an API client creating events (some grouped, some ahead of their group's head, some with an
 *     expiry, some for the pull destination), editing their fireAt and canceling them;
 *   - pull consumers claiming what is due, working on it (sometimes past the visibility timeout,
 *     sometimes losing it), then acking or nacking it;
 *   - with the `edits` workload, one event edited 1,100 times, each edit after the last answer.
 * Every answer goes into the history: only what a client was told counts as acknowledged.
 */
import type { EventRecord } from '../../src/core/event.ts';
import type { NewEvent, Store } from '../../src/store/store.ts';
import type { RunContext, SimCluster } from './cluster.ts';
import { eventKey, fmt } from './history.ts';
import { NODE_SETTINGS, type SimNode } from './sim-node.ts';
import { DESTS, PULL_CONFIG, PULL_DEST, TENANTS } from './setup.ts';
import type { Prng } from './world.ts';

/** Events created per run at most (a bound on the client). */
const EVENTS_MAX = 600;
const GROUPS_PER_TENANT = 4;
/** A client gives up on a request after this long (its outcome is then unknown to it). */
const CLIENT_TIMEOUT_MS = 10_000;
/** Pull consumers, and the visibility timeout of their claims. */
const CONSUMERS = 2;
const VISIBILITY_MS = 5_000;
/** The edit storm: more edits than an event accepts (EVENT_CHANGES_MAX). */
const STORM_EDITS = 1_100;

type Answer = { kind: string; event?: EventRecord };

export class Clients {
  private eventSeq = 0;
  private receiptSeq = 0;
  /** Acknowledged events, the ones edits and cancels pick from. */
  private readonly known: string[] = [];

  constructor(
    private readonly ctx: RunContext,
    private readonly cluster: SimCluster,
    private readonly rand: Prng,
  ) {}

  private get inDrain(): boolean {
    return this.cluster.inDrain;
  }

  /** A request to a node's API, given up after CLIENT_TIMEOUT_MS (its outcome then unknown). */
  private call(node: SimNode, method: string, args: unknown[]): Promise<unknown> {
    return new Promise((resolve, reject) => {
      const cancel = this.ctx.world.timer(null, CLIENT_TIMEOUT_MS, () =>
        reject(new Error(`no answer from ${node.label} within ${CLIENT_TIMEOUT_MS} ms`)),
      );
      node.link.call(method, args, true).then(
        (value) => {
          cancel();
          resolve(value);
        },
        (err: unknown) => {
          cancel();
          reject(err as Error);
        },
      );
    });
  }

  // ── the API client ─────────────────────────────────────────────────────────────────────

  /** Requests every 20 to 300 ms until the drain. */
  startApiClient(): void {
    const loop = () => {
      if (this.inDrain) return;
      this.request();
      this.ctx.world.timer(null, this.rand.int(20, 300), loop);
    };
    this.ctx.world.timer(null, 1_500, loop);
  }

  private request(): void {
    const node = this.cluster.apiNode(this.rand);
    if (!node) return;
    const r = this.rand.next();
    const storeNow = this.ctx.world.storeNow();
    const rand = this.rand;
    if (r < 0.55) {
      this.create(
        node,
        () => storeNow + rand.int(-500, 8_000),
        (t) => (rand.chance(0.5) ? `g${rand.int(0, GROUPS_PER_TENANT - 1)}-${t}` : null),
        rand.int(1, 4),
      );
    } else if (r < 0.65) {
      // A member created ahead of its group's head (its fireAt before the others').
      this.create(
        node,
        () => storeNow - rand.int(0, 3_000),
        (t) => `g${rand.int(0, GROUPS_PER_TENANT - 1)}-${t}`,
        1,
      );
    } else if (r < 0.82 && this.known.length > 0) {
      this.edit(node, rand.pick(this.known), storeNow + rand.int(-300, 6_000));
    } else if (this.known.length > 0) {
      this.cancel(node, rand.pick(this.known));
    }
  }

  private create(node: SimNode, fireAtOf: () => number, groupOf: (t: string) => string | null, n: number): void {
    const { history, trace, belfry } = this.ctx;
    const now = node.cluster.clock.now();
    const events: NewEvent[] = [];
    for (let i = 0; i < n && this.eventSeq < EVENTS_MAX; i++) {
      const tenantId = this.rand.pick(TENANTS);
      const id = `e${++this.eventSeq}`;
      const group = groupOf(tenantId);
      const fireAt = fireAtOf();
      const expires = this.rand.chance(0.1);
      events.push({
        tenantId,
        id,
        shard: belfry.shard.shardOf(tenantId, group ?? id, NODE_SETTINGS.shardCount),
        fireAt,
        destination: { name: this.rand.chance(0.15) ? PULL_DEST : this.rand.pick(DESTS).name },
        payload: `{"n":${this.eventSeq}}`,
        headers: {},
        group,
        retry: null,
        expireAt: expires ? fireAt + this.rand.int(1_000, 10_000) : null,
        tags: {},
        requestHash: `h:${id}`,
      });
      history.event(tenantId, id, { group, origin: 'ambiguous' });
    }
    if (events.length === 0) return;
    trace(
      `client → ${node.label} create ${events.map((e) => `${e.tenantId}/${e.id}${e.group ? `[${e.group}]` : ''}@${fmt(e.fireAt)}`).join(' ')}`,
    );
    this.call(node, 'eventInsertMany', [{ events, now }]).then(
      (results) => {
        const created: EventRecord[] = [];
        for (const r of results as { kind: string; event: EventRecord }[]) {
          history.event(r.event.tenantId, r.event.id).origin = 'acked';
          this.known.push(eventKey(r.event.tenantId, r.event.id));
          if (r.kind === 'created') created.push(r.event);
        }
        trace(`client ← ${node.label} created ${created.length}`);
        node.changed(created);
      },
      (err: unknown) => trace(`client ← ${node.label} create failed: ${(err as Error).message}`),
    );
  }

  private edit(node: SimNode, key: string, fireAt: number): void {
    const { history, trace } = this.ctx;
    const h = history.events.get(key)!;
    h.editsUnknown++;
    trace(`client → ${node.label} edit ${key} fireAt ${fmt(fireAt)}`);
    this.call(node, 'eventUpdate', [
      { tenantId: h.tenantId, id: h.id, patch: { fireAt }, now: node.cluster.clock.now() },
    ]).then(
      (res) => {
        const r = res as Answer;
        h.editsUnknown--;
        if (r.kind === 'ok' && r.event) {
          // Answers may come back out of order (a paused node answers late): the latest version wins.
          if (r.event.version > h.expectedVersion) {
            h.expectedVersion = r.event.version;
            h.expectedFireAt = r.event.fireAt;
          }
          node.changed([r.event]);
        }
        trace(`client ← ${node.label} edit ${key}: ${r.kind}`);
      },
      // Still counted unknown: the edit may have applied.
      (err: unknown) => trace(`client ← ${node.label} edit ${key} failed: ${(err as Error).message} (outcome unknown)`),
    );
  }

  private cancel(node: SimNode, key: string): void {
    const { history, trace, world } = this.ctx;
    const h = history.events.get(key)!;
    h.cancelSent = true;
    trace(`client → ${node.label} cancel ${key}`);
    this.call(node, 'eventCancel', [{ tenantId: h.tenantId, id: h.id, now: node.cluster.clock.now() }]).then(
      (res) => {
        const r = res as Answer;
        if (r.kind === 'ok' && r.event) {
          h.cancelAckMs ??= world.storeNow();
          node.changed([r.event]);
        }
        trace(`client ← ${node.label} cancel ${key}: ${r.kind}${r.event ? ` (${r.event.state})` : ''}`);
      },
      (err: unknown) =>
        trace(`client ← ${node.label} cancel ${key} failed: ${(err as Error).message} (outcome unknown)`),
    );
  }

  // ── pull consumers ─────────────────────────────────────────────────────────────────────

  /** `consumerRand`: the consumers' own draws (the node each request goes to is the client's). */
  startConsumers(consumerRand: Prng): void {
    for (let i = 0; i < CONSUMERS; i++) this.ctx.world.timer(null, 1_000 + i * 137, () => this.consume(consumerRand));
  }

  private consume(rand: Prng): void {
    const { world } = this.ctx;
    const node = this.cluster.apiNode(this.rand);
    const again = () => world.timer(null, this.inDrain ? 100 : rand.int(100, 600), () => this.consume(rand));
    if (!node) return void again();
    const tenantId = rand.pick(TENANTS);
    const receipt = `r${++this.receiptSeq}`;
    const now = node.cluster.clock.now();
    this.call(node, 'eventPullClaim', [
      {
        tenantId,
        queue: `name:${PULL_DEST}`,
        types: null,
        max: rand.int(1, 4),
        now,
        leaseUntil: now + VISIBILITY_MS,
        receipt,
      },
    ]).then(
      (events) => {
        for (const e of events as EventRecord[]) {
          // A consumer that dies mid-work: the claim ends by its visibility timeout.
          if (!this.inDrain && rand.chance(0.05)) continue;
          const workMs = this.inDrain
            ? rand.int(1, 20)
            : rand.chance(0.1)
              ? rand.int(VISIBILITY_MS, 2 * VISIBILITY_MS)
              : rand.int(10, 2_000);
          world.timer(null, workMs, () => this.settle(rand, e, receipt));
        }
        again();
      },
      () => again(),
    );
  }

  /** An ack (or a nack) as the pull route decides it; tried again a few times when no answer comes. */
  private settle(rand: Prng, e: EventRecord, receipt: string, tries = 0): void {
    const { world, belfry } = this.ctx;
    const node = this.cluster.apiNode(this.rand);
    if (!node) return void world.timer(null, 200, () => this.settle(rand, e, receipt, tries));
    const end =
      this.inDrain || rand.chance(0.85) ? ({ action: 'ack' } as const) : ({ action: 'nack', discard: false } as const);
    const params = belfry.pull.decidePull({
      event: e,
      receipt,
      end,
      policy: belfry.pull.pullPolicy(e, PULL_CONFIG),
      now: node.cluster.clock.now(),
      random: () => rand.next(),
    });
    this.call(node, 'eventPullSettle', [params]).then(
      (after) => {
        if (after) node.pullSettled([after as EventRecord]);
      },
      () => tries < 3 && this.settle(rand, e, receipt, tries + 1),
    );
  }

  // ── the edit storm ─────────────────────────────────────────────────────────────────────

  /** One event (stored before the run), due after the fault phase, edited STORM_EDITS times; returns its key. */
  async startEditStorm(store: Store, dueAt: number): Promise<string> {
    const { belfry, history, world, trace } = this.ctx;
    const tenantId = 'ta';
    const id = 'storm';
    await store.eventInsertMany({
      events: [
        {
          tenantId,
          id,
          shard: belfry.shard.shardOf(tenantId, id, NODE_SETTINGS.shardCount),
          fireAt: dueAt,
          destination: { name: 'fast' },
          payload: '{}',
          headers: {},
          group: null,
          retry: null,
          expireAt: null,
          tags: {},
          requestHash: 'h:storm',
        },
      ],
      now: world.storeNow(),
    });
    history.event(tenantId, id, { origin: 'setup' });
    let edits = 0;
    const editOnce = () => {
      const node = this.cluster.apiNode(this.rand);
      if (!node || edits >= STORM_EDITS || this.inDrain)
        return void (edits < STORM_EDITS && !this.inDrain && world.timer(null, 200, editOnce));
      edits++;
      this.call(node, 'eventUpdate', [
        { tenantId, id, patch: { fireAt: dueAt + (edits % 2) }, now: node.cluster.clock.now() },
      ]).then(
        (res) => {
          const kind = (res as Answer).kind;
          if (kind !== 'ok' && edits % 100 === 0) trace(`storm edit ${edits}: ${kind}`);
          editOnce();
        },
        () => editOnce(),
      );
    };
    world.timer(null, 1_000, editOnce);
    return eventKey(tenantId, id);
  }
}
