/**
 * A small NATS client made for one thing: JetStream publishes, each settled by the stream's
 * publish ack. Belfry owns its socket, which a general client does not give: the connect is bounded
 * by the caller's signal (an abort destroys the socket, whatever the handshake's state), close
 * destroys at once, a `tls://` server is spoken to only over TLS (a server that does not offer it is
 * refused before anything is sent, so no credential ever crosses in clear), and nothing reconnects
 * by itself: the connection pool opens a new connection for the next delivery.
 *
 * Protocol (docs.nats.io, "Client Protocol"): the server speaks first (INFO); the client upgrades
 * to TLS when it wants it or the server requires it, sends CONNECT and PING, and is connected at
 * the PONG. Each publish is an HPUB whose reply subject is under this connection's inbox
 * (subscribed once, `SUB <inbox>.* 1`); JetStream answers there with a PubAck (`{"stream","seq"}`)
 * or an error (`{"error":{"code","description"}}`), and the server itself with a `503` status
 * header when nothing listens on the subject (no responders).
 */
import { randomBytes } from 'node:crypto';
import net from 'node:net';
import tls from 'node:tls';
import { dieWith } from '../broker/sockets.ts';

/** Longest control line (INFO included) and reply payload read from a server. */
const LINE_BYTES_MAX = 64 * 1024;
const REPLY_BYTES_MAX = 64 * 1024;
const CRLF = Buffer.from('\r\n');

export type NatsErrorCode =
  | 'NO_RESPONDERS'
  | 'PERMISSIONS_VIOLATION'
  | 'AUTHORIZATION_VIOLATION'
  | 'MAX_PAYLOAD'
  | 'TLS_UNAVAILABLE'
  | 'NO_HEADERS'
  | 'JETSTREAM'
  | 'SERVER_ERROR'
  | 'PROTOCOL'
  | 'CLOSED';

export class NatsError extends Error {
  constructor(
    readonly code: NatsErrorCode,
    message: string,
  ) {
    super(message);
    this.name = 'NatsError';
  }
}

export interface NatsServerAddress {
  /** The address to connect to (one the private-address guard allowed). */
  address: string;
  port: number;
  /** The host as the destination names it: the TLS server name and certificate check. */
  hostname: string;
}

export interface NatsConnectOptions {
  server: NatsServerAddress;
  /** Speak TLS, or fail: never plaintext. */
  tls: boolean;
  user?: string;
  pass?: string;
  token?: string;
  /** The connection's name in the server's monitoring. */
  name: string;
  /** Destroys the socket when it aborts: during the handshake (it fails) or after. */
  signal: AbortSignal;
  /** Tests: extra TLS options (a CA to trust). */
  tlsOptions?: tls.ConnectionOptions;
}

interface ServerInfo {
  tls_required?: boolean;
  tls_available?: boolean;
  headers?: boolean;
  max_payload?: number;
}

interface Pending {
  subject: string;
  resolve(): void;
  reject(err: Error): void;
}

/** Reads NATS protocol messages from a stream of bytes. */
class Parser {
  private buf: Buffer = Buffer.alloc(0);
  /** Set while the payload of a MSG / HMSG is awaited. */
  private awaiting: { subject: string; headerBytes: number; totalBytes: number } | null = null;

  constructor(
    private readonly onLine: (line: string) => void,
    private readonly onMessage: (subject: string, headers: Buffer | null, payload: Buffer) => void,
  ) {}

