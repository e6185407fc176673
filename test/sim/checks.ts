/**
 * The checks at the end of a run, once every fault has healed and the drain is over, read from
 * the database itself: nothing lost, every terminal state explained, traces bounded, schedules
 * made once or counted missed, late occurrences fired only as `missed` lets them, and an on-time
 * tenant missing nothing while another catches up.
 */
import type { Store } from '../../src/store/store.ts';
import { EVENT_CHANGES_MAX, eventKey, type History } from './history.ts';
import { MISSED_AFTER_MS, RETRY, type ScheduleSpecSim } from './setup.ts';

/** The database of the run, read directly (the store's own connection). */
export interface Db {
  prepare(sql: string): { get(...a: unknown[]): unknown; all(...a: unknown[]): unknown[] };
}

type Row = {
  tenant_id: string;
  id: string;
  state: string;
  attempts: number;
  version: number;
  expire_at: number | null;
  lease_owner: string | null;
};

export interface EndCounts {
  events: number;
  notFinished: number;
  occurrences: number;
}

/** Every event: finished, its state explained, its trace bounded; every acknowledged one stored. */
function checkEvents(
  db: Db,
  history: History,
  afterHealMs: number,
  stormKey: string | null,
): { events: number; notFinished: number } {
  const rows = db
    .prepare(`SELECT tenant_id, id, state, attempts, version, expire_at, lease_owner FROM events`)
    .all() as Row[];
  const stored = new Set(rows.map((r) => eventKey(r.tenant_id, r.id)));
  // Each change is one transition, and edits stop at the bound; a delivery adds two per attempt.
  const versionMax = EVENT_CHANGES_MAX + 2 * RETRY.maxAttempts + 2;
  let notFinished = 0;
  for (const r of rows) {
    const key = eventKey(r.tenant_id, r.id);
    const h = history.events.get(key);
    const attempts = h?.attempts ?? [];
    if (r.state === 'scheduled' || r.state === 'executing' || r.state === 'awaiting_retry') {
      notFinished++;
      history.violate(
        'lost',
        `${key} is still ${r.state} (attempts ${r.attempts}, lease owner ${r.lease_owner ?? '-'}), ${(afterHealMs / 1000).toFixed(0)} s after every fault healed`,
      );
    } else if (r.state === 'succeeded' && !attempts.some((a) => a.remote === 'delivered') && !h?.pullAcked) {
      history.violate('outcome', `${key} is succeeded but no attempt of it was delivered`);
    } else if (r.state === 'discarded' && !attempts.some((a) => a.remote === 'discard')) {
      history.violate('outcome', `${key} is discarded but no destination refused it`);
    } else if (r.state === 'archived' && r.attempts < RETRY.maxAttempts && r.expire_at === null) {
      history.violate('outcome', `${key} is archived after ${r.attempts} attempts without an expiry`);
    } else if (r.state === 'canceled' && !h?.cancelSent && !h?.canceledByNode) {
      history.violate('outcome', `${key} is canceled but nobody canceled it`);
    }
    if (r.version > versionMax)
      history.violate(
        'bounds',
        `${key} has ${r.version} transitions, more than ${versionMax} (${EVENT_CHANGES_MAX} changes, then its attempts)`,
      );
  }
  for (const h of history.events.values()) {
    if (h.origin === 'acked' && !stored.has(h.key))
      history.violate('lost', `${h.key} was acknowledged but is not stored`);
  }
  if (stormKey && !stored.has(stormKey)) history.violate('lost', `${stormKey} is gone`);
  return { events: rows.length, notFinished };
}

/**
 * Each schedule: its occurrences before its cursor made once or counted missed (at most the ones
 * canceled at their fire counted twice), none off its timing; an occurrence fired later than
 * missedAfter only as its `missed` lets it (lateFiresRule); an on-time schedule (the fairness run)
 * misses nothing. Returns the occurrences made.
 */
