/** `belfry health`: GET /healthz and GET /readyz of the node that answers; exit 1 when it is not ready. */
import { ApiClient } from './client.ts';
import { COMMON_OPTIONS, parseCommandLine, printJson, type Command } from './command.ts';
import { noPositionals } from './flags.ts';
import { renderFields } from './table.ts';

const usage = `Usage: belfry health [options]

Asks a node whether it is alive (GET /healthz) and ready to serve (GET /readyz), with the reasons
when it is not (starting, shutting_down, no_shards, store_unreachable, ...). Exits 1 when it is
not ready, so a script can wait on it. Needs no key.

Options:
  --url <url>           Belfry base URL (env BELFRY_URL, default http://127.0.0.1:7070)
  --json                print both answers as {"health": ..., "readiness": ...}
  -h, --help            show this help`;

export const health: Command = {
  usage,
  async run(argv, io) {
    const { values, positionals } = parseCommandLine({ args: argv, options: COMMON_OPTIONS, allowPositionals: true });
    noPositionals(positionals);
    const client = ApiClient.withoutKey(values, io);
    const live = await client.call((b) => b.operations.health());
    // A node that is not ready answers 503 with its reasons: the SDK returns it, not throws it.
    const readiness = await client.call((b) => b.operations.ready());
    if (values.json) printJson(io, { health: live, readiness });
    else
      io.out(
        renderFields([
          ['live', live.status],
          ['version', live.version],
          ['ready', readiness.status === 'ready' ? 'ready' : `not ready: ${readiness.reasons.join(', ')}`],
        ]),
      );
    if (readiness.status !== 'ready')
      throw new Error(`${client.baseUrl} is not ready: ${readiness.reasons.join(', ')}`);
  },
};
