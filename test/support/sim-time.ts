/** Driving a SimClock from a test while real promises and setImmediate callbacks run between steps. */
import type { SimClock } from '../../src/core/clock.ts';

/** Lets the store calls that timers started settle, then runs timers due now (delay 0). */
export async function settle(clock: SimClock): Promise<void> {
  for (let round = 0; round < 3; round++) {
    for (let i = 0; i < 5; i++) await new Promise((r) => setImmediate(r));
    await clock.advance(0);
  }
}

/**
 * Advances simulated time in steps of at most 10 ms, settling after each, so background loops
 * (which re-arm their timers only after their async work) run as they would in real time.
 */
export async function tick(clock: SimClock, ms: number): Promise<void> {
  await settle(clock);
  for (let left = ms; left > 0; left -= 10) {
    await clock.advance(Math.min(10, left));
    await settle(clock);
  }
}

/** The store with eventListDue wrapped to report how many rows each call returned. */
export function countingListDue<S extends { eventListDue: (p: never) => Promise<unknown[]> }>(
  store: S,
  onRows: (n: number) => void,
): S {
  const listDue = store.eventListDue.bind(store) as S['eventListDue'];
  const counted = Object.create(store) as S;
  counted.eventListDue = (async (params: never) => {
    const page = await listDue(params);
    onRows(page.length);
    return page;
  }) as S['eventListDue'];
  return counted;
}
