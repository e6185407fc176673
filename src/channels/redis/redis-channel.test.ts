/** The Redis Streams channel against the machine's Redis (:6379), through the Channel conformance suite. */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { Redis } from 'ioredis';
import { AddressPolicy } from '../../core/address.ts';
import type { RedisTarget } from '../../core/destination.ts';
import type { DueEventOf } from '../channel.ts';
import { channelConformance, dueEvent, type Sink } from '../conformance/suite.ts';
import { RedisChannel } from './index.ts';

const REDIS_URL = process.env.BELFRY_TEST_REDIS_URL ?? 'redis://127.0.0.1:6379';
let n = 0;

function fields(url: string, stream: string): Sink['fields'] {
  return { kind: 'redis', target: { kind: 'redis', url, stream, maxLen: null }, poolKey: `redis-test-${++n}` };
}

/** A stream entry as the consumer sees it: `payload` and one field per header. */
function toMessage(entry: [string, Buffer[]]): { body: Buffer; headers: Record<string, string> } {
  const [, flat] = entry;
  const headers: Record<string, string> = {};
  let body: Buffer = Buffer.alloc(0);
  for (let i = 0; i < flat.length; i += 2) {
    const k = flat[i].toString();
    if (k === 'payload') body = flat[i + 1];
    else headers[k] = flat[i + 1].toString();
  }
  return { body, headers };
}

channelConformance('redis', async () => {
  const admin = new Redis(REDIS_URL);
  const keys: string[] = [];
  const channel = new RedisChannel({ policy: new AddressPolicy(['127.0.0.1']) });
  return {
    channel,
    belfryHeaders: true,
    idOf: (m) => m.headers['belfry-event-id'],
    async sink() {
      const stream = `belfry-test:${process.pid}:${++n}`;
      keys.push(stream);
      return {
        fields: fields(REDIS_URL, stream),
        async read(count, timeoutMs) {
          const deadline = Date.now() + timeoutMs;
          for (;;) {
            const entries = (await admin.xrangeBuffer(stream, '-', '+')) as unknown as [string, Buffer[]][];
            if (entries.length >= count || Date.now() > deadline) return entries.map(toMessage);
            await new Promise((r) => setTimeout(r, 20));
          }
        },
        cleanup: async () => void (await admin.del(stream)),
      };
    },
    async refusing() {
      // A key that holds a string: XADD answers WRONGTYPE.
      const key = `belfry-test:${process.pid}:string:${++n}`;
      keys.push(key);
      await admin.set(key, 'not a stream');
      return fields(REDIS_URL, key);
    },
    at: (port) => fields(`redis://127.0.0.1:${port}`, 'belfry-test:nowhere'),
    async close() {
      await channel.close();
      if (keys.length > 0) await admin.del(...keys);
      admin.disconnect();
    },
  };
});

describe('RedisChannel with a least-privilege user', () => {
  it('delivers as a user allowed only XADD on its stream (ioredis 6 opens with HELLO 3, which any user may send)', async () => {
    const admin = new Redis(REDIS_URL);
    const user = `belfry-test-xadd-${process.pid}-${++n}`;
    const stream = `belfry-test:${process.pid}:acl:${n}`;
    const password = `pw-${process.pid}-${n}`;
    const channel = new RedisChannel({ policy: new AddressPolicy(['127.0.0.1']) });
    try {
      await admin.call('ACL', 'SETUSER', user, 'reset', 'on', `>${password}`, `~${stream}`, '+xadd');
      const url = new URL(REDIS_URL);
      url.username = user;
      url.password = password;
      // The machine's Redis listens without TLS: the login goes in clear, said explicitly.
      const target = { kind: 'redis', url: url.toString(), stream, maxLen: null, allowInsecureCredentials: true };
      const event = dueEvent({
        kind: 'redis',
        target: target as RedisTarget,
        poolKey: `redis-acl-${n}`,
      }) as DueEventOf<'redis'>;
      const outcome = await channel.deliver(event, new AbortController().signal);
      assert.equal(outcome.kind, 'delivered', JSON.stringify(outcome));
      assert.equal(await admin.xlen(stream), 1);
    } finally {
      await channel.close();
      await admin.call('ACL', 'DELUSER', user);
      await admin.del(stream);
      admin.disconnect();
    }
  });
});
