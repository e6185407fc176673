/**
 * The transition table of core/event.ts is the one source of which change applies from which
 * states: every state list a backend uses (its SQL `state IN (...)` lists, its JS checks) is built
 * from it, so a change in one place cannot drift from the others.
 */
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import {
  ATTEMPT_OUTCOME_STATES,
  ATTEMPTING_STATES,
  CANCELABLE_STATES,
  EDITABLE_STATES,
  EVENT_STATES,
  type EventState,
  FIREABLE_STATES,
  LIVE_STATES,
  REPLAYABLE_STATES,
  STARTED_STATES,
  statesInto,
  TERMINAL_STATES,
  TRANSITIONS,
} from '../core/event.ts';
import { SQL_STATE, SQL_STATE_LISTS, sqlStates } from './core/state-lists.ts';

const STORE_DIR = import.meta.dirname;
const BACKEND_DIRS = ['sqlite', 'postgres', 'core'].map((d) => join(STORE_DIR, d));
const STATE = `(?:${EVENT_STATES.join('|')})`;
/** A state list written out by hand: `IN ('a'...` in SQL, or `['a', ...` in code. */
const LITERAL_LIST = new RegExp(`IN\\s*\\(\\s*'${STATE}'|\\[\\s*'${STATE}'\\s*,|\\[\\s*'${STATE}'\\s*\\]`, 'g');
/** One state written out by hand in SQL, compared with or set: `state = 'executing'`, `e.state <> 'awaiting_retry'`. */
const LITERAL_STATE = new RegExp(`\\bstate\\s*(?:=|<>|!=)\\s*'${STATE}'`, 'g');

function sourceFiles(dir: string): string[] {
  return readdirSync(dir)
    .filter((f) => f.endsWith('.ts') && !f.endsWith('.test.ts'))
    .map((f) => join(dir, f));
}

describe('state lists come from the transition table', () => {
  it('the core lists are read off TRANSITIONS', () => {
    assert.deepEqual(FIREABLE_STATES, statesInto('executing'));
    assert.deepEqual(CANCELABLE_STATES, statesInto('canceled'));
    assert.deepEqual(REPLAYABLE_STATES, statesInto('scheduled'));
    assert.deepEqual(ATTEMPTING_STATES, statesInto('succeeded'));
    assert.deepEqual(ATTEMPT_OUTCOME_STATES, TRANSITIONS.executing);
    for (const s of TERMINAL_STATES)
      assert.ok(
        TRANSITIONS[s].every((to) => to === 'scheduled'),
        s,
      );
    assert.deepEqual([...LIVE_STATES, ...TERMINAL_STATES].sort(), [...EVENT_STATES].sort());
    for (const s of STARTED_STATES) assert.ok(LIVE_STATES.includes(s) && s !== 'scheduled', s);
    for (const s of EDITABLE_STATES) assert.ok(LIVE_STATES.includes(s), s);
  });

  it('today they are what the partial indexes and the API document', () => {
    // A change here changes which partial index serves a statement: the migrations' predicates
    // (checked below) must change with it.
    assert.deepEqual(LIVE_STATES, ['scheduled', 'executing', 'awaiting_retry']);
    assert.deepEqual(FIREABLE_STATES, ['scheduled', 'awaiting_retry']);
    assert.deepEqual(TERMINAL_STATES, ['succeeded', 'discarded', 'archived', 'canceled']);
    assert.deepEqual(STARTED_STATES, ['executing', 'awaiting_retry']);
    assert.deepEqual(CANCELABLE_STATES, ['scheduled', 'awaiting_retry']);
    assert.deepEqual(REPLAYABLE_STATES, ['discarded', 'archived']);
    assert.deepEqual(ATTEMPTING_STATES, ['executing']);
  });

  it('every SQL list equals the core list it is named after', () => {
    const core: Record<keyof typeof SQL_STATE_LISTS, readonly EventState[]> = {
      LIVE: LIVE_STATES,
      FIREABLE: FIREABLE_STATES,
      STARTED: STARTED_STATES,
      TERMINAL: TERMINAL_STATES,
      CANCELABLE: CANCELABLE_STATES,
      REPLAYABLE: REPLAYABLE_STATES,
      EDITABLE: EDITABLE_STATES,
      ATTEMPTING: ATTEMPTING_STATES,
    };
    for (const [name, list] of Object.entries(SQL_STATE_LISTS)) {
      assert.equal(list, sqlStates(core[name as keyof typeof core]), name);
    }
  });

  it('no backend writes a state list of its own', () => {
    const found: string[] = [];
    for (const dir of BACKEND_DIRS) {
      for (const file of sourceFiles(dir)) {
        const text = readFileSync(file, 'utf8');
        for (const m of text.matchAll(LITERAL_LIST)) {
          const line = text.slice(0, m.index).split('\n').length;
          found.push(`${file.slice(STORE_DIR.length + 1)}:${line}: ${m[0]}`);
        }
      }
    }
    assert.deepEqual(found, [], 'build these from core/event.ts (src/store/core/state-lists.ts)');
  });

  it('no backend writes a single state of its own in SQL', () => {
    for (const s of EVENT_STATES) assert.equal(SQL_STATE[s], `'${s}'`, s);
    const found: string[] = [];
    for (const dir of BACKEND_DIRS) {
      for (const file of sourceFiles(dir)) {
        const text = readFileSync(file, 'utf8');
        for (const m of text.matchAll(LITERAL_STATE)) {
          const line = text.slice(0, m.index).split('\n').length;
          found.push(`${file.slice(STORE_DIR.length + 1)}:${line}: ${m[0]}`);
        }
      }
    }
    assert.deepEqual(found, [], 'spell it as SQL_STATE.<state> (src/store/core/state-lists.ts)');
  });

  it("every partial index's state list is spelled as one of the SQL lists", () => {
    const lists = new Set<string>(Object.values(SQL_STATE_LISTS));
    for (const backend of ['sqlite', 'postgres']) {
      const dir = join(STORE_DIR, backend, 'migrations');
      for (const f of readdirSync(dir)) {
        const text = readFileSync(join(dir, f), 'utf8');
        for (const m of text.matchAll(/WHERE state IN (\([^)]*\))/g)) {
          assert.ok(lists.has(m[1] as string), `${backend}/migrations/${f}: ${m[1]}`);
        }
      }
    }
  });
});
