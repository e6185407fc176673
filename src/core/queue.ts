/**
 * Virtual queues: one per (tenant, destination). A registered destination is its own queue; inline
 * URLs share one queue per origin (scheme, host, port), so one failing host is one breaker and
 * one bound however many paths its events name.
 *
 * The store keeps each event's queue (`queueOf` at insert and on a destination edit), so the
 * scheduler can bound and read each queue's due events without parsing destinations, and the
 * dispatcher counts its claims under the same key.
 */
import type { DestinationRef } from './event.ts';

/** The queue of a destination within its tenant: `name:<name>` or `url:<origin>`. */
export function queueOf(destination: DestinationRef): string {
  if ('name' in destination) return `name:${destination.name}`;
  let origin: string;
  try {
    origin = new URL(destination.url).origin;
  } catch {
    origin = destination.url;
  }
  return `url:${origin}`;
}

/** The registered destination a queue is for, or null for an inline URL's origin queue. */
export function destinationNameOf(queue: string): string | null {
  return queue.startsWith('name:') ? queue.slice('name:'.length) : null;
}

/** The node-wide key of a tenant's queue. */
export function queueKeyOf(tenantId: string, queue: string): string {
  return `${tenantId}\u0000${queue}`;
}