async function checkSchedules(db: Db, real: Store, history: History, schedules: ScheduleSpecSim[]): Promise<number> {
  let occurrences = 0;
  // The `now` of each occurrence's first claim: how late its node judged it fired.
  const firstClaimOf = new Map<string, { nowParam: number; faulted: string | null }>();
  for (const h of history.events.values()) {
    const first = h.attempts.find((a) => a.claim?.attempts === 1)?.claim;
    if (first) firstClaimOf.set(h.key, first);
  }
  const occurrenceRows = db.prepare(`SELECT id, state, fire_at FROM events WHERE tenant_id = ? AND id >= ? AND id < ?`);
  for (const sc of schedules) {
    const name = `${sc.tenantId}/${sc.id}`;
    const rec = await real.scheduleGet({ tenantId: sc.tenantId, id: sc.id });
    if (!rec) {
      history.violate('schedule', `${name} is gone`);
      continue;
    }
    const made = occurrenceRows.all(sc.tenantId, `${sc.id}@`, `${sc.id}@\uffff`) as {
      id: string;
      state: string;
      fire_at: number;
    }[];
    occurrences += made.length;
    // Occurrences are ≥ startAt and < endAt; those before the cursor are made or counted missed.
    const cursor = Math.min(rec.nextAt ?? sc.endAt, sc.endAt);
    const due = Math.max(0, Math.ceil((cursor - sc.startAt) / sc.everyMs));
    const offGrid = made.filter(
      (e) => (e.fire_at - sc.startAt) % sc.everyMs !== 0 || e.fire_at < sc.startAt || e.fire_at >= cursor,
    );
    if (offGrid.length > 0)
      history.violate(
        'schedule',
        `${name}: occurrences not of the schedule: ${offGrid
          .slice(0, 3)
          .map((e) => e.id)
          .join(', ')}`,
      );
    const canceledAtFire = made.filter((e) => e.state === 'canceled').length;
    if (made.length + rec.missedCount < due) {
      history.violate(
        'schedule',
        `${name}: ${due} occurrences are due before its cursor, but ${made.length} were made and ${rec.missedCount} counted missed`,
      );
    }
    if (made.length + rec.missedCount > due + canceledAtFire) {
      history.violate(
        'schedule',
        `${name}: ${made.length} made and ${rec.missedCount} counted missed, more than the ${due} due (+${canceledAtFire} canceled at their fire)`,
      );
    }
    for (const e of made) {
      const first = firstClaimOf.get(eventKey(sc.tenantId, e.id));
      if (first === undefined) continue;
      const lateMs = first.nowParam - e.fire_at;
      if (lateMs <= MISSED_AFTER_MS) continue;
      if (sc.onTime)
        history.violate('fairness', `${sc.tenantId}/${e.id} fired ${lateMs} ms late while another tenant caught up`);
      const rule = lateFiresRule(sc, e.fire_at, first.nowParam);
      if (rule)
        history.violate(
          'missed-rule',
          `${sc.tenantId}/${e.id} fired ${lateMs} ms after its time, beyond missedAfter ${MISSED_AFTER_MS} ms: ${rule}`,
        );
    }
    if (sc.onTime && rec.missedCount > 0) {
      history.violate(
        'fairness',
        `${name} missed ${rec.missedCount} occurrences while another tenant's schedules caught up (${rec.lastMissed?.reason ?? 'no reason kept'})`,
      );
    }
  }
  return occurrences;
}

/**
 * Whether `missed` lets an occurrence at `at` fire late when its first fire is at `now` (null), or
 * why not: `skip` fires none; `fire-once` only the latest late one (the next occurrence is not
 * late); `fire-all` the latest catchUpMax (fewer than catchUpMax later ones are late). Counted on
 * the schedule's grid (startAt + k·everyMs, before endAt), independently of the code under test.
 */
export function lateFiresRule(
  sc: Pick<ScheduleSpecSim, 'missed' | 'catchUpMax' | 'everyMs' | 'endAt'>,
  at: number,
  now: number,
): string | null {
  if (sc.missed === 'skip') return 'its schedule says skip';
  const cutoff = Math.min(now - MISSED_AFTER_MS, sc.endAt);
  const laterLate = Math.max(0, Math.ceil((cutoff - at) / sc.everyMs) - 1);
  const allowed = sc.missed === 'fire-once' ? 1 : sc.catchUpMax;
  if (laterLate < allowed) return null;
  return `${laterLate} later occurrences were late too, and ${sc.missed}${sc.missed === 'fire-all' ? ` (catchUpMax ${sc.catchUpMax})` : ''} fires only the latest ${allowed}`;
}

export async function checkEnd(params: {
  db: Db;
  real: Store;
  history: History;
  schedules: ScheduleSpecSim[];
  stormKey: string | null;
  afterHealMs: number;
  uncaught: string[];
}): Promise<EndCounts> {
  const { db, real, history } = params;
  const { events, notFinished } = checkEvents(db, history, params.afterHealMs, params.stormKey);
  const occurrences = await checkSchedules(db, real, history, params.schedules);
  for (const u of params.uncaught) history.violate('uncaught', u.split('\n').slice(0, 3).join(' | '));
  return { events, notFinished, occurrences };
}