  /** Throws NatsError('PROTOCOL') on bytes no server sends. */
  push(chunk: Buffer): void {
    this.buf = this.buf.length === 0 ? chunk : Buffer.concat([this.buf, chunk]);
    for (;;) {
      if (this.awaiting) {
        const { subject, headerBytes, totalBytes } = this.awaiting;
        if (this.buf.length < totalBytes + 2) return;
        const body = this.buf.subarray(0, totalBytes);
        this.buf = this.buf.subarray(totalBytes + 2);
        this.awaiting = null;
        this.onMessage(
          subject,
          headerBytes >= 0 ? body.subarray(0, headerBytes) : null,
          body.subarray(Math.max(0, headerBytes)),
        );
        continue;
      }
      const end = this.buf.indexOf(CRLF);
      if (end < 0) {
        if (this.buf.length > LINE_BYTES_MAX) throw new NatsError('PROTOCOL', 'a line from the server is too long');
        return;
      }
      const line = this.buf.subarray(0, end).toString('latin1');
      this.buf = this.buf.subarray(end + 2);
      const op = line.slice(0, 4).toUpperCase();
      if (op === 'MSG ' || op === 'HMSG') {
        // MSG <subject> <sid> [reply] <#bytes> · HMSG <subject> <sid> [reply] <#header bytes> <#total bytes>
        const parts = line.split(' ').filter((p) => p !== '');
        const headers = op === 'HMSG';
        const totalBytes = Number(parts[parts.length - 1]);
        const headerBytes = headers ? Number(parts[parts.length - 2]) : -1;
        if (
          !Number.isInteger(totalBytes) ||
          totalBytes < 0 ||
          totalBytes > REPLY_BYTES_MAX ||
          (headers && !(headerBytes >= 0 && headerBytes <= totalBytes))
        ) {
          throw new NatsError('PROTOCOL', `a message from the server Belfry does not read: ${line.slice(0, 100)}`);
        }
        this.awaiting = { subject: parts[1] ?? '', headerBytes, totalBytes };
        continue;
      }
      this.onLine(line);
    }
  }
}

/** The error of a server's `-ERR '...'` line. */
function serverError(text: string): NatsError {
  const lower = text.toLowerCase();
  if (lower.includes('permissions violation')) return new NatsError('PERMISSIONS_VIOLATION', text);
  if (lower.includes('authorization violation') || lower.includes('authentication'))
    return new NatsError('AUTHORIZATION_VIOLATION', text);
  if (lower.includes('maximum payload')) return new NatsError('MAX_PAYLOAD', text);
  return new NatsError('SERVER_ERROR', text);
}

/** The header block of an HPUB: `NATS/1.0`, then one `name: value` line each. */
function headerBlock(headers: Record<string, string>): Buffer {
  let text = 'NATS/1.0\r\n';
  for (const [k, v] of Object.entries(headers)) text += `${k}: ${v.replace(/[\r\n]/g, ' ')}\r\n`;
  return Buffer.from(`${text}\r\n`, 'utf8');
}

/** What a reply on the inbox says: resolved (a PubAck) or the error. */
function replyOutcome(subject: string, headers: Buffer | null, payload: Buffer): NatsError | null {
  if (headers) {
    const status = /^NATS\/1\.0 (\d{3})(.*)/.exec(headers.toString('latin1').split('\r\n', 1)[0]);
    if (status?.[1] === '503')
      return new NatsError('NO_RESPONDERS', `503 no responders: no stream listens on subject "${subject}"`);
    if (status) return new NatsError('JETSTREAM', `${status[1]}${status[2]}`.trim());
  }
  let ack: { error?: { code?: unknown; description?: unknown } } | null;
  try {
    ack = JSON.parse(payload.toString('utf8')) as { error?: { code?: unknown; description?: unknown } } | null;
  } catch {
    return new NatsError('PROTOCOL', 'the publish ack is not JSON');
  }
  if (ack && typeof ack === 'object' && ack.error)
    return new NatsError('JETSTREAM', `${String(ack.error.code ?? '')} ${String(ack.error.description ?? '')}`.trim());
  return null;
}

export class NatsLink {
  private readonly pending = new Map<number, Pending>();
  private seq = 0;
  private corked = false;
  private closedWith: Error | null = null;
  private readonly closeListeners: ((err: Error) => void)[] = [];

  private constructor(
    private readonly socket: net.Socket,
    /** The TCP socket under `socket` when that is TLS (the same socket otherwise). */
    private readonly raw: net.Socket,
    private readonly inbox: string,
    private readonly info: ServerInfo,
  ) {}

