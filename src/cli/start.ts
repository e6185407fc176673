/** `belfry start [flags]`: runs a node until SIGTERM or SIGINT, then shuts down gracefully and exits 0. */
import { ConfigError, resolveConfig } from '../node/config.ts';
import { startNode } from '../node/node.ts';

export const START_USAGE = `Usage: belfry start [--port 7070] [--host 127.0.0.1] [--data ./belfry-data] [--store sqlite|postgres://...]
                    [--admin-key KEY] [--allow-hosts 127.0.0.1,::1] [--config belfry.json] [--log-level info]
                    [--shard-count 256] [--lookahead 3s] [--shutdown-timeout 30s] [--node-id ID] [--delivery-threads 1]
                    [--schedule-horizon 10s]
Every flag has a BELFRY_* environment variable (e.g. BELFRY_PORT); flags win over env, env over the config file.`;

export async function runStart(argv: string[]): Promise<void> {
  if (argv.includes('--help') || argv.includes('-h')) {
    process.stdout.write(START_USAGE + '\n');
    return;
  }
  let config: ReturnType<typeof resolveConfig>;
  try {
    config = resolveConfig(argv);
  } catch (err) {
    if (err instanceof ConfigError) {
      process.stderr.write(`belfry start: ${err.message}\n\n${START_USAGE}\n`);
      process.exit(2);
    }
    throw err;
  }
  const node = await startNode(config);
  let signalled = false;
  const onSignal = (signal: string) => {
    if (signalled) return;
    signalled = true;
    node.app.log.info({ signal }, 'signal received');
    node.stop().then(
      () => process.exit(0),
      (err) => {
        process.stderr.write(`shutdown failed: ${String(err)}\n`);
        process.exit(1);
      },
    );
  };
  process.on('SIGTERM', () => onSignal('SIGTERM'));
  process.on('SIGINT', () => onSignal('SIGINT'));
}
