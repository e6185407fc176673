/**
 * Misbehaving broker servers on loopback, for the tests of what a broker channel holds when its
 * broker stops answering, and of what it sends before TLS:
 *
 * - blackHole(): accepts TCP connections and never says a word (so no handshake completes); it
 *   reads and drops what it gets, keeping the first bytes of each connection.
 * - stallingProxy(): forwards to a real broker until the client sends what `stallOn` names (a
 *   publish), then stops forwarding both ways on that connection and keeps it open: the handshake
 *   completes, the send never gets an answer.
 *
 * And memorySnapshot(): the process's RSS and heap after a full garbage collection, and its open
 * sockets, to compare before and after many attempts.
 */
import { readdirSync, readlinkSync } from 'node:fs';
import net from 'node:net';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';

/** Bytes of each connection's start kept for the TLS tests. */
const FIRST_BYTES_MAX = 4_096;

export interface BlackHole {
  port: number;
  /** Connections accepted so far. */
  readonly accepted: number;
  /** Connections open now (accepted, not yet closed by the client). */
  readonly open: number;
  /** The first bytes each connection sent, in the order they were accepted. */
  readonly firstBytes: Buffer[];
  close(): Promise<void>;
}

/**
 * A loopback server that accepts connections and never answers; with `greeting`, it sends that
 * on each connection first and then nothing more (a server that speaks first, as NATS does).
 */
export async function blackHole(greeting?: string): Promise<BlackHole> {
  const sockets = new Set<net.Socket>();
  const firstBytes: Buffer[] = [];
  let accepted = 0;
  const server = net.createServer((s) => {
    accepted++;
    sockets.add(s);
    const index = firstBytes.push(Buffer.alloc(0)) - 1;
    s.on('data', (chunk) => {
      const have = firstBytes[index];
      if (have.length < FIRST_BYTES_MAX) firstBytes[index] = Buffer.concat([have, chunk]).subarray(0, FIRST_BYTES_MAX);
    });
    s.on('error', () => {});
    s.on('close', () => sockets.delete(s));
    if (greeting !== undefined) s.write(greeting);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    port: (server.address() as net.AddressInfo).port,
    get accepted() {
      return accepted;
    },
    get open() {
      return sockets.size;
    },
    firstBytes,
    close: () => {
      for (const s of sockets) s.destroy();
      return new Promise<void>((r) => server.close(() => r()));
    },
  };
}

export interface StallingProxy extends BlackHole {
  /** Connections that stalled (the client sent what `stallOn` names). */
  readonly stalled: number;
}

/**
 * A loopback proxy to `upstreamPort` that, on each connection, forwards both ways until a chunk
 * from the client matches `stallOn`, then swallows everything from there on, both ways.
 */
export async function stallingProxy(
  upstreamPort: number,
  stallOn: (clientChunk: Buffer) => boolean,
): Promise<StallingProxy> {
  const sockets = new Set<net.Socket>();
  let accepted = 0;
  let stalled = 0;
  const server = net.createServer((client) => {
    accepted++;
    sockets.add(client);
    const upstream = net.connect({ host: '127.0.0.1', port: upstreamPort });
    let stalledHere = false;
    client.on('data', (chunk) => {
      if (stalledHere) return;
      if (stallOn(chunk)) {
        stalledHere = true;
        stalled++;
        return;
      }
      upstream.write(chunk);
    });
    upstream.on('data', (chunk) => {
      if (!stalledHere) client.write(chunk);
    });
    const end = () => {
      client.destroy();
      upstream.destroy();
    };
    client.on('error', () => {});
    upstream.on('error', end);
    upstream.on('close', () => {
      if (!stalledHere) client.destroy();
    });
    client.on('close', () => {
      sockets.delete(client);
      upstream.destroy();
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    port: (server.address() as net.AddressInfo).port,
    get accepted() {
      return accepted;
    },
    get open() {
      return sockets.size;
    },
    get stalled() {
      return stalled;
    },
    firstBytes: [],
    close: () => {
      for (const s of sockets) s.destroy();
      return new Promise<void>((r) => server.close(() => r()));
    },
  };
}

let gc: (() => void) | null = null;

/** A full garbage collection, without starting node with --expose-gc. */
export function collectGarbage(): void {
  if (!gc) {
    setFlagsFromString('--expose-gc');
    gc = runInNewContext('gc') as () => void;
  }
  gc();
}

/** Open sockets of this process (Linux: its socket file descriptors); null elsewhere. */
export function openSockets(): number | null {
  try {
    let n = 0;
    for (const fd of readdirSync('/proc/self/fd')) {
      try {
        if (readlinkSync(`/proc/self/fd/${fd}`).startsWith('socket:')) n++;
      } catch {
        // closed while listing
      }
    }
    return n;
  } catch {
    return null;
  }
}

export interface MemorySnapshot {
  rssBytes: number;
  heapUsedBytes: number;
  /** Buffers and other memory outside the JS heap (payload bytes live here). */
  externalBytes: number;
  sockets: number | null;
}

/** Memory after two full collections (the second frees what finalizers of the first released). */
export async function memorySnapshot(): Promise<MemorySnapshot> {
  collectGarbage();
  await new Promise((r) => setImmediate(r));
  collectGarbage();
  const m = process.memoryUsage();
  return { rssBytes: m.rss, heapUsedBytes: m.heapUsed, externalBytes: m.external, sockets: openSockets() };
}

export const MIB = 1024 * 1024;
