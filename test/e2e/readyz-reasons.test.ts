/**
 * The unauthenticated /readyz says what is not ready with stable codes and nothing else: a node
 * on a real PostgreSQL reached through a loopback TCP relay that this test cuts (the store then
 * refuses connections) answers 503 with `store_unreachable`, and the body names no host, port,
 * driver or error text; once the relay is back the node is ready again.
 */
import { after, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { connect, createServer, type Server, type Socket } from 'node:net';
import { dropTestSchema, TEST_PG_URL } from '../support/pg.ts';
import { startTestNode, waitUntil, type TestNode } from '../support/node.ts';

/** Every reason /readyz may give (docs/operations.md). */
const REASON_CODES = new Set([
  'starting',
  'shutting_down',
  'no_shards',
  'store_unreachable',
  'storage_full',
  'store_damaged',
  'readiness_check_failed',
]);

/** A TCP relay on a loopback port to PostgreSQL; cut() closes every connection and stops listening. */
class Relay {
  private server: Server | null = null;
  private readonly sockets = new Set<Socket>();
  port = 0;

  constructor(private readonly target: { host: string; port: number }) {}

  async listen(): Promise<void> {
    const server = createServer((client) => {
      const upstream = connect(this.target.port, this.target.host);
      for (const s of [client, upstream]) {
        this.sockets.add(s);
        s.on('close', () => this.sockets.delete(s));
        s.on('error', () => {});
      }
      client.pipe(upstream).pipe(client);
      client.on('close', () => upstream.destroy());
      upstream.on('close', () => client.destroy());
    });
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(this.port, '127.0.0.1', () => resolve());
    });
    this.port = (server.address() as { port: number }).port;
    this.server = server;
  }

  async cut(): Promise<void> {
    const server = this.server;
    this.server = null;
    const closed = new Promise<void>((resolve) => (server ? server.close(() => resolve()) : resolve()));
    for (const s of this.sockets) s.destroy();
    await closed;
  }
}

describe('/readyz reasons', () => {
  const schema = `belfry_readyz_${randomBytes(4).toString('hex')}`;
  const pgUrl = new URL(TEST_PG_URL);
  const relay = new Relay({ host: pgUrl.hostname, port: Number(pgUrl.port || 5432) });
  let t: TestNode | undefined;
  after(async () => {
    await t?.close().catch(() => {});
    await relay.cut();
    await dropTestSchema(schema);
  });

  it('a store that cannot be reached is `store_unreachable`, without the error text; ready again once it is back', async () => {
    await relay.listen();
    const viaRelay = new URL(TEST_PG_URL);
    viaRelay.host = `127.0.0.1:${relay.port}`;
    viaRelay.searchParams.set('schema', schema);
    t = await startTestNode({ store: viaRelay.toString() });
    await waitUntil('ready', async () => (await fetch(`${t!.url}/readyz`)).status === 200, 10_000);

    await relay.cut();
    let body = '';
    await waitUntil(
      'not ready: store_unreachable',
      async () => {
        const res = await fetch(`${t!.url}/readyz`);
        body = await res.text();
        return res.status === 503 && (JSON.parse(body) as { reasons: string[] }).reasons.includes('store_unreachable');
      },
      10_000,
    );
    const ready = JSON.parse(body) as { status: string; reasons: string[] };
    assert.equal(ready.status, 'not_ready');
    for (const reason of ready.reasons) assert.ok(REASON_CODES.has(reason), `${reason} is a stable reason code`);
    assert.doesNotMatch(
      body,
      /ECONNREFUSED|127\.0\.0\.1|PostgreSQL|postgres|connect|:\d{2,5}/i,
      `no error text in ${body}`,
    );

    await relay.listen();
    await waitUntil('ready again', async () => (await fetch(`${t!.url}/readyz`)).status === 200, 20_000);
    console.log(`/readyz while PostgreSQL was unreachable: ${body}`);
  });
});
