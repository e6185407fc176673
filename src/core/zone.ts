/**
 * Explicit time-zone arithmetic over the IANA database that Node's Intl carries. Nothing here
 * reads the process's own zone (`TZ`, Date's local getters): every conversion names its zone.
 *
 * A "wall" time is a zone's local calendar time written as if it were UTC milliseconds
 * (`Date.UTC(y, m, d, h, mi, s, ms)`), so calendar fields can be matched with UTC getters.
 *
 *   offsetMs(zone, t) = wallOf(zone, t) - t
 *   instantOf(zone, wall): the instant a schedule fires for that local time:
 *     - one instant shows it: that one;
 *     - two show it (the clock went back): the first;
 *     - none (the clock jumped over it): the first instant after it, i.e. the transition.
 */

/** Formatters per zone; there are ~600 IANA zones, so the cache is bounded by that (and by this). */
const FORMATTERS_MAX = 1_000;
const formatters = new Map<string, Intl.DateTimeFormat>();

/** Names only (Area/Location, UTC, Etc/GMT+5): fixed offsets like "+05:00" are not zones. */
const ZONE_NAME = /^[A-Za-z][A-Za-z0-9_+-]*(\/[A-Za-z0-9_+-]+){0,2}$/;

function formatter(zone: string): Intl.DateTimeFormat {
  let f = formatters.get(zone);
  if (f) return f;
  f = new Intl.DateTimeFormat('en-US', {
    timeZone: zone,
    hourCycle: 'h23',
    year: 'numeric',
    month: 'numeric',
    day: 'numeric',
    hour: 'numeric',
    minute: 'numeric',
    second: 'numeric',
    era: 'short',
  });
  if (formatters.size >= FORMATTERS_MAX) formatters.clear();
  formatters.set(zone, f);
  return f;
}

/** Whether `zone` names an IANA time zone this runtime knows. */
export function isTimeZone(zone: string): boolean {
  if (zone.length > 64 || !ZONE_NAME.test(zone)) return false;
  try {
    formatter(zone);
    return true;
  } catch {
    return false;
  }
}

/** The zone's wall time at instant `t` (as UTC ms of the local fields), read from Intl. */
function wallOfIntl(zone: string, t: number): number {
  const ms = ((t % 1000) + 1000) % 1000;
  const parts = formatter(zone).formatToParts(t - ms);
  let y = 0;
  let mo = 0;
  let d = 0;
  let h = 0;
  let mi = 0;
  let s = 0;
  let bc = false;
  for (const p of parts) {
    switch (p.type) {
      case 'year':
        y = Number(p.value);
        break;
      case 'month':
        mo = Number(p.value);
        break;
      case 'day':
        d = Number(p.value);
        break;
      case 'hour':
        h = Number(p.value);
        break;
      case 'minute':
        mi = Number(p.value);
        break;
      case 'second':
        s = Number(p.value);
        break;
      case 'era':
        bc = p.value === 'BC' || p.value === 'B';
        break;
    }
  }
  const wall = new Date(0);
  wall.setUTCFullYear(bc ? 1 - y : y, mo - 1, d);
  wall.setUTCHours(h, mi, s, ms);
  return wall.getTime();
}

/**
 * Offsets per (zone, 6-hour window): the offset at the window's start, the offset at its end and,
 * when they differ, the instant of the change, found once by a binary search (no zone has changed
 * its offset twice within 6 hours). Intl costs ~15 µs a call; a schedule firing every second
 * would otherwise spend most of its time there. Bounded.
 */
const WINDOW_MS = 6 * 3_600_000;
const WINDOWS_MAX = 100_000;
const windows = new Map<string, { before: number; after: number; changeAt: number }>();

function rawOffset(zone: string, t: number): number {
  return wallOfIntl(zone, t) - t;
}

function windowOf(zone: string, w: number): { before: number; after: number; changeAt: number } {
  const key = `${zone} ${w}`;
  let win = windows.get(key);
  if (win) return win;
  let lo = w * WINDOW_MS;
  let hi = (w + 1) * WINDOW_MS;
  const before = rawOffset(zone, lo);
  const after = rawOffset(zone, hi);
  if (before !== after) {
    // Invariant: offset(lo) = before, offset(hi) = after; transitions fall on whole seconds.
    while (hi - lo > 1000) {
      const mid = lo + Math.floor((hi - lo) / 2000) * 1000;
      if (rawOffset(zone, mid) === before) lo = mid;
      else hi = mid;
    }
  }
  win = { before, after, changeAt: before === after ? Infinity : hi };
  if (windows.size >= WINDOWS_MAX) windows.clear();
  windows.set(key, win);
  return win;
}

/** The zone's UTC offset at instant `t`, in ms (Paris in winter: +3,600,000). */
export function offsetMs(zone: string, t: number): number {
  const win = windowOf(zone, Math.floor(t / WINDOW_MS));
  return t < win.changeAt ? win.before : win.after;
}

/** The zone's wall time at instant `t` (as UTC ms of the local fields). */
export function wallOf(zone: string, t: number): number {
  return t + offsetMs(zone, t);
}

const HOUR_MS = 3_600_000;
/** Offsets range from -12h to +14h and a transition moves at most a day (Apia 2011): ±30h brackets any wall time. */
const BRACKET_MS = 30 * HOUR_MS;

/** The distinct offsets in force around wall time `wall` (usually one; two near a transition). */
function offsetsAround(zone: string, wall: number): number[] {
  const before = offsetMs(zone, wall - BRACKET_MS);
  const after = offsetMs(zone, wall + BRACKET_MS);
  if (before === after && wallOf(zone, wall - before) === wall) return [before];
  // Two transitions inside the bracket (rare): sample it every 6 hours.
  const seen = new Set<number>([before, after]);
  for (let t = wall - BRACKET_MS; t <= wall + BRACKET_MS; t += 6 * HOUR_MS) seen.add(offsetMs(zone, t));
  return [...seen];
}

/**
 * The instant at which local time `wall` happens in `zone`: the only one, the first of two (the
 * clock went back), or, when it never happens (the clock jumped over it), the first instant after
 * it (the transition itself).
 */
export function instantOf(zone: string, wall: number): number {
  const candidates = offsetsAround(zone, wall).map((o) => wall - o);
  const valid = candidates.filter((t) => wallOf(zone, t) === wall);
  if (valid.length > 0) return Math.min(...valid);
  // A gap: find the first instant whose wall time is past `wall`. Walls are increasing between
  // the candidates (one transition, forward), so a binary search to the millisecond finds it.
  let lo = Math.min(...candidates);
  let hi = Math.max(...candidates);
  if (wallOf(zone, lo) > wall) return lo;
  while (hi - lo > 1) {
    const mid = Math.floor((lo + hi) / 2);
    if (wallOf(zone, mid) > wall) hi = mid;
    else lo = mid;
  }
  return hi;
}

/**
 * When instant `t` shows a wall time that an earlier instant showed too (the second pass through
 * a repeated hour), the wall time at which the repetition ends; otherwise null.
 */
export function repeatedUntilWall(zone: string, t: number): number | null {
  const wall = wallOf(zone, t);
  const first = instantOf(zone, wall);
  if (first >= t) return null;
  // The transition lies in (first, t]: find the first instant with t's offset.
  const o = wall - t;
  let lo = first;
  let hi = t;
  while (hi - lo > 1) {
    const mid = Math.floor((lo + hi) / 2);
    if (offsetMs(zone, mid) === o) hi = mid;
    else lo = mid;
  }
  // Walls from hi's wall up to hi + the earlier offset were shown before the transition too.
  return hi + offsetMs(zone, lo);
}