  /** Connects, upgrades to TLS when asked (or required by the server), and authenticates. */
  static async connect(opts: NatsConnectOptions): Promise<NatsLink> {
    const { server, signal } = opts;
    signal.throwIfAborted();
    const raw = net.connect({ host: server.address, port: server.port });
    dieWith(raw, signal);
    raw.setNoDelay(true);
    raw.on('error', () => {});
    let socket: net.Socket = raw;
    try {
      await once(raw, 'connect');
      const info = await readInfo(raw);
      if (opts.tls && !info.tls_required && !info.tls_available) {
        throw new NatsError(
          'TLS_UNAVAILABLE',
          'the server does not offer TLS: refusing to continue in plaintext (tls:// was asked for)',
        );
      }
      if (opts.tls || info.tls_required) socket = await startTls(raw, server, signal, opts.tlsOptions);
      if (info.headers !== true)
        throw new NatsError('NO_HEADERS', 'the server does not support message headers (NATS 2.2 or later is needed)');
      const inbox = `_INBOX.${randomBytes(12).toString('hex')}`;
      const connect = {
        verbose: false,
        pedantic: false,
        tls_required: socket !== raw,
        name: opts.name,
        lang: 'belfry',
        version: '1',
        protocol: 1,
        headers: true,
        no_responders: true,
        ...(opts.user !== undefined ? { user: opts.user, pass: opts.pass ?? '' } : {}),
        ...(opts.token !== undefined ? { auth_token: opts.token } : {}),
      };
      socket.write(`CONNECT ${JSON.stringify(connect)}\r\nPING\r\n`);
      await readPong(socket);
      socket.write(`SUB ${inbox}.* 1\r\n`);
      const link = new NatsLink(socket, raw, inbox, info);
      link.listen();
      return link;
    } catch (err) {
      socket.destroy();
      raw.destroy();
      if (signal.aborted) throw signal.reason instanceof Error ? signal.reason : new Error('aborted');
      throw err;
    }
  }

  /** Calls `listener` once, when the connection closes (by either side). */
  onClose(listener: (err: Error) => void): void {
    if (this.closedWith) listener(this.closedWith);
    else this.closeListeners.push(listener);
  }

  /** Resolves once JetStream acknowledged the message (stored it). */
  publish(subject: string, headers: Record<string, string>, body: Buffer): Promise<void> {
    if (this.closedWith) return Promise.reject(this.closedWith);
    const head = headerBlock(headers);
    const max = this.info.max_payload;
    if (typeof max === 'number' && head.length + body.length > max) {
      return Promise.reject(
        new NatsError(
          'MAX_PAYLOAD',
          `the message (${head.length + body.length} bytes with its headers) is larger than the server's max_payload (${max})`,
        ),
      );
    }
    const id = ++this.seq;
    return new Promise<void>((resolve, reject) => {
      this.pending.set(id, { subject, resolve, reject });
      // Publishes of one turn of the event loop go out in one write.
      if (!this.corked) {
        this.corked = true;
        this.socket.cork();
        process.nextTick(() => {
          this.corked = false;
          this.socket.uncork();
        });
      }
      this.socket.write(`HPUB ${subject} ${this.inbox}.${id} ${head.length} ${head.length + body.length}\r\n`);
      this.socket.write(head);
      this.socket.write(body);
      this.socket.write(CRLF);
    });
  }

  /** Destroys the socket: every publish waiting fails. */
  close(): void {
    this.socket.destroy();
    this.raw.destroy();
    this.closed(new NatsError('CLOSED', 'connection closed'));
  }

  private listen(): void {
    const parser = new Parser(
      (line) => this.onLine(line),
      (subject, headers, payload) => this.onReply(subject, headers, payload),
    );
    this.socket.on('data', (chunk: Buffer) => {
      try {
        parser.push(chunk);
      } catch (err) {
        this.socket.destroy();
        this.closed(err as Error);
      }
    });
    this.socket.on('close', () => this.closed(new NatsError('CLOSED', 'connection closed')));
    this.socket.on('error', () => {});
    // The handshake paused the socket (what it did not read was put back): read from here on.
    this.socket.resume();
  }

  private onLine(line: string): void {
    if (line === 'PING') this.socket.write('PONG\r\n');
    else if (line.startsWith('-ERR')) this.onServerError(line.slice(4).trim().replace(/^'|'$/g, ''));
    // +OK, PONG and INFO (cluster changes, ignored: the destination names its servers) need nothing.
  }

  private onServerError(text: string): void {
    const err = serverError(text);
    const subject = /Publish to "([^"]*)"/i.exec(text)?.[1];
    if (err.code === 'PERMISSIONS_VIOLATION' && subject !== undefined) {
      // The server keeps the connection: only the publishes to that subject fail.
      for (const [id, p] of this.pending) {
        if (p.subject === subject) {
          this.pending.delete(id);
          p.reject(err);
        }
      }
      return;
    }
    // Anything else (authorization, payload too large, a refused subscription to the inbox): the
    // connection cannot go on.
    this.socket.destroy();
    this.closed(err);
  }

  private onReply(subject: string, headers: Buffer | null, payload: Buffer): void {
    if (!subject.startsWith(`${this.inbox}.`)) return;
    const id = Number(subject.slice(this.inbox.length + 1));
    const p = this.pending.get(id);
    if (!p) return;
    this.pending.delete(id);
    const err = replyOutcome(p.subject, headers, payload);
    if (err) p.reject(err);
    else p.resolve();
  }

  private closed(err: Error): void {
    if (this.closedWith) return;
    this.closedWith = err;
    for (const p of this.pending.values()) p.reject(err);
    this.pending.clear();
    for (const listener of this.closeListeners.splice(0)) listener(err);
  }
}

