import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { AddressPolicy, allowEntryError, deniedAs, formatIp, parseIp } from './address.ts';

const guard = new AddressPolicy();

describe('parseIp', () => {
  const cases: [string, string | null][] = [
    ['127.0.0.1', '127.0.0.1'],
    ['2130706433', '127.0.0.1'],
    ['0x7f000001', '127.0.0.1'],
    ['0x7f.1', '127.0.0.1'],
    ['0177.0.0.1', '127.0.0.1'],
    ['127.1', '127.0.0.1'],
    ['169.254.43518', '169.254.169.254'],
    ['0', '0.0.0.0'],
    ['127.0.0.1.', '127.0.0.1'],
    ['4294967295', '255.255.255.255'],
    ['4294967296', null],
    ['256.0.0.1', null],
    ['1.2.3.4.5', null],
    ['08.0.0.1', null],
    ['example.com', null],
    ['', null],
    ['::1', '0:0:0:0:0:0:0:1'],
    ['[::1]', '0:0:0:0:0:0:0:1'],
    ['::ffff:127.0.0.1', '0:0:0:0:0:ffff:7f00:1'],
    ['::ffff:7f00:1', '0:0:0:0:0:ffff:7f00:1'],
    ['fe80::1%eth0', 'fe80:0:0:0:0:0:0:1'],
    ['1:2:3:4:5:6:7:8', '1:2:3:4:5:6:7:8'],
    ['1:2:3:4:5:6:7:8:9', null],
    ['1::2::3', null],
    [':::', null],
    ['::ffff:1.2.3', null],
    ['12345::', null],
  ];
  for (const [text, want] of cases) {
    test(`${JSON.stringify(text)} → ${want}`, () => {
      const ip = parseIp(text);
      assert.equal(ip === null ? null : formatIp(ip), want);
    });
  }
});

describe('the deny-list', () => {
  const deniedHosts = [
    '127.0.0.1',
    '127.255.255.254',
    '2130706433',
    '0x7f.0.0.1',
    '017700000001',
    '0.0.0.0',
    '10.1.2.3',
    '172.16.0.1',
    '172.31.255.255',
    '192.168.1.1',
    '169.254.169.254',
    '100.64.0.1',
    '100.100.100.200',
    '192.0.0.192',
    '198.18.0.1',
    '224.0.0.1',
    '255.255.255.255',
    '240.0.0.1',
    '::',
    '::1',
    '[::1]',
    '::ffff:127.0.0.1',
    '::ffff:7f00:1',
    '::ffff:169.254.169.254',
    '::127.0.0.1',
    '64:ff9b::10.0.0.1',
    '64:ff9b:1::1',
    '2002:7f00:1::',
    '2002:a9fe:a9fe::1',
    'fc00::1',
    'fd00:ec2::254',
    'fe80::1',
    'fe80::1%25eth0',
    'fec0::1',
    'ff02::1',
    '2001:db8::1',
    '2001:0:4136:e378::1',
    'localhost',
    'LOCALHOST.',
    'api.localhost',
    'metadata.google.internal',
    'metadata.goog',
    'instance-data',
  ];
  for (const host of deniedHosts) {
    test(`refuses ${host}`, () => {
      const why = guard.checkHost(host);
      assert.ok(why, `${host} should be denied`);
      assert.match(why, /--allow-hosts/);
    });
  }

  const publicHosts = [
    '93.184.216.34',
    '8.8.8.8',
    '172.32.0.1',
    '100.128.0.1',
    '2606:4700::1111',
    '::ffff:8.8.8.8',
    '64:ff9b::8.8.8.8',
    '2002:808:808::',
    'example.com',
    'hooks.example.org',
  ];
  for (const host of publicHosts) {
    test(`accepts ${host}`, () => assert.equal(guard.checkHost(host), null));
  }

  test('names the kind of address and the embedded IPv4', () => {
    assert.equal(deniedAs(parseIp('169.254.169.254')!), 'a link-local address (cloud metadata lives here)');
    assert.match(deniedAs(parseIp('::ffff:10.0.0.1')!)!, /private address \(IPv4-mapped 10\.0\.0\.1\)/);
  });

  test('judges the connected address, naming the host it came from and never the address a name resolved to', () => {
    const why = guard.checkAddress('10.0.0.7', 'rebind.example.com');
    assert.match(why!, /^host rebind\.example\.com resolves to a private address;/);
    assert.doesNotMatch(why!, /10\.0\.0\.7/);
    const mapped = guard.checkAddress('::ffff:10.0.0.9', 'mapped.example.com');
    assert.match(mapped!, /^host mapped\.example\.com resolves to a private address;/);
    assert.doesNotMatch(mapped!, /10\.0\.0\.9/);
    assert.match(
      guard.checkAddress('10.0.0.7', '10.0.0.7')!,
      /^10\.0\.0\.7 is a private address/,
      'an address the user gave is named',
    );
    assert.equal(guard.checkAddress('93.184.216.34', 'example.com'), null);
    assert.match(guard.checkAddress('not-an-ip', 'example.com')!, /not an IP address/);
  });
});

describe('the allow-list', () => {
  const open = new AddressPolicy(['127.0.0.1', '::1', '10.1.0.0/16', 'hooks.internal', '*.corp.example', 'fd00::/8']);

  test('opens listed addresses, also in other encodings and mapped into IPv6', () => {
    for (const host of ['127.0.0.1', '2130706433', '::ffff:127.0.0.1', '::1', '[::1]', '10.1.200.3', 'fd12::1'])
      assert.equal(open.checkHost(host), null, host);
    assert.equal(open.checkAddress('::ffff:127.0.0.1', 'x.example.com'), null);
  });

  test('keeps everything else denied', () => {
    for (const host of ['127.0.0.2', '10.2.0.1', '169.254.169.254', 'fe80::1', 'localhost'])
      assert.ok(open.checkHost(host), host);
    assert.ok(open.checkAddress('127.0.0.2', 'x.example.com'));
  });

  test('opens names exactly or by suffix, whatever they resolve to', () => {
    assert.equal(open.checkHost('hooks.internal'), null);
    assert.equal(open.checkAddress('10.9.9.9', 'HOOKS.internal.'), null);
    assert.equal(open.checkAddress('192.168.0.1', 'a.b.corp.example'), null);
    assert.ok(open.checkAddress('192.168.0.1', 'corp.example.evil.com'));
    assert.ok(open.checkAddress('192.168.0.1', 'other.internal'));
  });

  test('refuses invalid entries', () => {
    assert.equal(allowEntryError('10.0.0.0/8'), null);
    assert.equal(allowEntryError('*.internal'), null);
    assert.match(allowEntryError('10.0.0.0/33')!, /CIDR/);
    assert.match(allowEntryError('bad host!')!, /host name/);
    assert.match(allowEntryError('')!, /empty/);
    assert.throws(() => new AddressPolicy(['ok.example', 'nope/']), /allow-hosts entry "nope\/"/);
  });
});
