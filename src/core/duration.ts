/** Parsing of the contract's durations ("250ms", "30s", "5m", "4h", "7d" or milliseconds) and times. */

const UNIT_MS: Record<string, number> = { ms: 1, s: 1_000, m: 60_000, h: 3_600_000, d: 86_400_000 };
const DURATION_RE = /^(\d{1,12})(ms|s|m|h|d)$/;

/** Largest duration accepted anywhere: 10 years. Bounds arithmetic far below 2^53. */
export const DURATION_MS_MAX = 10 * 365 * 86_400_000;

/** Returns milliseconds, or null when `value` is not a valid non-negative duration. */
export function parseDurationMs(value: unknown): number | null {
  let ms: number;
  if (typeof value === 'number') {
    if (!Number.isInteger(value) || value < 0) return null;
    ms = value;
  } else if (typeof value === 'string') {
    const m = DURATION_RE.exec(value);
    if (!m) return null;
    ms = Number(m[1]) * UNIT_MS[m[2]];
  } else {
    return null;
  }
  return ms <= DURATION_MS_MAX ? ms : null;
}

/** Formats milliseconds back into the shortest exact contract duration ("90s", "5m", "250ms"). */
export function formatDuration(ms: number): string {
  for (const unit of ['d', 'h', 'm', 's'] as const) {
    if (ms !== 0 && ms % UNIT_MS[unit] === 0) return `${ms / UNIT_MS[unit]}${unit}`;
  }
  return `${ms}ms`;
}

// RFC 3339: date, 'T' or space, time, optional fraction, mandatory zone.
const RFC3339_RE = /^(\d{4})-(\d{2})-(\d{2})[Tt ](\d{2}):(\d{2}):(\d{2})(\.\d{1,9})?([Zz]|[+-]\d{2}:\d{2})$/;

/** Earliest and latest instants accepted as times: years 2000 to 9999. */
export const TIME_MS_MIN = Date.UTC(2000, 0, 1);
export const TIME_MS_MAX = Date.UTC(9999, 11, 31, 23, 59, 59, 999);

/** Returns epoch milliseconds, or null when `value` is neither an RFC 3339 string nor epoch ms in range. */
export function parseTimeMs(value: unknown): number | null {
  let ms: number;
  if (typeof value === 'number') {
    if (!Number.isInteger(value)) return null;
    ms = value;
  } else if (typeof value === 'string') {
    const m = RFC3339_RE.exec(value);
    if (!m) return null;
    const [, y, mo, d, h, mi, s] = m.map(Number);
    if (mo < 1 || mo > 12 || d < 1 || d > 31 || h > 23 || mi > 59 || s > 60) return null;
    ms = Date.parse(value.replace(' ', 'T'));
    if (Number.isNaN(ms)) return null;
    // Date.parse rolls 2026-02-31 over to March: reject dates that do not exist.
    const zone = m[8];
    if (zone === 'Z' || zone === 'z') {
      const back = new Date(ms);
      if (back.getUTCDate() !== d || back.getUTCMonth() + 1 !== mo) return null;
    } else {
      const probe = new Date(Date.UTC(y, mo - 1, d));
      if (probe.getUTCDate() !== d) return null;
    }
  } else {
    return null;
  }
  return ms >= TIME_MS_MIN && ms <= TIME_MS_MAX ? ms : null;
}
