/** How the CLI shows an event: the API's event JSON as a label/value block. */
import { cell, renderFields, timeCell } from './table.ts';

/** The event JSON of the API, every field optional since the CLI only displays it. */
export interface EventView {
  id?: string;
  state?: string;
  version?: number;
  fireAt?: string | number;
  dueAt?: string | number;
  destination?: string | { url?: string };
  payload?: unknown;
  headers?: Record<string, string>;
  group?: string | null;
  type?: string | null;
  attempts?: number;
  lastStatus?: number | null;
  lastError?: string | null;
  createdAt?: string | number;
  updatedAt?: string | number;
}

/** A destination shown as its name, or as the inline URL. */
export function destinationCell(destination: unknown): string {
  if (destination && typeof destination === 'object' && 'url' in destination) {
    return cell((destination as { url: unknown }).url);
  }
  return cell(destination);
}

/** Renders an event as aligned `label  value` lines. */
export function renderEvent(event: EventView): string {
  return renderFields([
    ['id', cell(event.id)],
    ['state', cell(event.state)],
    ['version', cell(event.version)],
    ['fire at', timeCell(event.fireAt)],
    ['due at', timeCell(event.dueAt)],
    ['destination', destinationCell(event.destination)],
    ['group', cell(event.group)],
    ['type', cell(event.type)],
    ['attempts', cell(event.attempts)],
    ['last status', cell(event.lastStatus)],
    ['last error', cell(event.lastError)],
    ['headers', cell(event.headers && Object.keys(event.headers).length > 0 ? event.headers : undefined)],
    ['payload', cell(event.payload)],
    ['created at', timeCell(event.createdAt)],
    ['updated at', timeCell(event.updatedAt)],
  ]);
}
