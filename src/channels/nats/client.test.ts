/**
 * Belfry's NATS client against a scripted server on loopback (a remote party's behaviour the
 * machine's nats-server will not show on demand): the handshake, a PING answered, a permissions
 * violation failing only the publishes to its subject, a message past max_payload refused before
 * it is sent, bad credentials, a reply split across reads, and close failing what waits.
 * The real server's behaviour is the conformance suite's (nats-channel.test.ts).
 */
import assert from 'node:assert/strict';
import net from 'node:net';
import { afterEach, describe, it } from 'node:test';
import { NatsError, NatsLink } from './client.ts';

interface Script {
  info?: Record<string, unknown>;
  /** Answers the client's CONNECT (the line given): '' for the usual PONG. */
  onConnect?(line: string): string;
  /** Answers an HPUB: the reply subject and the subject published to. */
  onPublish?(reply: string, subject: string, socket: net.Socket): void;
}

const servers: net.Server[] = [];
const links: NatsLink[] = [];

async function scripted(script: Script): Promise<{ port: number; received: string[] }> {
  const received: string[] = [];
  const server = net.createServer((s) => {
    s.on('error', () => {});
    s.write(
      `INFO ${JSON.stringify({ server_id: 'scripted', headers: true, max_payload: 1_048_576, ...script.info })}\r\n`,
    );
    let buf = '';
    s.on('data', (chunk) => {
      buf += chunk.toString('latin1');
      for (let end = buf.indexOf('\r\n'); end >= 0; end = buf.indexOf('\r\n')) {
        const line = buf.slice(0, end);
        const hpub = /^HPUB (\S+) (\S+) (\d+) (\d+)$/.exec(line);
        if (hpub) {
          const total = Number(hpub[4]);
          if (buf.length < end + 2 + total + 2) return;
          buf = buf.slice(end + 2 + total + 2);
          received.push(line);
          script.onPublish?.(hpub[2], hpub[1], s);
          continue;
        }
        buf = buf.slice(end + 2);
        received.push(line);
        if (line.startsWith('CONNECT ')) s.write(script.onConnect?.(line) || '');
        else if (line === 'PING') s.write('PONG\r\n');
      }
    });
  });
  servers.push(server);
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return { port: (server.address() as net.AddressInfo).port, received };
}

async function link(port: number, o: { user?: string; pass?: string } = {}): Promise<NatsLink> {
  const l = await NatsLink.connect({
    server: { address: '127.0.0.1', port, hostname: '127.0.0.1' },
    tls: false,
    name: 'belfry',
    signal: new AbortController().signal,
    ...o,
  });
  links.push(l);
  return l;
}

/** Resolves once `predicate` holds; rejects after `timeoutMs`. */
async function waitUntil(what: string, predicate: () => boolean, timeoutMs: number): Promise<void> {
  for (const deadline = Date.now() + timeoutMs; !predicate(); await new Promise((r) => setTimeout(r, 10))) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
  }
}

const ack = (reply: string) => `MSG ${reply} 1 31\r\n{"stream":"orders","seq":12345}\r\n`;

