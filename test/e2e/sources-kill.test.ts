/**
 * A Kafka source across SIGKILL, with a real node process and a real Kafka-protocol cluster
 * (librdkafka's mock): messages stream into the topic while the node reads them; the node is
 * killed mid-stream and restarted on the same data dir. Every message's event exists exactly once
 * (its id is derived from partition and offset, so a message read again after the kill creates
 * nothing), none is lost, and each is delivered (at least once). Prints the counts.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { Kafka, logLevel, type Producer } from 'kafkajs';
import { callApi as api } from '../support/http.ts';
import { startMockKafka, type MockKafka } from '../support/kafka/mock-cluster.ts';
import { killNodeProcess, startNodeProcess, stopNodeProcess, type NodeProcess } from '../support/process.ts';
import { startReceiver, type Receiver } from '../support/receiver.ts';

const ADMIN_KEY = 'e2e-admin-key-0123456789abcdef';
const MESSAGES = 2_000;
const PER_SEND = 20;

describe('a Kafka source across SIGKILL and restart', () => {
  const dataDir = mkdtempSync(join(tmpdir(), 'belfry-e2e-src-'));
  let mock: MockKafka | undefined;
  let producer: Producer | undefined;
  let rx: Receiver | undefined;
  let node: NodeProcess | undefined;
  after(async () => {
    if (node) await stopNodeProcess(node);
    await producer?.disconnect();
    await mock?.stop();
    await rx?.close();
    rmSync(dataDir, { recursive: true, force: true });
  });

  it('creates every message’s event once, loses none, and delivers each', async () => {
    mock = await startMockKafka(1);
    const topic = `kill-requests-${process.pid}`;
    await mock.createTopic(topic, 2);
    producer = new Kafka({
      clientId: 'belfry-test',
      brokers: mock.bootstrap.split(','),
      logLevel: logLevel.NOTHING,
    }).producer({ idempotent: false });
    await producer.connect();
    rx = await startReceiver({ behavior: () => ({ status: 200 }) });
    const args = ['--data', dataDir, '--admin-key', ADMIN_KEY, '--allow-hosts', '127.0.0.1'];
    node = await startNodeProcess(args);
    const tenant = await api(node.url, ADMIN_KEY, 'POST', '/v1/tenants', { name: 'e2e' });
    const key = (await api(node.url, ADMIN_KEY, 'POST', `/v1/tenants/${tenant.body.id}/keys`, {})).body.key as string;
    assert.equal((await api(node.url, key, 'PUT', '/v1/destinations/rx', { url: rx.url })).status, 201);
    const put = await api(node.url, key, 'PUT', '/v1/sources/stream', {
      kind: 'kafka',
      brokers: mock.bootstrap.split(','),
      topic,
      groupId: `kill-${process.pid}`,
    });
    assert.equal(put.status, 201, JSON.stringify(put.body));

    // The stream: MESSAGES messages, PER_SEND per produce, paced so the kill lands mid-stream.
    const streaming = (async () => {
      for (let i = 0; i < MESSAGES; i += PER_SEND) {
        const messages = Array.from({ length: PER_SEND }, (_, k) => ({
          value: JSON.stringify({ destination: 'rx', payload: { n: i + k } }),
        }));
        await producer!.send({ topic, acks: -1, messages });
        await new Promise((r) => setTimeout(r, 40));
      }
    })();
    await rx.waitFor((reqs) => reqs.length >= 300, 60_000);
    await killNodeProcess(node);
    const atKill = rx.requests.length;
    node = await startNodeProcess(args);
    await streaming;

    const unique = () => new Set(rx!.requests.map((r) => (r.json as { n: number }).n));
    await rx.waitFor(() => unique().size >= MESSAGES, 90_000);
    const ns = unique();
    assert.equal(ns.size, MESSAGES, 'every message delivered');
    assert.ok([...ns].every((n) => Number.isInteger(n) && n >= 0 && n < MESSAGES));

    // The store: exactly one event per message.
    const ids: string[] = [];
    let cursor: string | null = null;
    do {
      const page: { body: { events: { id: string }[]; nextCursor: string | null } } = await api(
        node.url,
        key,
        'GET',
        `/v1/events?limit=1000${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`,
      );
      ids.push(...page.body.events.map((e) => e.id));
      cursor = page.body.nextCursor;
    } while (cursor);
    assert.equal(ids.length, MESSAGES, 'one event per message: nothing created twice, nothing lost');
    assert.equal(new Set(ids).size, MESSAGES);
    assert.ok(ids.every((id) => /^stream:[01]:\d+:0$/.test(id)));
    const deliveries = rx.requests.length;
    console.log(
      `source across SIGKILL: ${MESSAGES} messages, ${ids.length} events, ${deliveries} deliveries (${deliveries - MESSAGES} repeated), ${atKill} delivered before the kill`,
    );
  });
});
