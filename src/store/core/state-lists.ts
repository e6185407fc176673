/**
 * The state lists both backends interpolate into their SQL, built once at module load from the
 * transition table of `core/event.ts` (the one source of which change applies from which states).
 * Each is spelled `('a', 'b')` in the order of EVENT_STATES, which is also the spelling of the
 * partial indexes' predicates (so the planners match them). A single state a statement compares
 * with or sets is SQL_STATE's, so every state name in the backends' SQL comes from EVENT_STATES.
 * `state-lists.test.ts` checks that each backend uses these and no list or state literal of its own.
 */
import {
  ATTEMPTING_STATES,
  CANCELABLE_STATES,
  EDITABLE_STATES,
  EVENT_STATES,
  type EventState,
  FIREABLE_STATES,
  LIVE_STATES,
  REPLAYABLE_STATES,
  STARTED_STATES,
  TERMINAL_STATES,
} from '../../core/event.ts';

/** `('a', 'b')`: a SQL list of states (state names are fixed identifiers, never user input). */
export function sqlStates(states: readonly EventState[]): string {
  return `(${states.map((s) => `'${s}'`).join(', ')})`;
}

/** Every state list a backend's SQL uses, by the name of the core list it is built from. */
export const SQL_STATE_LISTS = {
  LIVE: sqlStates(LIVE_STATES),
  FIREABLE: sqlStates(FIREABLE_STATES),
  STARTED: sqlStates(STARTED_STATES),
  TERMINAL: sqlStates(TERMINAL_STATES),
  CANCELABLE: sqlStates(CANCELABLE_STATES),
  REPLAYABLE: sqlStates(REPLAYABLE_STATES),
  EDITABLE: sqlStates(EDITABLE_STATES),
  ATTEMPTING: sqlStates(ATTEMPTING_STATES),
} as const;

/** Each state as a SQL literal, `'executing'`: what a statement compares `state` with or sets it to. */
export const SQL_STATE = Object.fromEntries(EVENT_STATES.map((s) => [s, `'${s}'`])) as {
  readonly [S in EventState]: string;
};
