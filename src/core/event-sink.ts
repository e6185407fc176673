/**
 * The node's one event bus: whatever writes or settles events tells the EventSink, and the
 * parts that follow events listen to it. The producers (the API, the materialiser, the
 * occurrence gate, bulk jobs, broker sources, the dispatcher, the pull paths, the rescuer) hold
 * only the sink; the listeners (the scheduler's memory, parked pull claims, the cluster's
 * announcements to other nodes) are added once, where the node is put together.
 */
import type { DueRef, EventRecord } from './event.ts';

export interface EventSink {
  /**
   * Events this node wrote (created, edited, canceled, replayed, made by a schedule or a bulk job,
   * read from a source), as committed.
   */
  changed(events: EventRecord[]): void;
  /** Events made due again by this node (a retry, a rescue) or announced by another node. */
  due(refs: DueRef[]): void;
  /** Pull events a consumer settled (ack, nack, expiry), as committed. */
  pullSettled(events: EventRecord[]): void;
  /** A group's pushed member reached a terminal state: its next member may go. */
  groupSettled(tenantId: string, group: string, shard?: number): void;
}

/** An EventSink that hands every call to each listener, in the order they were added. */
export class EventBus implements EventSink {
  private readonly listeners: Partial<EventSink>[] = [];

  /** Adds a listener (only the calls it has). */
  listen(listener: Partial<EventSink>): void {
    this.listeners.push(listener);
  }

  changed(events: EventRecord[]): void {
    if (events.length === 0) return;
    for (const l of this.listeners) l.changed?.(events);
  }

  due(refs: DueRef[]): void {
    if (refs.length === 0) return;
    for (const l of this.listeners) l.due?.(refs);
  }

  pullSettled(events: EventRecord[]): void {
    if (events.length === 0) return;
    for (const l of this.listeners) l.pullSettled?.(events);
  }

  groupSettled(tenantId: string, group: string, shard?: number): void {
    for (const l of this.listeners) l.groupSettled?.(tenantId, group, shard);
  }
}
