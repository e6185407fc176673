/** `belfry schedules pause|resume|trigger|delete <id>`: one request each on a schedule. */
import { ApiClient } from './client.ts';
import { COMMON_OPTIONS, commonUsage, onePositional, parseCommandLine, printJson, type Command } from './command.ts';
import { renderEvent, type EventView } from './event-view.ts';
import { renderSchedule, type ScheduleView } from './schedule-view.ts';

const options = { ...COMMON_OPTIONS, 'if-match': { type: 'string' } } as const;

function action(
  verb: string,
  summary: string,
  request: (id: string) => { method: 'PATCH' | 'POST' | 'DELETE'; path: string; body?: unknown },
  shows: 'schedule' | 'event',
): Command {
  return {
    usage: `Usage: belfry schedules ${verb} <id> [options]

${summary}

Options:
  --if-match <etag>     only if the schedule is still at this version (as 'schedules get' shows)
${commonUsage('BELFRY_API_KEY')}`,
    async run(argv, io) {
      const { values, positionals } = parseCommandLine({ args: argv, options, allowPositionals: true });
      const id = onePositional(positionals, 'id');
      const { method, path, body } = request(encodeURIComponent(id));
      const headers = values['if-match'] === undefined ? undefined : { 'if-match': values['if-match'] };
      const response = await ApiClient.fromFlags(values, 'tenant', io).request(method, path, { body, headers });
      if (values.json) return printJson(io, response.body);
      io.out(
        shows === 'event' ? renderEvent(response.body as EventView) : renderSchedule(response.body as ScheduleView),
      );
    },
  };
}

export const schedulesPause = action(
  'pause',
  'Pauses a schedule (PATCH {"paused": true}); its occurrences made and not fired are canceled.',
  (id) => ({ method: 'PATCH', path: `/v1/schedules/${id}`, body: { paused: true } }),
  'schedule',
);
export const schedulesResume = action(
  'resume',
  'Resumes a schedule (PATCH {"paused": false}); occurrences missed while paused follow its missed policy.',
  (id) => ({ method: 'PATCH', path: `/v1/schedules/${id}`, body: { paused: false } }),
  'schedule',
);
export const schedulesTrigger = action(
  'trigger',
  'Fires one occurrence now, an event <id>@<now> (POST /v1/schedules/{id}/trigger).',
  (id) => ({ method: 'POST', path: `/v1/schedules/${id}/trigger` }),
  'event',
);
export const schedulesDelete = action(
  'delete',
  'Deletes a schedule; its occurrences made and not fired are canceled (DELETE /v1/schedules/{id}).',
  (id) => ({ method: 'DELETE', path: `/v1/schedules/${id}` }),
  'schedule',
);
