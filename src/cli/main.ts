/**
 * The `belfry` command line: routes `belfry <group> <verb>` to one command file each.
 * Exit codes: 0 done, 1 the API or the network refused, 2 a mistake on the command line.
 */
import { readFile } from 'node:fs/promises';
import { ApiError, formatApiError } from './client.ts';
import { UsageError, wantsHelp, type Command, type Io } from './command.ts';
import { clusterStatus } from './cluster-status.ts';
import { eventsBulk, eventsBulkStatus } from './events-bulk.ts';
import { eventsCancel } from './events-cancel.ts';
import { eventsGet } from './events-get.ts';
import { eventsList } from './events-list.ts';
import { eventsSchedule } from './events-schedule.ts';
import { eventsTrace } from './events-trace.ts';
import { keysCreate } from './keys-create.ts';
import { schedulesDelete, schedulesPause, schedulesResume, schedulesTrigger } from './schedules-actions.ts';
import { schedulesCreate } from './schedules-create.ts';
import { schedulesGet, schedulesList } from './schedules-get.ts';
import { schedulesPreview } from './schedules-preview.ts';
import { tenantsCreate } from './tenants-create.ts';
import { belfryVersion } from '../node/version.ts';

export const EXIT_FAILURE = 1;
export const EXIT_USAGE = 2;

const GROUPS: Record<string, Record<string, Command>> = {
  events: {
    schedule: eventsSchedule,
    get: eventsGet,
    list: eventsList,
    cancel: eventsCancel,
    trace: eventsTrace,
    bulk: eventsBulk,
    'bulk-status': eventsBulkStatus,
  },
  schedules: {
    create: schedulesCreate,
    list: schedulesList,
    get: schedulesGet,
    pause: schedulesPause,
    resume: schedulesResume,
    trigger: schedulesTrigger,
    delete: schedulesDelete,
    preview: schedulesPreview,
  },
  tenants: { create: tenantsCreate },
  keys: { create: keysCreate },
  cluster: { status: clusterStatus },
};

const GROUP_SUMMARY: Record<string, string> = {
  events: 'schedule, get, list, cancel, trace and bulk-change events (tenant API key)',
  schedules: 'create, list, get, pause, resume, trigger, delete and preview recurring schedules (tenant API key)',
  tenants: 'create tenants (admin key)',
  keys: 'create API keys for tenants (admin key)',
  cluster: 'show nodes, leader, shards and lag (admin key)',
};

const USAGE = `Usage: belfry <command> [options]

Commands:
  start                 run a Belfry node
  events schedule       schedule an event
  events get <id>       show an event
  events list           list events
  events cancel <id>    cancel an event
  events trace <id>     show an event's execution trace
  events bulk           cancel, replay, shift or redirect every event a filter selects (--dry-run first)
  events bulk-status <id>  a bulk job's progress
  schedules create      create a recurring schedule (cron or every)
  schedules list|get    list schedules, show one with its next occurrences
  schedules pause|resume|trigger|delete <id>
  schedules preview     the next occurrences of a timing, creating nothing
  tenants create <name> create a tenant (admin)
  keys create <tenant>  create an API key for a tenant (admin)
  cluster status        nodes, leader, epoch, shards per node, lag (admin)

Run 'belfry <command> --help' for a command's options; 'belfry --version' prints the version.
Environment: BELFRY_URL, BELFRY_API_KEY, BELFRY_ADMIN_KEY.`;

/** The real process's I/O. */
function processIo(): Io {
  return {
    env: process.env,
    out: (text) => void process.stdout.write(text + '\n'),
    err: (text) => void process.stderr.write(text + '\n'),
    fetch: globalThis.fetch,
    readFile: (path) => readFile(path, 'utf8'),
  };
}

function groupUsage(group: string): string {
  const verbs = Object.keys(GROUPS[group]).join('|');
  return `Usage: belfry ${group} <${verbs}> [options]\n\n${GROUP_SUMMARY[group]}.\nRun 'belfry ${group} <${verbs}> --help' for options.`;
}

/**
 * Runs the CLI with `argv` (without node and the script). Sets process.exitCode instead of exiting,
 * so a running node (`start`) keeps the process alive and pending output is flushed.
 */
export async function main(argv: string[]): Promise<void> {
  const code = await runCli(argv, processIo());
  if (code !== 0) process.exitCode = code;
}

/** Runs one command line against `io` and returns its exit code; never throws. */
export async function runCli(argv: string[], io: Io): Promise<number> {
  try {
    return await route(argv, io);
  } catch (error) {
    return report(error, io);
  }
}

async function route(argv: string[], io: Io): Promise<number> {
  const [first, second, ...rest] = argv;
  if (first === undefined) return printUsage(io, USAGE, EXIT_USAGE);
  if (first === '--help' || first === '-h' || first === 'help') return printUsage(io, USAGE, 0);
  if (first === '--version' || first === '-v' || first === 'version') {
    if (second !== undefined) throw new UsageError(`unexpected argument: ${second}`);
    io.out(belfryVersion());
    return 0;
  }
  if (first === 'start') {
    // Loaded only here, so the API commands never pay for loading the node. It owns its flags and --help.
    await (await import('./start.ts')).runStart(argv.slice(1));
    return 0;
  }
  const group = GROUPS[first];
  if (!group) return unknownCommand(first, USAGE, io);
  if (second === undefined) return printUsage(io, groupUsage(first), EXIT_USAGE);
  if (second === '--help' || second === '-h') return printUsage(io, groupUsage(first), 0);
  const command = group[second];
  if (!command) return unknownCommand(`${first} ${second}`, groupUsage(first), io);
  if (wantsHelp(rest)) return printUsage(io, command.usage, 0);
  try {
    await command.run(rest, io);
    return 0;
  } catch (error) {
    if (error instanceof UsageError) error.hint ??= `Run 'belfry ${first} ${second} --help' for usage.`;
    throw error;
  }
}

/** Help that was asked for goes to stdout; help shown because of a mistake goes to stderr. */
function printUsage(io: Io, usage: string, code: number): number {
  (code === 0 ? io.out : io.err)(usage);
  return code;
}

function unknownCommand(name: string, usage: string, io: Io): number {
  io.err(`belfry: unknown command: ${name}\n\n${usage}`);
  return EXIT_USAGE;
}

/** Prints an error for a person and returns the exit code it deserves. */
function report(error: unknown, io: Io): number {
  if (error instanceof UsageError) {
    io.err(`belfry: ${error.message}\n${error.hint ?? "Run 'belfry --help' for usage."}`);
    return EXIT_USAGE;
  }
  if (error instanceof ApiError) {
    io.err(formatApiError(error));
    return EXIT_FAILURE;
  }
  io.err(`error: ${error instanceof Error ? error.message : String(error)}`);
  return EXIT_FAILURE;
}
