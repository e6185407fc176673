/**
 * The claimer alone, on a SimClock, with admission real and the store played by the test: an
 * event is claimable at the version held (a conditional claim), a claim may be held open (a
 * saturated store) or fail (the store unreachable, or the answer lost after it committed).
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { pino } from 'pino';
import { SimClock } from '../core/clock.ts';
import type { EventRecord } from '../core/event.ts';
import { Metrics } from '../node/metrics.ts';
import type { DueRef, EventClaimParams, Store } from '../store/store.ts';
import { tick as tickSim } from '../../test/support/sim-time.ts';
import { Admission } from './admission.ts';
import { Claimer, type ClaimerOptions } from './claimer.ts';

const T = Date.UTC(2026, 5, 1, 12, 0, 0);

const ref = (tenantId: string, id: string, dueAt: number, version = 1): DueRef => ({
  tenantId,
  id,
  version,
  dueAt,
  shard: 0,
  group: null,
  queue: 'name:d',
});

/** The store's events (by tenant/id: the version stored), claims recorded, claims held or failed on demand. */
class FakeStore {
  versions = new Map<string, number>();
  rows = new Map<string, EventRecord>();
  claims: EventClaimParams[] = [];
  /** Claims for which this is true wait for `release`. */
  hold: (p: EventClaimParams) => boolean = () => false;
  private open!: () => void;
  private readonly gate = new Promise<void>((resolve) => (this.open = resolve));
  /** The next claim throws; with `committed`, after it took its events (its answer lost). */
  failNext: { committed: boolean } | null = null;

  add(refs: DueRef[]): void {
    for (const r of refs) this.versions.set(`${r.tenantId}/${r.id}`, r.version);
  }

  release(): void {
    this.open();
  }

  async eventClaim(p: EventClaimParams): Promise<EventRecord[]> {
    this.claims.push(p);
    if (this.hold(p)) await this.gate;
    const taken: EventRecord[] = [];
    for (const r of p.refs) {
      const key = `${r.tenantId}/${r.id}`;
      if (this.versions.get(key) !== r.version) continue;
      this.versions.set(key, r.version + 1);
      const e = {
        tenantId: r.tenantId,
        id: r.id,
        version: r.version + 1,
        state: 'executing',
        leaseOwner: p.owner,
        leaseUntil: p.leaseUntil,
        queue: 'name:d',
      } as EventRecord;
      this.rows.set(key, e);
      taken.push(e);
    }
    const fail = this.failNext;
    this.failNext = null;
    if (fail && !fail.committed)
      for (const e of taken)
        this.versions.set(`${e.tenantId}/${e.id}`, e.version - 1), this.rows.delete(`${e.tenantId}/${e.id}`);
    if (fail) throw new Error('connection reset');
    return taken;
  }

  async eventGet(p: { tenantId: string; id: string }): Promise<EventRecord | null> {
    return (
      this.rows.get(`${p.tenantId}/${p.id}`) ??
      ({
        tenantId: p.tenantId,
        id: p.id,
        version: this.versions.get(`${p.tenantId}/${p.id}`),
        state: 'scheduled',
      } as EventRecord)
    );
  }
}

function setup(opts: Partial<ClaimerOptions> = {}) {
  const clock = new SimClock(T);
  const store = new FakeStore();
  const admission = new Admission(
    { dispatchBacklog: () => 0 },
    { wheelSizeMax: 500_000, queueRefsMax: 10_000, dispatchBacklogMax: 20_000 },
  );
  const claimed: { id: string; atMs: number }[] = [];
  const life = { running: true, abort: new AbortController(), claimEnded: 0, shards: null as number[] | null };
  const claimer = new Claimer(
    {
      store: store as unknown as Store,
      clock,
      owner: 'node-1',
      metrics: new Metrics(),
      logger: pino({ level: 'silent' }),
      admission,
      shards: () => life.shards,
      onClaimed: (events) => claimed.push(...events.map((e) => ({ id: e.id, atMs: clock.now() }))),
      isRunning: () => life.running,
      signal: () => life.abort.signal,
      onClaimEnded: () => life.claimEnded++,
    },
    { claimBatchMax: 250, leaseMs: 60_000, fenceClaims: false, ...opts },
  );
  /** Refs read ahead: into admission (and the store), then the timer. */
  const load = (refs: DueRef[]) => {
    store.add(refs);
    for (const r of refs) admission.admit(r);
    claimer.armTimer();
  };
  const stop = async () => {
    life.running = false;
    life.abort.abort();
    claimer.cancel();
    await claimer.stopped();
  };
  return { clock, store, admission, claimer, claimed, life, load, stop, tick: (ms: number) => tickSim(clock, ms) };
}

