/**
 * Long work on the event loop, cut into slices: between two slices the loop turns (setImmediate),
 * so timers, the scheduler's fires and other requests run. A slice is SLICE_MS at most, give or
 * take one step of the work.
 *
 *   if (slice.due()) await slice.turn();
 *
 * (checked first, so a step that is not due costs no await).
 */
import { setImmediate as nextTurn } from 'node:timers/promises';

/** Work between two turns of the event loop. */
export const SLICE_MS = 4;

export class LoopSlice {
  private started = performance.now();

  constructor(private readonly sliceMs = SLICE_MS) {}

  /** Whether this slice has run its time. */
  due(): boolean {
    return performance.now() - this.started >= this.sliceMs;
  }

  /** Waits for the next turn of the event loop, and starts a new slice. */
  async turn(): Promise<void> {
    await nextTurn();
    this.started = performance.now();
  }
}
