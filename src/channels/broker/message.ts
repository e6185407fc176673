/**
 * What every broker channel sends: the payload's bytes unchanged as the body, and the `belfry-*`
 * headers beside the event's own (destination headers overlaid by the event's). The belfry-*
 * names win over a user header of the same name, so a consumer can trust them.
 */
import type { DueEventCommon } from '../channel.ts';

export const HEADER_EVENT_ID = 'belfry-event-id';
export const HEADER_TENANT_ID = 'belfry-tenant-id';
export const HEADER_FIRE_AT = 'belfry-fire-at';
export const HEADER_ATTEMPT = 'belfry-attempt';
export const HEADER_GROUP = 'belfry-group';
export const HEADER_TYPE = 'belfry-type';

/** The message body: the payload's UTF-8 bytes, exactly as the event stored them. */
export function messageBody(event: DueEventCommon): Buffer {
  return Buffer.from(event.payload, 'utf8');
}

/** The message headers: the event's own, then the belfry-* ones. */
export function messageHeaders(event: DueEventCommon): Record<string, string> {
  const headers: Record<string, string> = { ...event.headers };
  headers[HEADER_EVENT_ID] = event.id;
  headers[HEADER_TENANT_ID] = event.tenantId;
  headers[HEADER_FIRE_AT] = new Date(event.fireAt ?? event.dueAt).toISOString();
  headers[HEADER_ATTEMPT] = String(event.attempt);
  if (event.group != null) headers[HEADER_GROUP] = event.group;
  if (event.type != null) headers[HEADER_TYPE] = event.type;
  return headers;
}

/** Kafka's message key: the group, or the event id, so a group stays on one partition. */
export function messageKey(event: DueEventCommon): string {
  return event.group ?? event.id;
}
