/**
 * Broker servers a test owns: a second redis-server, nats-server or RabbitMQ node on a port of its
 * own, with its data in a temp dir (kept across a stop and start, so nothing written before is
 * lost), that the test may stop and start again. The machine's shared servers are never touched.
 * A server still running when the test process exits is killed (its whole process group).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { closedPort } from '../../src/channels/conformance/suite.ts';

const START_MS_MAX = 15_000;
const STOP_MS_MAX = 10_000;
/** RabbitMQ boots an Erlang VM: about 3 s on an idle machine, far more on a loaded one. */
const RABBIT_START_MS_MAX = 60_000;
const RABBIT_STOP_MS_MAX = 30_000;

/** Servers running now: killed if the test process exits without stopping them. */
const running = new Set<ChildProcess>();
process.once('exit', () => {
  for (const c of running) {
    try {
      process.kill(-c.pid!, 'SIGKILL');
    } catch {
      // already gone
    }
  }
});

export interface OwnServer {
  port: number;
  /** Starts it (again) on the same port and data dir; resolves once it accepts connections. */
  start(): Promise<void>;
  /** Stops it (SIGTERM, SIGKILL past the deadline); resolves once it exited. */
  stop(): Promise<void>;
  /** Stops it and removes its data. */
  remove(): Promise<void>;
}

async function accepting(port: number, deadlineMs: number): Promise<void> {
  for (;;) {
    const ok = await new Promise<boolean>((resolve) => {
      const s = net.connect({ host: '127.0.0.1', port }, () => {
        s.destroy();
        resolve(true);
      });
      s.on('error', () => resolve(false));
    });
    if (ok) return;
    if (Date.now() > deadlineMs) throw new Error(`server on port ${port} did not come up in time`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

interface ServerSpec {
  command: string;
  args(port: number, dir: string): string[];
  env?(port: number, dir: string): Record<string, string>;
  startMsMax?: number;
  stopMsMax?: number;
}

function ownServer(spec: ServerSpec): Promise<OwnServer> {
  return (async () => {
    const port = await closedPort();
    const dir = mkdtempSync(join(tmpdir(), 'belfry-own-server-'));
    let child: ChildProcess | null = null;
    const server: OwnServer = {
      port,
      async start() {
        // Its own process group: a wrapper script's children are killed with it.
        const c = spawn(spec.command, spec.args(port, dir), {
          stdio: 'ignore',
          detached: true,
          env: { ...process.env, ...spec.env?.(port, dir) },
        });
        child = c;
        running.add(c);
        c.once('exit', () => running.delete(c));
        const exited = new Promise<never>((_, reject) =>
          c.once('exit', (code) =>
            reject(new Error(`${spec.command} exited (code ${code}) before accepting connections`)),
          ),
        );
        await Promise.race([accepting(port, Date.now() + (spec.startMsMax ?? START_MS_MAX)), exited]).catch(
          async (err: unknown) => {
            await server.stop();
            throw err;
          },
        );
      },
      async stop() {
        const c = child;
        child = null;
        if (!c || c.exitCode !== null || c.signalCode !== null) return;
        const exited = new Promise<void>((r) => c.once('exit', () => r()));
        c.kill('SIGTERM');
        const timer = setTimeout(() => {
          try {
            process.kill(-c.pid!, 'SIGKILL');
          } catch {
            // already gone
          }
        }, spec.stopMsMax ?? STOP_MS_MAX);
        await exited;
        clearTimeout(timer);
      },
      async remove() {
        await server.stop();
        rmSync(dir, { recursive: true, force: true });
      },
    };
    await server.start();
    return server;
  })();
}

/** A redis-server of the test's own, its stream data kept in an append-only file across restarts. */
export function startOwnRedis(appendfsync: 'always' | 'everysec' = 'always'): Promise<OwnServer> {
  return ownServer({
    command: 'redis-server',
    args: (port, dir) => [
      '--port',
      String(port),
      '--bind',
      '127.0.0.1',
      '--dir',
      dir,
      '--save',
      '',
      '--appendonly',
      'yes',
      '--appendfsync',
      appendfsync,
    ],
  });
}

/** A nats-server with JetStream of the test's own, its store in the temp dir. */
export function startOwnNats(): Promise<OwnServer> {
  return ownServer({
    command: '/usr/sbin/nats-server',
    args: (port, dir) => ['-a', '127.0.0.1', '-p', String(port), '-js', '-sd', dir],
  });
}

let rabbits = 0;

/**
 * A RabbitMQ node of the test's own: its own node name, AMQP port on loopback, distribution port,
 * database and logs in the temp dir (kept across a restart: durable queues and persistent messages
 * survive it), no plugins (the management plugin would want the shared node's port 15672), and
 * its Erlang cookie in the temp dir (HOME). It registers its name with the machine's epmd, as
 * every Erlang node on it does. The guest user, which RabbitMQ allows from loopback only, is
 * there. SIGTERM stops it cleanly (the wrapper script passes it to the VM).
 */
export async function startOwnRabbit(): Promise<OwnServer> {
  const distPort = await closedPort();
  const name = `belfry-test-${process.pid}-${++rabbits}@localhost`;
  return ownServer({
    command: '/usr/lib/rabbitmq/bin/rabbitmq-server',
    args: () => [],
    env: (port, dir) => {
      writeFileSync(join(dir, 'enabled_plugins'), '[].\n');
      return {
        HOME: dir,
        RABBITMQ_NODENAME: name,
        RABBITMQ_NODE_IP_ADDRESS: '127.0.0.1',
        RABBITMQ_NODE_PORT: String(port),
        RABBITMQ_DIST_PORT: String(distPort),
        RABBITMQ_MNESIA_BASE: join(dir, 'mnesia'),
        RABBITMQ_LOG_BASE: join(dir, 'log'),
        RABBITMQ_LOGS: join(dir, 'log', 'rabbit.log'),
        RABBITMQ_PID_FILE: join(dir, 'rabbit.pid'),
        RABBITMQ_ENABLED_PLUGINS_FILE: join(dir, 'enabled_plugins'),
        RABBITMQ_CONFIG_FILE: join(dir, 'rabbitmq'),
        RABBITMQ_ADVANCED_CONFIG_FILE: join(dir, 'advanced.config'),
        RABBITMQ_CONF_ENV_FILE: join(dir, 'rabbitmq-env.conf'),
      };
    },
    startMsMax: RABBIT_START_MS_MAX,
    stopMsMax: RABBIT_STOP_MS_MAX,
  });
}
