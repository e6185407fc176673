/**
 * Broker servers a test owns: a second redis-server or nats-server on a port of its own, with its
 * data in a temp dir (kept across a stop and start, so nothing written before is lost), that the
 * test may stop and start again. The machine's shared servers are never touched.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import net from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { closedPort } from '../../src/channels/conformance/suite.ts';

const START_MS_MAX = 15_000;
const STOP_MS_MAX = 10_000;

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
    if (Date.now() > deadlineMs) throw new Error(`server on port ${port} did not come up within ${START_MS_MAX} ms`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

function ownServer(command: string, args: (port: number, dir: string) => string[]): Promise<OwnServer> {
  return (async () => {
    const port = await closedPort();
    const dir = mkdtempSync(join(tmpdir(), 'belfry-own-server-'));
    let child: ChildProcess | null = null;
    const server: OwnServer = {
      port,
      async start() {
        child = spawn(command, args(port, dir), { stdio: 'ignore' });
        await accepting(port, Date.now() + START_MS_MAX);
      },
      async stop() {
        const c = child;
        if (!c || c.exitCode !== null || c.signalCode !== null) return;
        const exited = new Promise<void>((r) => c.once('exit', () => r()));
        c.kill('SIGTERM');
        const timer = setTimeout(() => c.kill('SIGKILL'), STOP_MS_MAX);
        await exited;
        clearTimeout(timer);
        child = null;
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
export function startOwnRedis(): Promise<OwnServer> {
  return ownServer('redis-server', (port, dir) => ['--port', String(port), '--bind', '127.0.0.1', '--dir', dir, '--save', '', '--appendonly', 'yes', '--appendfsync', 'always']);
}

/** A nats-server with JetStream of the test's own, its store in the temp dir. */
export function startOwnNats(): Promise<OwnServer> {
  return ownServer('/usr/sbin/nats-server', (port, dir) => ['-a', '127.0.0.1', '-p', String(port), '-js', '-sd', dir]);
}
