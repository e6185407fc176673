/**
 * The `belfry` command line: routes `belfry <group> <verb>` (or `belfry <command>`) to one command file each.
 * Exit codes: 0 done, 1 the API or the network refused, 2 a mistake on the command line.
 */
import { readFile } from 'node:fs/promises';
import { ApiError, formatApiError } from './client.ts';
import { UsageError, wantsHelp, type Command, type Io } from './command.ts';
import { accountLimits, accountRotateSecret } from './account.ts';
import { clusterStatus } from './cluster-status.ts';
import {
  destinationsDelete,
  destinationsGet,
  destinationsHealth,
  destinationsList,
  destinationsPut,
  destinationsRotateSecret,
} from './destinations.ts';
import { eventsBatch } from './events-batch.ts';
import { eventsBulk, eventsBulkStatus } from './events-bulk.ts';
import { eventsCancel } from './events-cancel.ts';
import { eventsEdit, eventsReplay } from './events-edit.ts';
import { eventsGet } from './events-get.ts';
import { eventsList } from './events-list.ts';
import { eventsSchedule } from './events-schedule.ts';
import { eventsTrace } from './events-trace.ts';
import { forecast } from './forecast.ts';
import { health } from './health.ts';
import { keysCreate } from './keys-create.ts';
import { keysList, keysRevoke, keysRotate } from './keys-manage.ts';
import { pullAck, pullClaim, pullExtend, pullNack } from './pull.ts';
import { schedulesDelete, schedulesPause, schedulesResume, schedulesTrigger } from './schedules-actions.ts';
import { schedulesCreate } from './schedules-create.ts';
import { schedulesEdit } from './schedules-edit.ts';
import { schedulesGet, schedulesList } from './schedules-get.ts';
import { schedulesPreview } from './schedules-preview.ts';
import { sourcesDelete, sourcesGet, sourcesList, sourcesPut } from './sources.ts';
import { tenantsCreate } from './tenants-create.ts';
import { tenantsEdit, tenantsGet, tenantsList, tenantsRotateSecret } from './tenants-manage.ts';
import { belfryVersion } from '../node/version.ts';

export const EXIT_FAILURE = 1;
export const EXIT_USAGE = 2;

const GROUPS: Record<string, Record<string, Command>> = {
  events: {
    schedule: eventsSchedule,
    batch: eventsBatch,
    get: eventsGet,
    list: eventsList,
    edit: eventsEdit,
    cancel: eventsCancel,
    replay: eventsReplay,
    trace: eventsTrace,
    bulk: eventsBulk,
    'bulk-status': eventsBulkStatus,
  },
  schedules: {
    create: schedulesCreate,
    list: schedulesList,
    get: schedulesGet,
    edit: schedulesEdit,
    pause: schedulesPause,
    resume: schedulesResume,
    trigger: schedulesTrigger,
    delete: schedulesDelete,
    preview: schedulesPreview,
  },
  destinations: {
    list: destinationsList,
    get: destinationsGet,
    put: destinationsPut,
    delete: destinationsDelete,
    'rotate-secret': destinationsRotateSecret,
    health: destinationsHealth,
  },
  sources: { list: sourcesList, get: sourcesGet, put: sourcesPut, delete: sourcesDelete },
  pull: { claim: pullClaim, ack: pullAck, nack: pullNack, extend: pullExtend },
  account: { limits: accountLimits, 'rotate-secret': accountRotateSecret },
  tenants: {
    create: tenantsCreate,
    list: tenantsList,
    get: tenantsGet,
    edit: tenantsEdit,
    'rotate-secret': tenantsRotateSecret,
  },
  keys: { create: keysCreate, list: keysList, revoke: keysRevoke, rotate: keysRotate },
  cluster: { status: clusterStatus },
};

/** Commands without a verb: `belfry <command> [options]`. */
const COMMANDS: Record<string, Command> = { forecast, health };

