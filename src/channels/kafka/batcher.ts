/**
 * Coalesces the deliveries to one destination that start in the same turn of the event loop into
 * one produce request: one round trip and one acknowledgement (from all in-sync replicas) for all
 * of them, instead of one each. Every delivery's promise settles with its batch: all acked, or all
 * failed with the batch's error (retried, so some may arrive twice: at least once).
 *
 * Order: a group's events are never in flight together (the dispatcher sends the next one after
 * the previous ended), so coalescing cannot reorder a group. Bound: at most `batchMax` messages a
 * request; more waiting go in the next one.
 */
import type { Message } from 'kafkajs';

export const BATCH_MESSAGES_MAX = 500;

interface Pending {
  message: Message;
  resolve(): void;
  reject(err: unknown): void;
}

export class ProduceBatcher {
  private pending: Pending[] = [];
  private scheduled = false;

  constructor(
    private readonly send: (messages: Message[]) => Promise<void>,
    private readonly batchMax = BATCH_MESSAGES_MAX,
  ) {}

  /** Resolves once the message's batch is acknowledged; rejects with the batch's error. */
  add(message: Message): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      this.pending.push({ message, resolve, reject });
      this.schedule();
    });
  }

  private schedule(): void {
    if (this.scheduled || this.pending.length === 0) return;
    this.scheduled = true;
    setImmediate(() => this.flush());
  }

  private flush(): void {
    this.scheduled = false;
    const batch = this.pending.splice(0, this.batchMax);
    this.schedule();
    if (batch.length === 0) return;
    this.send(batch.map((p) => p.message)).then(
      () => {
        for (const p of batch) p.resolve();
      },
      (err: unknown) => {
        for (const p of batch) p.reject(err);
      },
    );
  }
}
