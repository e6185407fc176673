/**
 * Nothing secret in the logs: a real node process at log level `trace` goes through a full run
 * (tenants with their signing secrets, keys made, rotated and revoked, destinations with generated
 * and given secrets, secret rotations of destinations and tenants, signed deliveries to
 * destinations and inline URLs that succeed, fail and are retried, requests with wrong
 * keys and bad bodies carrying secrets, a graceful stop), and every line it wrote is searched
 * for every secret it ever saw: the admin key, each API key (valid or forged), each signing
 * secret, in full and by its key material, and each broker credential (passwords in broker URLs,
 * a SASL password, a NATS token) of destinations whose deliveries were refused or unreachable.
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { waitUntil } from '../support/node.ts';
import { startNodeProcess, stopNodeProcess, type NodeProcess } from '../support/process.ts';
import { startReceiver, type Receiver } from '../support/receiver.ts';
import { closedPort } from '../../src/channels/conformance/suite.ts';

describe('logs of a full run hold no secret', { timeout: 120_000 }, () => {
  const adminKey = `admin-${randomBytes(16).toString('hex')}`;
  const secrets = new Set<string>([adminKey]);
  let dataDir = '';
  let node: NodeProcess;
  let rx: Receiver;
  let failOnce = new Set<string>();

  before(async () => {
    dataDir = await mkdtemp(join(tmpdir(), 'belfry-logs-'));
    rx = await startReceiver({
      behavior: (req) => {
        const id = String(req.headers['webhook-id']);
        if (failOnce.delete(id))
          return { status: 500, body: `echo ${req.headers['webhook-signature']} ${req.headers.authorization ?? ''}` };
        if (req.path === '/gone') return { status: 410, body: 'gone' };
        return { status: 200 };
      },
    });
    // The admin key comes from the environment: never on a command line, where `ps` shows it.
    node = await startNodeProcess(['--data', dataDir, '--allow-hosts', '127.0.0.1', '--log-level', 'trace'], {
      BELFRY_ADMIN_KEY: adminKey,
    });
  });
  after(async () => {
    await rx.close();
    await rm(dataDir, { recursive: true, force: true });
  });

  async function api(
    method: string,
    path: string,
    key: string,
    body?: unknown,
  ): Promise<{ status: number; body: any }> {
    const res = await fetch(node.url + path, {
      method,
      headers: {
        authorization: `Bearer ${key}`,
        ...(body !== undefined ? { 'content-type': 'application/json' } : {}),
      },
      body: body === undefined ? undefined : typeof body === 'string' ? body : JSON.stringify(body),
    });
    const text = await res.text();
    return { status: res.status, body: text ? JSON.parse(text) : null };
  }

  it('runs the full scenario, then finds none of its secrets in any line the node wrote', async () => {
    const tenant = await api('POST', '/v1/tenants', adminKey, { name: 'logs' });
    assert.equal(tenant.status, 201);
    const t = tenant.body.id as string;
    secrets.add(tenant.body.signingSecret);
    const k1 = await api('POST', `/v1/tenants/${t}/keys`, adminKey);
    const key: string = k1.body.key;
    secrets.add(key);
    const k2 = await api('POST', '/v1/keys', key);
    secrets.add(k2.body.key);

    const generated = await api('PUT', '/v1/destinations/main', key, { url: `${rx.url}/hook` });
    assert.equal(generated.status, 201);
    secrets.add(generated.body.secret);
    const given = 'whsec_' + randomBytes(32).toString('base64');
    secrets.add(given);
    assert.equal(
      (await api('PUT', '/v1/destinations/given', key, { url: `${rx.url}/gone`, secret: given })).status,
      201,
    );
    const rotated = await api('POST', '/v1/destinations/main/rotate-secret', key, { gracePeriod: '1h' });
    assert.equal(rotated.status, 200);
    secrets.add(rotated.body.secret);
    const ownRotation = await api('POST', '/v1/signing-secret/rotate', key, { gracePeriod: '1h' });
    assert.equal(ownRotation.status, 200);
    secrets.add(ownRotation.body.secret);
    const adminRotation = await api('POST', `/v1/tenants/${t}/signing-secret/rotate`, adminKey, { gracePeriod: '1h' });
    assert.equal(adminRotation.status, 200);
    secrets.add(adminRotation.body.secret);

    // Bad requests that carry secrets: a forged key, a valid secret next to an invalid field, broken JSON.
    const forged = 'bk_' + randomBytes(32).toString('base64url');
    secrets.add(forged);
    assert.equal((await api('GET', '/v1/events', forged)).status, 401);
    const another = 'whsec_' + randomBytes(32).toString('base64');
    secrets.add(another);
    assert.equal((await api('PUT', '/v1/destinations/bad', key, { url: 'ftp://x', secret: another })).status, 400);
    assert.equal(
      (await api('PUT', '/v1/destinations/bad', key, `{"url":"${rx.url}","secret":"${another}",`)).status,
      400,
    );
    assert.equal(
      (await api('POST', '/v1/destinations/main/rotate-secret', key, { secret: `${another}!` })).status,
      400,
    );
    assert.equal(
      (await api('POST', '/v1/signing-secret/rotate', key, { secret: another, gracePeriod: '9d' })).status,
      400,
    );

    // Deliveries: signed successes, a failure (the receiver echoes the signature) then a retry, a discard.
    // Inline URLs sign with the tenant's secrets (three of them here, through two rotations).
    failOnce = new Set(['log-2', 'log-5']);
    const inline = { url: `${rx.url}/hook` };
    for (const [id, destination] of [
      ['log-1', 'main'],
      ['log-2', 'main'],
      ['log-3', 'given'],
      ['log-4', inline],
      ['log-5', inline],
    ] as const) {
      assert.equal(
        (
          await api('POST', '/v1/events', key, {
            id,
            destination,
            payload: { id },
            retry: { maxAttempts: 3, minBackoff: '100ms', maxBackoff: '200ms' },
          })
        ).status,
        201,
      );
    }
    await waitUntil(
      'deliveries to finish',
      async () => {
        const states = await Promise.all(
          ['log-1', 'log-2', 'log-3', 'log-4', 'log-5'].map(
            async (id) => (await api('GET', `/v1/events/${id}`, key)).body.state,
          ),
        );
        return states.join() === 'succeeded,succeeded,discarded,succeeded,succeeded';
      },
      20_000,
      50,
    );

    // Broker destinations with credentials (passwords in URLs, a SASL password, a NATS token):
    // registered, shown, refused by the broker or unreachable, and a bad request that carries one.
    const pw = () => `pw${randomBytes(12).toString('hex')}`;
    const [redisPw, amqpPw, natsPw, natsToken, saslPw, badPw] = [pw(), pw(), pw(), pw(), pw(), pw()];
    for (const p of [redisPw, amqpPw, natsPw, natsToken, saslPw, badPw]) secrets.add(p);
    const closed = await closedPort();
    // Without TLS on these servers, credentials go in clear only because each says so.
    const insecure = { allowInsecureCredentials: true };
    const brokers: [string, Record<string, unknown>][] = [
      [
        'b-redis',
        {
          kind: 'redis',
          url: `redis://belfry:${redisPw}@127.0.0.1:6379`,
          stream: `belfry-logs-${process.pid}`,
          ...insecure,
        },
      ],
      [
        'b-amqp',
        {
          kind: 'amqp',
          url: `amqp://guest:${amqpPw}@127.0.0.1:5672`,
          exchange: 'belfry-logs',
          routingKey: 'x',
          ...insecure,
        },
      ],
      [
        'b-nats',
        {
          kind: 'nats',
          servers: [`nats://belfry:${natsPw}@127.0.0.1:${closed}`],
          subject: 'belfry.logs',
          token: natsToken,
          ...insecure,
        },
      ],
      [
        'b-kafka',
        {
          kind: 'kafka',
          brokers: [`127.0.0.1:${closed}`],
          topic: 'belfry-logs',
          sasl: { mechanism: 'plain', username: 'belfry', password: saslPw },
          ...insecure,
        },
      ],
    ];
    for (const [name, body] of brokers) {
      assert.equal((await api('PUT', `/v1/destinations/${name}`, key, { ...body, timeout: '1s' })).status, 201);
      assert.equal((await api('GET', `/v1/destinations/${name}`, key)).status, 200);
      assert.equal(
        (
          await api('POST', '/v1/events', key, {
            id: `log-${name}`,
            destination: name,
            payload: {},
            retry: { maxAttempts: 2, minBackoff: '100ms', maxBackoff: '200ms' },
          })
        ).status,
        201,
      );
    }
    assert.equal(
      (
        await api('PUT', '/v1/destinations/bad-broker', key, {
          kind: 'amqp',
          url: `amqp://guest:${badPw}@127.0.0.1:5672`,
          exchange: 'x',
          bogus: true,
        })
      ).status,
      400,
    );
    // Refused for sending a credential without TLS: the refusal does not carry it either.
    assert.equal(
      (
        await api('PUT', '/v1/destinations/bad-broker', key, {
          kind: 'redis',
          url: `redis://belfry:${badPw}@127.0.0.1:6379`,
          stream: 's',
        })
      ).status,
      400,
    );
    await waitUntil(
      'broker deliveries to end',
      async () => {
        const states = await Promise.all(
          brokers.map(async ([name]) => (await api('GET', `/v1/events/log-${name}`, key)).body.state),
        );
        return states.every((s) => s !== 'scheduled' && s !== 'executing' && s !== 'awaiting_retry');
      },
      20_000,
      50,
    );
    for (const [name] of brokers) {
      const trace = await api('GET', `/v1/events/log-${name}/transitions`, key);
      for (const p of [redisPw, amqpPw, natsPw, natsToken, saslPw])
        assert.doesNotMatch(JSON.stringify(trace.body), new RegExp(p), `${name}: a credential in the trace`);
    }

    // Keys: rotate one with a grace period, revoke the other, and use both.
    const rot = await api('POST', `/v1/tenants/${t}/keys/${k1.body.id}/rotate`, adminKey, { gracePeriod: '1m' });
    secrets.add(rot.body.key);
    assert.equal((await api('DELETE', `/v1/keys/${k2.body.id}`, rot.body.key)).status, 204);
    assert.equal((await api('GET', '/v1/events', k2.body.key)).status, 401);
    assert.equal((await api('GET', '/v1/events', key)).status, 200);

    const exit = await stopNodeProcess(node);
    assert.equal(exit.code, 0);

    const output = node.output.join('');
    const leaks: string[] = [];
    for (const secret of secrets) {
      const material = secret.startsWith('whsec_') ? secret.slice('whsec_'.length) : secret;
      for (const needle of new Set([secret, material, material.slice(0, 24)])) {
        if (output.includes(needle)) leaks.push(`${secret.slice(0, 10)}… found in the logs`);
      }
    }
    assert.match(output, /"msg":"listening"/);
    assert.doesNotMatch(output, /authorization/i, 'no request header dump');
    assert.deepEqual(leaks, []);
  });
});