describe('Claimer', () => {
  it('claims each event at its due millisecond, not before', async () => {
    const { claimed, load, stop, tick } = setup();
    load([ref('t', 'b', T + 250), ref('t', 'a', T + 100)]);
    await tick(99);
    assert.equal(claimed.length, 0);
    await tick(1);
    assert.deepEqual(claimed, [{ id: 'a', atMs: T + 100 }]);
    await tick(150);
    assert.deepEqual(
      claimed.map((c) => [c.id, c.atMs - T]),
      [
        ['a', 100],
        ['b', 250],
      ],
    );
    await stop();
  });

  it('runOnce claims in batches of claimBatchMax, at the version held, with a lease mark per claim, and says what it did', async () => {
    const { store, admission, claimer, claimed, stop } = setup();
    const refs = Array.from({ length: 600 }, (_, i) => ref('t', `e${String(i).padStart(3, '0')}`, T));
    store.add(refs);
    for (const r of refs) admission.admit(r);
    assert.deepEqual(await claimer.runOnce(), { claims: 3, refs: 600 });
    assert.deepEqual(
      store.claims.map((c) => c.refs.length),
      [250, 250, 100],
    );
    assert.deepEqual(store.claims[0].refs[0], { tenantId: 't', id: 'e000', version: 1, group: null, shard: 0 });
    assert.equal(
      new Set(store.claims.map((c) => c.leaseUntil)).size,
      3,
      'each claim writes its own lease end (its mark)',
    );
    await new Promise((r) => setImmediate(r));
    assert.equal(claimed.length, 600);
    await stop();
  });

  it('hands over only what the store claimed: an event changed since it was read is skipped', async () => {
    const { store, claimed, load, stop, tick } = setup();
    load([ref('t', 'kept', T + 10), ref('t', 'edited', T + 10)]);
    store.versions.set('t/edited', 2); // an update committed after the read-ahead
    await tick(20);
    assert.deepEqual(
      claimed.map((c) => c.id),
      ['kept'],
    );
    await stop();
  });

  it("claims a quiet queue's due event in a spare claim while a flood's claims hold every slot", async () => {
    const { store, claimed, load, stop, tick } = setup({ claimBatchMax: 100 });
    store.hold = (p) => p.refs.some((r) => r.tenantId === 'a');
    load(Array.from({ length: 2_000 }, (_, i) => ref('a', `a${i}`, T + 10)));
    load([ref('b', 'b0', T + 50)]);
    await tick(20);
    assert.equal(store.claims.length, 4, "A's claims fill every slot and wait");
    await tick(40);
    assert.deepEqual(
      claimed.map((c) => [c.id, c.atMs - T]),
      [['b0', 50]],
      "B's event is claimed at its due time",
    );
    store.release();
    await tick(50);
    assert.ok(claimed.length >= 401, "A's claims go on once the store answers");
    await stop();
  });

  it('reads a failed claim back: what it committed is delivered, the rest waits in memory again', async () => {
    const { store, admission, claimed, load, stop, tick } = setup();
    store.failNext = { committed: true };
    load([ref('t', 'x', T + 10)]);
    await tick(20);
    assert.equal(claimed.length, 0, 'the claim failed');
    await tick(200);
    assert.deepEqual(
      claimed.map((c) => c.id),
      ['x'],
      'its answer was lost, but it took x: delivered',
    );
    store.failNext = { committed: false };
    load([ref('t', 'y', T + 300)]);
    await tick(100);
    assert.equal(admission.size, 0);
    await tick(200);
    assert.equal(admission.size + claimed.length, 2, 'y, not taken, waits again (or is claimed again)');
    await tick(20);
    assert.deepEqual(
      claimed.map((c) => c.id),
      ['x', 'y'],
    );
    await stop();
  });

  it('claims nothing of a shard this node may not fire at the moment of the claim (its membership lapsed)', async () => {
    // A node cut from the store keeps refs in memory; when it reaches the store again it must not
    // claim them before a heartbeat succeeds: the leader may be rescuing its claims meanwhile,
    // and the stored shard map still names it, so the store's fence alone would let the claim in.
    const { store, admission, claimed, life, load, stop, tick } = setup();
    life.shards = [];
    load([ref('t', 'held', T + 10)]);
    await tick(20);
    assert.equal(store.claims.length, 0, 'no claim was sent');
    assert.equal(claimed.length, 0);
    assert.equal(admission.size, 0, 'the ref is dropped: read-ahead reads it again when the shards come back');
    life.shards = [0];
    load([ref('t', 'later', T + 30)]);
    await tick(20);
    assert.deepEqual(
      claimed.map((c) => c.id),
      ['later'],
      'claims go on once the node may fire its shards again',
    );
    await stop();
  });

  it("puts a failed claim's refs back only for shards this node may still fire", async () => {
    const { store, admission, claimed, life, load, stop, tick } = setup();
    store.failNext = { committed: false };
    load([ref('t', 'x', T + 10)]);
    await tick(20);
    assert.equal(store.claims.length, 1, 'the claim was sent, and failed');
    life.shards = []; // its heartbeats failed meanwhile
    await tick(300);
    assert.equal(admission.size, 0, 'not put back: the node may not fire its shards');
    assert.equal(claimed.length, 0);
    assert.equal(store.claims.length, 1, 'nothing claimed again');
    await stop();
  });

  it('stop settles once the claim pass and the claims in flight have ended', async () => {
    const { store, claimer, load, stop, tick } = setup();
    store.hold = () => true;
    load([ref('t', 'x', T + 10)]);
    await tick(20);
    assert.equal(store.claims.length, 1);
    let stopped = false;
    const stopping = stop().then(() => (stopped = true));
    await tick(50);
    assert.equal(stopped, false, 'the claim is still in the store');
    store.release();
    await stopping;
    assert.deepEqual(await claimer.runOnce(), { claims: 0, refs: 0 }, 'stopped: a pass does nothing');
  });

  it('stop waits on the claim pass itself, not by polling for its end', async () => {
    const { clock, store, admission, load, stop, tick } = setup();
    load([ref('t', 'first', T + 10)]);
    await tick(10);
    assert.equal(store.claims.length, 1);
    // Due right after a claim: the pass waits CLAIM_SPACING_MS (simulated) to take more into its claim.
    load([ref('t', 'second', T + 10)]);
    await clock.advance(0);
    await new Promise((r) => setImmediate(r));
    assert.equal(store.claims.length, 1, 'the pass is in its spacing wait');
    const setImmediateReal = globalThis.setImmediate;
    let polls = 0;
    globalThis.setImmediate = ((...args: Parameters<typeof setImmediate>) => (
      polls++, setImmediateReal(...args)
    )) as typeof setImmediate;
    try {
      await stop();
    } finally {
      globalThis.setImmediate = setImmediateReal;
    }
    assert.equal(polls, 0, 'no turn of the event loop was spent polling');
    assert.equal(admission.size, 1, 'the ref the pass held waits in memory again, unclaimed');
    assert.equal(store.claims.length, 1);
  });
});
