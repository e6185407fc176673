/**
 * Time-sortable ids, as Belfry makes them: the client names an event (or a schedule) before its
 * first try, so a create sent again after a lost answer finds the one it made. The server makes
 * its own ids with this same function (it imports it from this package).
 */
import { randomBytes } from 'node:crypto';

const CROCKFORD = '0123456789abcdefghjkmnpqrstvwxyz';

/** 2^40: the randomness is kept as two 40-bit halves in plain numbers (no BigInt per id). */
const HALF = 2 ** 40;
const TWENTY_BITS = 2 ** 20;

let lastMs = -1;
let lastTime = '';
let randHi = 0;
let randLo = 0;

/** `count` Crockford characters of the low 5 × count bits of `value` (< 2^20), most significant first. */
function base32(value: number, count: number): string {
  let out = '';
  for (let shift = 5 * (count - 1); shift >= 0; shift -= 5) out += CROCKFORD[(value >>> shift) & 31];
  return out;
}

/** 8 characters of a 40-bit number. */
function base32Of40(value: number): string {
  return base32(Math.floor(value / TWENTY_BITS), 4) + base32(value % TWENTY_BITS, 4);
}

/**
 * A ULID-like id in lower-case Crockford base32: 10 characters of milliseconds, 16 of randomness.
 * Ids made in the same millisecond by one process increase monotonically (the 80 random bits
 * count up by one, wrapping like a counter of 80 bits).
 */
export function newSortableId(nowMs: number): string {
  if (nowMs <= lastMs) {
    randLo++;
    if (randLo === HALF) {
      randLo = 0;
      randHi = (randHi + 1) % HALF;
    }
  } else {
    const bytes = randomBytes(10);
    randHi = bytes.readUIntBE(0, 5);
    randLo = bytes.readUIntBE(5, 5);
    lastMs = nowMs;
    let time = '';
    let t = nowMs;
    for (let i = 0; i < 10; i++) {
      time = CROCKFORD[t % 32] + time;
      t = Math.floor(t / 32);
    }
    lastTime = time;
  }
  return lastTime + base32Of40(randHi) + base32Of40(randLo);
}
