/**
 * The private-address guard on real sockets: a loopback receiver stands in for an internal
 * service, and every way of naming it must be refused unless --allow-hosts opens it.
 */
import assert from 'node:assert/strict';
import type { LookupAddress } from 'node:dns';
import { after, before, describe, it } from 'node:test';
import { startReceiver, type Receiver } from '../../../test/support/receiver.ts';
import { AddressPolicy } from '../../core/address.ts';
import type { HttpDueEvent } from '../channel.ts';
import type { Resolver } from './guarded-connect.ts';
import { HttpChannel } from './http-channel.ts';

function dueEvent(target: string): HttpDueEvent {
  return {
    tenantId: 't',
    id: 'evt-ssrf',
    attempt: 1,
    payload: '{}',
    headers: {},
    kind: 'http',
    target,
    secrets: [{ secret: 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw', expiresAt: null }],
    timeoutMs: 3_000,
    dueAt: 0,
  };
}

const signal = () => new AbortController().signal;

/** A resolver that answers every name with `addresses`, as a hostile DNS server would. */
function fakeDns(...addresses: string[]): Resolver & { calls: string[] } {
  const calls: string[] = [];
  const resolve = ((hostname, _options, callback) => {
    calls.push(hostname);
    const list: LookupAddress[] = addresses.map((address) => ({ address, family: address.includes(':') ? 6 : 4 }));
    queueMicrotask(() => callback(null, list));
  }) as Resolver & { calls: string[] };
  resolve.calls = calls;
  return resolve;
}

describe('HttpChannel private-address guard', () => {
  let receiver: Receiver;

  before(async () => {
    receiver = await startReceiver();
  });
  after(() => receiver.close());

  it('refuses loopback in every encoding by default, before a request is sent', async () => {
    const channel = new HttpChannel();
    const port = receiver.port;
    const targets = [
      `http://127.0.0.1:${port}/x`,
      `http://2130706433:${port}/x`,
      `http://0x7f.1:${port}/x`,
      `http://0177.0.0.1:${port}/x`,
      `http://127.1:${port}/x`,
      `http://[::ffff:127.0.0.1]:${port}/x`,
      `http://[::ffff:7f00:1]:${port}/x`,
      `http://[::1]:${port}/x`,
      `http://localhost:${port}/x`,
    ];
    try {
      for (const target of targets) {
        const outcome = await channel.deliver(dueEvent(target), signal());
        assert.equal(outcome.kind, 'discard', target);
        assert.match(
          outcome.kind === 'discard' ? outcome.reason : '',
          /^address denied: .*loopback address.*--allow-hosts/,
          target,
        );
      }
      assert.equal(receiver.count, 0);
      assert.equal(receiver.socketCount, 0, 'no connection was even opened');
    } finally {
      await channel.close();
    }
  });

  it('judges the address a name resolves to, so DNS rebinding cannot reach an internal address', async () => {
    for (const answer of ['127.0.0.1', '::ffff:127.0.0.1']) {
      const dns = fakeDns(answer);
      const channel = new HttpChannel({ resolve: dns });
      try {
        const outcome = await channel.deliver(dueEvent(`http://hooks.rebind.example:${receiver.port}/x`), signal());
        assert.equal(outcome.kind, 'discard');
        assert.match(
          outcome.kind === 'discard' ? outcome.reason : '',
          /host hooks\.rebind\.example resolves to a loopback address/,
        );
        assert.deepEqual(dns.calls, ['hooks.rebind.example']);
      } finally {
        await channel.close();
      }
    }
    assert.equal(receiver.count, 0);
  });

  it('connects only to the allowed addresses of a name that resolves to both kinds', async () => {
    const dns = fakeDns('10.0.0.1', '127.0.0.1');
    const channel = new HttpChannel({ resolve: dns, allowHosts: ['127.0.0.1'] });
    try {
      const outcome = await channel.deliver(dueEvent(`http://mixed.example:${receiver.port}/mixed`), signal());
      assert.equal(outcome.kind, 'delivered');
      assert.equal(receiver.requests.at(-1)!.path, '/mixed');
    } finally {
      await channel.close();
    }
  });

  it('delivers when --allow-hosts opens the address or the name', async () => {
    const byAddress = new HttpChannel({ allowHosts: ['127.0.0.0/8'] });
    const byName = new HttpChannel({ allowHosts: ['*.internal.example'], resolve: fakeDns('127.0.0.1') });
    try {
      const before = receiver.count;
      assert.equal(
        (await byAddress.deliver(dueEvent(`http://127.0.0.1:${receiver.port}/a`), signal())).kind,
        'delivered',
      );
      assert.equal(
        (await byAddress.deliver(dueEvent(`http://2130706433:${receiver.port}/b`), signal())).kind,
        'delivered',
      );
      assert.equal(
        (await byName.deliver(dueEvent(`http://hooks.internal.example:${receiver.port}/c`), signal())).kind,
        'delivered',
      );
      assert.equal(receiver.count, before + 3);
    } finally {
      await byAddress.close();
      await byName.close();
    }
  });

  it('checks the connected peer again: a socket that ends up at a denied address is dropped unused', async () => {
    /** Allows the first look at each address (the pre-connect check), denies the second (after connecting). */
    class FlipPolicy extends AddressPolicy {
      private seen = 0;
      override checkAddress(address: string, host: string): string | null {
        this.seen++;
        return this.seen === 1 ? null : `${address} flipped (${host})`;
      }
    }
    const channel = new HttpChannel({ policy: new FlipPolicy() });
    try {
      const before = receiver.count;
      const outcome = await channel.deliver(dueEvent(`http://127.0.0.1:${receiver.port}/flip`), signal());
      assert.equal(outcome.kind, 'discard');
      assert.match(outcome.kind === 'discard' ? outcome.reason : '', /flipped/);
      assert.equal(receiver.count, before, 'no request went over the refused socket');
    } finally {
      await channel.close();
    }
  });
});