const GROUP_SUMMARY: Record<string, string> = {
  events: 'schedule (one or a batch), get, list, edit, cancel, replay, trace and bulk-change events (tenant API key)',
  schedules: 'create, list, get, edit, pause, resume, trigger, delete and preview recurring schedules (tenant API key)',
  destinations:
    'list, get, create or replace, delete, rotate the secret of and see the health of destinations (tenant API key)',
  sources: 'list, get, create or replace and delete Kafka sources of schedule requests (tenant API key)',
  pull: "claim a pull destination's due events, then ack, nack or extend each (tenant API key)",
  account: "the calling tenant's limits and signing secret (tenant API key)",
  tenants: 'create, list, show, edit and rotate the signing secret of tenants (admin key)',
  keys: "create, list, revoke and rotate API keys: a tenant's with the admin key, or your own (tenant API key)",
  cluster: 'show nodes, leader, shards and lag (admin key)',
};

const USAGE = `Usage: belfry <command> [options]

Commands:
  start                 run a Belfry node
  dev                   try Belfry here: a node on ./belfry-dev with loopback webhooks allowed, an
                        echo receiver, a tenant and its API key (not for production)

  events schedule       schedule an event
  events batch --file <f>  schedule many events from a JSON file
  events get|trace <id> show an event, or its execution trace
  events list           list events (filters: state, destination, group, type, schedule, time)
  events edit <id>      change a scheduled event: fire time, destination, payload, headers, type
  events cancel <id>    cancel an event
  events replay <id>    deliver an archived or discarded event again
  events bulk           cancel, replay, shift or redirect every event a filter selects (--dry-run first)
  events bulk-status <id>  a bulk job's progress
  schedules create      create a recurring schedule (cron or every)
  schedules list|get    list schedules, show one with its next occurrences
  schedules edit <id>   change a schedule's timing or template
  schedules pause|resume|trigger|delete <id>
  schedules preview     the next occurrences of a timing, creating nothing
  destinations list|get|put|delete <name>   registered destinations (webhooks, brokers, pull)
  destinations rotate-secret|health <name>  a new signing secret; the delivery queue's health
  sources list|get|put|delete <name>        Kafka topics of schedule requests
  pull claim <destination>                  claim due events of a pull destination
  pull ack|nack|extend <id> --receipt <r>   settle or keep a claimed event
  forecast              scheduled events due per bucket ahead, spikes flagged
  account limits        your tenant's limits
  account rotate-secret your tenant's signing secret for inline URLs

Admin (the admin key):
  tenants create <name> create a tenant
  tenants list|get <id> list tenants, show one with its limits and retention
  tenants edit <id>     change a tenant's limits, retention, durability, missedAfter
  tenants rotate-secret <id>  a new signing secret for a tenant
  keys create|list [<tenant>]           a tenant's API keys (without <tenant>: your own, API key)
  keys revoke|rotate [<tenant>] <keyId> revoke or replace a key
  cluster status        nodes, leader, epoch, shards per node, lag

Operations (no key):
  health                a node's liveness and readiness; exit 1 when it is not ready

Run 'belfry <command> --help' for a command's options; 'belfry --version' prints the version.
Environment: BELFRY_URL, BELFRY_API_KEY, BELFRY_ADMIN_KEY.
Exit codes: 0 done, 1 the API or the network refused, 2 a mistake on the command line.`;

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
  if (first === 'dev') {
    // As start: loaded only here; it owns its flags and --help.
    await (await import('./dev.ts')).runDev(argv.slice(1));
    return 0;
  }
  const single = COMMANDS[first];
  if (single) return runCommand(single, first, argv.slice(1), io);
  const group = GROUPS[first];
  if (!group) return unknownCommand(first, USAGE, io);
  if (second === undefined) return printUsage(io, groupUsage(first), EXIT_USAGE);
  if (second === '--help' || second === '-h') return printUsage(io, groupUsage(first), 0);
  const command = group[second];
  if (!command) return unknownCommand(`${first} ${second}`, groupUsage(first), io);
  return runCommand(command, `${first} ${second}`, rest, io);
}

async function runCommand(command: Command, name: string, argv: string[], io: Io): Promise<number> {
  if (wantsHelp(argv)) return printUsage(io, command.usage, 0);
  try {
    await command.run(argv, io);
    return 0;
  } catch (error) {
    if (error instanceof UsageError) error.hint ??= `Run 'belfry ${name} --help' for usage.`;
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