/** Resolves on `event`; rejects when the socket errs or closes first. */
function once(socket: net.Socket, event: 'connect' | 'secureConnect'): Promise<void> {
  return new Promise<void>((resolve, reject) => {
    const done = (err?: Error) => {
      socket.off(event, ok);
      socket.off('error', fail);
      socket.off('close', closed);
      if (err) reject(err);
      else resolve();
    };
    const ok = () => done();
    const fail = (err: Error) => done(err);
    const closed = () => done(new NatsError('CLOSED', 'connection closed during the handshake'));
    socket.once(event, ok);
    socket.once('error', fail);
    socket.once('close', closed);
  });
}

/** Reads control lines until `accept` returns a value (or throws); anything after stays unread. */
function readLines<T>(socket: net.Socket, accept: (line: string) => T | undefined): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    let buf: Buffer = Buffer.alloc(0);
    const done = (err: Error | null, value?: T, rest?: Buffer) => {
      socket.off('data', onData);
      socket.off('error', onError);
      socket.off('close', onClose);
      socket.pause();
      if (rest && rest.length > 0) socket.unshift(rest);
      if (err) reject(err);
      else resolve(value as T);
    };
    const onData = (chunk: Buffer) => {
      buf = Buffer.concat([buf, chunk]);
      for (;;) {
        const end = buf.indexOf(CRLF);
        if (end < 0) {
          if (buf.length > LINE_BYTES_MAX) done(new NatsError('PROTOCOL', 'a line from the server is too long'));
          return;
        }
        const line = buf.subarray(0, end).toString('latin1');
        buf = buf.subarray(end + 2);
        try {
          const value = accept(line);
          if (value !== undefined) return done(null, value, buf);
        } catch (err) {
          return done(err as Error);
        }
      }
    };
    const onError = (err: Error) => done(err);
    const onClose = () => done(new NatsError('CLOSED', 'connection closed during the handshake'));
    socket.on('data', onData);
    socket.once('error', onError);
    socket.once('close', onClose);
    socket.resume();
  });
}

/** The server's first line, which must be its INFO. */
function readInfo(socket: net.Socket): Promise<ServerInfo> {
  return readLines(socket, (line) => {
    if (!line.startsWith('INFO '))
      throw new NatsError('PROTOCOL', 'the server did not start with INFO: not a NATS server');
    try {
      const info = JSON.parse(line.slice(5)) as ServerInfo;
      if (info && typeof info === 'object') return info;
    } catch {
      // reported below
    }
    throw new NatsError('PROTOCOL', 'the server sent an INFO Belfry cannot read');
  });
}

/** Waits for the PONG that ends the handshake; a -ERR (bad credentials) fails it. */
function readPong(socket: net.Socket): Promise<true> {
  return readLines(socket, (line) => {
    if (line === 'PONG') return true;
    if (line.startsWith('-ERR')) throw serverError(line.slice(4).trim().replace(/^'|'$/g, ''));
    if (line === 'PING') socket.write('PONG\r\n');
    return undefined;
  });
}

/** Upgrades the connection to TLS, checking the certificate against the destination's host name. */
async function startTls(
  raw: net.Socket,
  server: NatsServerAddress,
  signal: AbortSignal,
  extra?: tls.ConnectionOptions,
): Promise<tls.TLSSocket> {
  const byName = net.isIP(server.hostname) === 0;
  const secure = tls.connect({
    socket: raw,
    // SNI carries a name, never an address; the certificate is checked against either.
    ...(byName ? { servername: server.hostname } : { host: server.hostname }),
    rejectUnauthorized: true,
    ...extra,
  });
  // The raw socket dies with the signal already; the TLS one over it goes with it.
  dieWith(secure, signal);
  secure.on('error', () => {});
  await once(secure, 'secureConnect');
  return secure;
}
