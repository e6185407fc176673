/** `belfry start [flags]`: runs a node until SIGTERM or SIGINT, then shuts down gracefully and exits 0. */
import { ConfigError, resolveConfig, startUsage } from '../node/config.ts';
import { startNode } from '../node/node.ts';

/** Made from the settings table of node/config.ts, so it lists every setting. */
export const START_USAGE = startUsage();

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
