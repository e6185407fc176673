/**
 * The `pull` kind's surface: its registration (no target fields) and its channel. The scheduler
 * never pushes a pull destination's events (the store keeps them out of the read-ahead, and its
 * claims refuse them); consumers claim them over the API instead (api/routes/pull.ts). The channel
 * answers only for an event that was created for push delivery and whose destination is now a
 * pull destination (deleted and created again under the new kind): it is discarded, with a reason
 * that says how to make it claimable (replay it).
 */
import type { PullTarget } from '../../core/destination.ts';
import type { KindSpec } from '../broker/config.ts';
import type { Channel, DeliveryOutcome, DueEventOf } from '../channel.ts';

/** Registration of a `pull` destination: nothing but the kind. */
export const pullSpec: KindSpec<PullTarget, Record<string, unknown>> = {
  parse: () => ({ kind: 'pull' }),
  json: () => ({}),
};

export class PullChannel implements Channel<DueEventOf<'pull'>> {
  async deliver(_event: DueEventOf<'pull'>): Promise<DeliveryOutcome> {
    return {
      kind: 'discard',
      reason: `the destination is a pull destination: this event was created for push delivery; replay it to make it claimable`,
      durationMs: 0,
    };
  }

  async close(): Promise<void> {}
}
