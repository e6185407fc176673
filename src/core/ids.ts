/** Identifiers: time-sortable event ids, random secrets, hashing. */
import { createHash, randomBytes } from 'node:crypto';

const CROCKFORD = '0123456789abcdefghjkmnpqrstvwxyz';

let lastMs = -1;
let lastRand = 0n;

/**
 * A ULID-like id in lower-case Crockford base32: 10 characters of milliseconds, 16 of randomness.
 * Ids made in the same millisecond by one process increase monotonically.
 */
export function newSortableId(nowMs: number): string {
  let rand: bigint;
  if (nowMs <= lastMs) {
    rand = lastRand + 1n;
    nowMs = lastMs;
  } else {
    rand = BigInt('0x' + randomBytes(10).toString('hex'));
    lastMs = nowMs;
  }
  lastRand = rand;
  let time = '';
  let t = nowMs;
  for (let i = 0; i < 10; i++) {
    time = CROCKFORD[t % 32] + time;
    t = Math.floor(t / 32);
  }
  let r = '';
  for (let i = 0; i < 16; i++) {
    r = CROCKFORD[Number(rand & 31n)] + r;
    rand >>= 5n;
  }
  return time + r;
}

export function sha256Hex(text: string): string {
  return createHash('sha256').update(text).digest('hex');
}

/** `prefix` + 32 random bytes in base64url: for API keys. */
export function newSecretToken(prefix: string): string {
  return prefix + randomBytes(32).toString('base64url');
}

/** A Standard Webhooks signing secret: `whsec_` + base64 of 24 random bytes. */
export function newWebhookSecret(): string {
  return 'whsec_' + randomBytes(24).toString('base64');
}

/**
 * JSON with object keys sorted, so two requests that differ only in key order hash the same.
 */
export function canonicalJson(value: unknown): string {
  if (value === null || typeof value !== 'object') return JSON.stringify(value) ?? 'null';
  if (Array.isArray(value)) return '[' + value.map(canonicalJson).join(',') + ']';
  const keys = Object.keys(value as object).sort();
  return '{' + keys.map((k) => JSON.stringify(k) + ':' + canonicalJson((value as Record<string, unknown>)[k])).join(',') + '}';
}
