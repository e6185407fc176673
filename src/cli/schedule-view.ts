/** How the CLI shows a schedule and a list of occurrences. */
import { destinationCell } from './event-view.ts';
import { cell, renderFields, renderTable, timeCell } from './table.ts';

export interface OccurrenceView {
  at?: string;
  local?: string;
}

/** The schedule JSON of the API, every field optional since the CLI only displays it. */
export interface ScheduleView {
  id?: string;
  cron?: string | null;
  every?: string | null;
  timezone?: string;
  startAt?: string;
  endAt?: string | null;
  missed?: string;
  catchUpMax?: number;
  paused?: boolean;
  destination?: string | { url?: string };
  payload?: unknown;
  version?: number;
  fired?: number;
  missedCount?: number;
  lastOccurrenceAt?: string | null;
  next?: OccurrenceView[];
}

export function renderOccurrences(next: OccurrenceView[] | undefined): string {
  return renderTable(
    ['UTC', 'LOCAL'],
    (next ?? []).map((o) => [cell(o.at), cell(o.local)]),
  );
}

export function renderSchedule(s: ScheduleView): string {
  return [
    renderFields([
      ['id', cell(s.id)],
      ['timing', s.cron ? `cron ${s.cron} (${s.timezone})` : `every ${cell(s.every)}`],
      ['paused', cell(s.paused)],
      ['start at', timeCell(s.startAt)],
      ['end at', timeCell(s.endAt)],
      ['missed', `${cell(s.missed)} (catch up at most ${cell(s.catchUpMax)})`],
      ['destination', destinationCell(s.destination)],
      ['payload', cell(s.payload)],
      ['version', cell(s.version)],
      ['fired', cell(s.fired)],
      ['missed so far', cell(s.missedCount)],
      ['last occurrence', timeCell(s.lastOccurrenceAt)],
    ]),
    '',
    'next occurrences:',
    renderOccurrences(s.next),
  ].join('\n');
}

export function renderScheduleList(schedules: ScheduleView[]): string {
  return renderTable(
    ['ID', 'TIMING', 'PAUSED', 'NEXT (UTC)', 'FIRED', 'MISSED'],
    schedules.map((s) => [
      cell(s.id),
      s.cron ? `${s.cron} ${s.timezone}` : `every ${cell(s.every)}`,
      cell(s.paused),
      cell(s.next?.[0]?.at),
      cell(s.fired),
      cell(s.missedCount),
    ]),
  );
}