describe('NatsLink', () => {
  afterEach(async () => {
    for (const l of links.splice(0)) l.close();
    for (const s of servers.splice(0)) await new Promise<void>((r) => s.close(() => r()));
  });

  it('connects (CONNECT with headers and no_responders), publishes with the headers, and resolves on the PubAck', async () => {
    const server = await scripted({ onPublish: (reply, _subject, s) => s.write(ack(reply)) });
    const l = await link(server.port, { user: 'belfry', pass: 'pw' });
    await l.publish('orders.due', { 'belfry-event-id': 'e1' }, Buffer.from('{"a":1}'));
    const connect = JSON.parse(server.received.find((x) => x.startsWith('CONNECT '))!.slice(8));
    assert.deepEqual(
      [connect.headers, connect.no_responders, connect.user, connect.pass, connect.tls_required],
      [true, true, 'belfry', 'pw', false],
    );
    assert.ok(
      server.received.some((x) => /^SUB _INBOX\.[0-9a-f]+\.\* 1$/.test(x)),
      'one inbox subscription',
    );
  });

  it('answers a server PING, and reads a reply split across several reads', async () => {
    const server = await scripted({
      onPublish: (reply, _subject, s) => {
        s.write('PING\r\n');
        const whole = ack(reply);
        // One byte at a time: the parser must put the reply together.
        let i = 0;
        const drip = () => {
          if (i < whole.length) s.write(whole[i++], drip);
        };
        drip();
      },
    });
    const l = await link(server.port);
    await l.publish('orders.due', {}, Buffer.from('{}'));
    await waitUntil('the PING answered', () => server.received.includes('PONG'), 2_000);
  });

  it('fails only the publishes to the subject a permissions violation names; the others go on', async () => {
    const server = await scripted({
      onPublish: (reply, subject, s) => {
        if (subject === 'forbidden') s.write(`-ERR 'Permissions Violation for Publish to "forbidden"'\r\n`);
        else setTimeout(() => s.write(ack(reply)), 20);
      },
    });
    const l = await link(server.port);
    const [denied, allowed] = await Promise.allSettled([
      l.publish('forbidden', {}, Buffer.from('{}')),
      l.publish('allowed', {}, Buffer.from('{}')),
    ]);
    assert.equal(denied.status, 'rejected');
    assert.equal(((denied as PromiseRejectedResult).reason as NatsError).code, 'PERMISSIONS_VIOLATION');
    assert.equal(allowed.status, 'fulfilled');
  });

  it("refuses a message past the server's max_payload before sending it", async () => {
    const server = await scripted({ info: { max_payload: 100 } });
    const l = await link(server.port);
    await assert.rejects(
      l.publish('orders.due', {}, Buffer.alloc(200)),
      (err: NatsError) => err.code === 'MAX_PAYLOAD',
    );
    assert.ok(!server.received.some((x) => x.startsWith('HPUB')));
  });

  it('answers 503 no responders as a refusal for good, and a JetStream error in the ack as a JetStream error', async () => {
    const server = await scripted({
      onPublish: (reply, subject, s) => {
        if (subject === 'nostream') s.write(`HMSG ${reply} 1 16 16\r\nNATS/1.0 503\r\n\r\n\r\n`);
        else
          s.write(`MSG ${reply} 1 72\r\n{"error":{"code":503,"err_code":10039,"description":"jetstream not ok"}}\r\n`);
      },
    });
    const l = await link(server.port);
    await assert.rejects(
      l.publish('nostream', {}, Buffer.from('{}')),
      (err: NatsError) => err.code === 'NO_RESPONDERS',
    );
    await assert.rejects(
      l.publish('other', {}, Buffer.from('{}')),
      (err: NatsError) => err.code === 'JETSTREAM' && /jetstream not ok/.test(err.message),
    );
  });

  it('fails the handshake on bad credentials with an authorisation violation', async () => {
    const server = await scripted({ onConnect: () => "-ERR 'Authorization Violation'\r\n" });
    await assert.rejects(
      link(server.port, { user: 'u', pass: 'wrong' }),
      (err: NatsError) => err.code === 'AUTHORIZATION_VIOLATION',
    );
  });

  it('fails every publish still waiting when it closes, and tells its listeners', async () => {
    const server = await scripted({});
    const l = await link(server.port);
    let closed: Error | null = null;
    l.onClose((err) => (closed = err));
    const waiting = l.publish('orders.due', {}, Buffer.from('{}'));
    await new Promise((r) => setTimeout(r, 20));
    l.close();
    await assert.rejects(waiting, (err: NatsError) => err.code === 'CLOSED');
    assert.ok(closed);
    await assert.rejects(l.publish('orders.due', {}, Buffer.from('{}')), (err: NatsError) => err.code === 'CLOSED');
  });

  it('gives the handshake up when its signal aborts, whatever the server does', async () => {
    // A server that never answers the CONNECT's PING (no PONG): only the signal ends it.
    const silent = net.createServer((s) => {
      s.on('error', () => {});
      // Reads and drops what comes, so it sees the client go (and server.close() can finish).
      s.resume();
      s.write('INFO {"headers":true}\r\n');
    });
    servers.push(silent);
    await new Promise<void>((r) => silent.listen(0, '127.0.0.1', r));
    const abort = new AbortController();
    const connecting = NatsLink.connect({
      server: { address: '127.0.0.1', port: (silent.address() as net.AddressInfo).port, hostname: '127.0.0.1' },
      tls: false,
      name: 'belfry',
      signal: abort.signal,
    });
    setTimeout(() => abort.abort(new Error('gave up')), 50);
    await assert.rejects(connecting, /gave up/);
  });
});
