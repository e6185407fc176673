/**
 * The private-address guard of outgoing webhooks (SSRF): which hosts and IP addresses a webhook
 * may reach. Pure: the HTTP channel applies it to every address it connects to, the API to
 * every URL it accepts.
 *
 * Denied by default (IPv4, and IPv6 including the forms that embed an IPv4 address):
 *   this-network 0/8, private 10/8 172.16/12 192.168/16, shared (CGNAT) 100.64/10, loopback
 *   127/8, link-local and cloud metadata 169.254/16, IETF 192.0.0/24, documentation and
 *   benchmarking ranges, multicast 224/4, reserved 240/4 and broadcast;
 *   ::, ::1, unique-local fc00::/7 (AWS metadata fd00:ec2::254), link-local fe80::/10,
 *   site-local fec0::/10, multicast ff00::/8, discard 100::/64, documentation 2001:db8::/32,
 *   Teredo 2001::/32, local NAT64 64:ff9b:1::/48; and IPv4-mapped ::ffff:a.b.c.d, IPv4-
 *   compatible ::a.b.c.d, NAT64 64:ff9b::a.b.c.d and 6to4 2002:aabb:ccdd:: judged by the
 *   IPv4 address they carry.
 * Names denied at registration: localhost and *.localhost (always loopback, RFC 6761) and the
 * cloud metadata names. Other names are judged by the addresses they resolve to, at connect time.
 *
 * Encodings: an IPv4 address may be written as one number (2130706433), with hex (0x7f.1) or
 * octal (0177.0.0.1) parts, as inet_aton and the WHATWG URL parser read them; all are read the
 * same way here, so none slips past as a "name".
 *
 * The allow-list (`--allow-hosts`) opens exact host names (`hooks.internal`), name suffixes
 * (`*.internal`), addresses (`127.0.0.1`, `::1`) and CIDR ranges (`10.1.0.0/16`, `fd00::/8`).
 * An allowed name may resolve to any address; an allowed address or range is allowed whatever
 * name led to it.
 */

/** An IP address as bytes: 4 for IPv4, 16 for IPv6. */
export interface IpAddress {
  family: 4 | 6;
  bytes: Uint8Array;
}

interface Range {
  family: 4 | 6;
  bytes: Uint8Array;
  prefixBits: number;
}

interface DeniedRange extends Range {
  /** What the range is, for the refusal message ("a loopback address"). */
  what: string;
}

/** Parses one inet_aton part: decimal, 0x hex or 0-led octal. */
function parseIpv4Part(part: string): number | null {
  if (part === '') return null;
  let digits = part;
  let radix = 10;
  if (/^0x/i.test(part)) {
    digits = part.slice(2);
    radix = 16;
    if (digits === '') return 0;
    if (!/^[0-9a-f]+$/i.test(digits)) return null;
  } else if (part.length > 1 && part.startsWith('0')) {
    digits = part.slice(1);
    radix = 8;
    if (!/^[0-7]+$/.test(digits)) return null;
  } else if (!/^[0-9]+$/.test(digits)) {
    return null;
  }
  // Bound the text so parseInt stays exact (the largest valid part is 2^32 - 1).
  if (digits.length > 12) return null;
  return parseInt(digits, radix);
}

/**
 * IPv4 in any form inet_aton accepts: a.b.c.d, a.b.c (c is 16 bits), a.b (b is 24 bits) or a
 * (32 bits), each part decimal, hex or octal. A trailing dot is allowed, as in URLs.
 */
export function parseIpv4(text: string): Uint8Array | null {
  const parts = (text.endsWith('.') ? text.slice(0, -1) : text).split('.');
  if (parts.length < 1 || parts.length > 4) return null;
  const values: number[] = [];
  for (const p of parts) {
    const v = parseIpv4Part(p);
    if (v === null) return null;
    values.push(v);
  }
  const last = values.pop()!;
  if (values.some((v) => v > 255)) return null;
  const lastBits = 8 * (4 - values.length);
  if (last >= 2 ** lastBits) return null;
  let n = last;
  values.forEach((v, i) => (n += v * 2 ** (24 - 8 * i)));
  return Uint8Array.of(
    Math.floor(n / 2 ** 24) & 255,
    Math.floor(n / 2 ** 16) & 255,
    Math.floor(n / 2 ** 8) & 255,
    n & 255,
  );
}

/** IPv6 text (with `::`, an embedded dotted IPv4 tail, optional brackets and zone id). */
export function parseIpv6(text: string): Uint8Array | null {
  let t = text.startsWith('[') && text.endsWith(']') ? text.slice(1, -1) : text;
  const zone = t.indexOf('%');
  if (zone >= 0) t = t.slice(0, zone);
  if (t.length === 0 || t.length > 45 || !/^[0-9a-f:.]+$/i.test(t)) return null;
  const halves = t.split('::');
  if (halves.length > 2) return null;
  const groups = (s: string): number[] | null => {
    if (s === '') return [];
    const out: number[] = [];
    const parts = s.split(':');
    for (let i = 0; i < parts.length; i++) {
      const p = parts[i];
      if (p.includes('.')) {
        // An embedded IPv4 address: only last, only strict dotted decimal.
        if (i !== parts.length - 1 || !/^\d{1,3}(\.\d{1,3}){3}$/.test(p)) return null;
        const v4 = p.split('.').map(Number);
        if (v4.some((b) => b > 255)) return null;
        out.push(v4[0] * 256 + v4[1], v4[2] * 256 + v4[3]);
      } else {
        if (!/^[0-9a-f]{1,4}$/i.test(p)) return null;
        out.push(parseInt(p, 16));
      }
    }
    return out;
  };
  const head = groups(halves[0]);
  const tail = halves.length === 2 ? groups(halves[1]) : [];
  if (!head || !tail) return null;
  const missing = 8 - head.length - tail.length;
  if (halves.length === 2 ? missing < 1 : missing !== 0) return null;
  const all = [...head, ...new Array<number>(halves.length === 2 ? missing : 0).fill(0), ...tail];
  const bytes = new Uint8Array(16);
  all.forEach((g, i) => {
    bytes[2 * i] = g >> 8;
    bytes[2 * i + 1] = g & 255;
  });
  return bytes;
}

/** An IP address in any accepted form, or null when `text` is not one (then it is a host name). */
export function parseIp(text: string): IpAddress | null {
  if (text.includes(':')) {
    const bytes = parseIpv6(text);
    return bytes ? { family: 6, bytes } : null;
  }
  const bytes = parseIpv4(text);
  return bytes ? { family: 4, bytes } : null;
}

export function formatIp(ip: IpAddress): string {
  if (ip.family === 4) return ip.bytes.join('.');
  const groups: string[] = [];
  for (let i = 0; i < 16; i += 2) groups.push(((ip.bytes[i] << 8) | ip.bytes[i + 1]).toString(16));
  return groups.join(':');
}

/** `a.b.c.d/n`, `x::/n`, or a bare address (a /32 or /128). */
export function parseCidr(text: string): Range | null {
  const slash = text.indexOf('/');
  const ip = parseIp(slash < 0 ? text : text.slice(0, slash));
  if (!ip) return null;
  const width = ip.family === 4 ? 32 : 128;
  if (slash < 0) return { ...ip, prefixBits: width };
  const bitsText = text.slice(slash + 1);
  if (!/^\d{1,3}$/.test(bitsText) || Number(bitsText) > width) return null;
  return { ...ip, prefixBits: Number(bitsText) };
}

function inRange(ip: IpAddress, range: Range): boolean {
  if (ip.family !== range.family) return false;
  let bits = range.prefixBits;
  for (let i = 0; bits > 0; i++, bits -= 8) {
    const mask = bits >= 8 ? 0xff : (0xff << (8 - bits)) & 0xff;
    if ((ip.bytes[i] & mask) !== (range.bytes[i] & mask)) return false;
  }
  return true;
}

function denied(cidr: string, what: string): DeniedRange {
  const r = parseCidr(cidr);
  if (!r) throw new Error(`bad built-in range ${cidr}`);
  return { ...r, what };
}

const DENIED_V4: DeniedRange[] = [
  denied('0.0.0.0/8', 'a "this network" address'),
  denied('10.0.0.0/8', 'a private address'),
  denied('100.64.0.0/10', 'a shared (carrier-grade NAT) address'),
  denied('127.0.0.0/8', 'a loopback address'),
  denied('169.254.0.0/16', 'a link-local address (cloud metadata lives here)'),
  denied('172.16.0.0/12', 'a private address'),
  denied('192.0.0.0/24', 'an IETF protocol address'),
  denied('192.0.2.0/24', 'a documentation address'),
  denied('192.88.99.0/24', 'a 6to4 relay address'),
  denied('192.168.0.0/16', 'a private address'),
  denied('198.18.0.0/15', 'a benchmarking address'),
  denied('198.51.100.0/24', 'a documentation address'),
  denied('203.0.113.0/24', 'a documentation address'),
  denied('224.0.0.0/4', 'a multicast address'),
  denied('240.0.0.0/4', 'a reserved address'),
];

const DENIED_V6: DeniedRange[] = [
  denied('::/128', 'the unspecified address'),
  denied('::1/128', 'a loopback address'),
  denied('100::/64', 'a discard address'),
  denied('64:ff9b:1::/48', 'a local NAT64 address'),
  denied('2001::/32', 'a Teredo address'),
  denied('2001:db8::/32', 'a documentation address'),
  denied('fc00::/7', 'a unique-local address (cloud metadata lives here)'),
  denied('fe80::/10', 'a link-local address'),
  denied('fec0::/10', 'a site-local address'),
  denied('ff00::/8', 'a multicast address'),
];

/** IPv6 forms that carry an IPv4 address, and where. */
const EMBEDDING_V4: { range: Range; offset: number; form: string }[] = [
  { range: parseCidr('::ffff:0:0/96')!, offset: 12, form: 'IPv4-mapped' },
  { range: parseCidr('::/96')!, offset: 12, form: 'IPv4-compatible' },
  { range: parseCidr('64:ff9b::/96')!, offset: 12, form: 'NAT64' },
  { range: parseCidr('2002::/16')!, offset: 2, form: '6to4' },
];

/** The IPv4 address an IPv6 address carries (mapped, compatible, NAT64, 6to4), if any. */
export function embeddedIpv4(ip: IpAddress): { ip: IpAddress; form: string } | null {
  if (ip.family !== 6) return null;
  for (const e of EMBEDDING_V4) {
    if (!inRange(ip, e.range)) continue;
    // :: and ::1 sit inside ::/96 but are themselves, not IPv4 addresses.
    if (e.form === 'IPv4-compatible' && ip.bytes.subarray(12, 14).every((b) => b === 0)) return null;
    return { ip: { family: 4, bytes: ip.bytes.slice(e.offset, e.offset + 4) }, form: e.form };
  }
  return null;
}

/** What a denied address is ("a loopback address"), or null when it is public. */
export function deniedAs(ip: IpAddress): string | null {
  const inner = embeddedIpv4(ip);
  if (inner) {
    const what = deniedAs(inner.ip);
    return what ? `${what} (${inner.form} ${formatIp(inner.ip)})` : null;
  }
  for (const r of ip.family === 4 ? DENIED_V4 : DENIED_V6) if (inRange(ip, r)) return r.what;
  if (ip.family === 4 && ip.bytes.every((b) => b === 255)) return 'the broadcast address';
  return null;
}

/** Names that always point inside the machine or the cloud it runs on. */
const DENIED_NAMES = new Set([
  'localhost',
  'metadata',
  'metadata.google.internal',
  'metadata.goog',
  'instance-data',
  'instance-data.ec2.internal',
]);

/** Lower case, no brackets, no trailing dot: the form names and addresses are compared in. */
export function normalizeHost(host: string): string {
  let h = host.toLowerCase();
  if (h.startsWith('[') && h.endsWith(']')) h = h.slice(1, -1);
  if (h.endsWith('.') && h.length > 1) h = h.slice(0, -1);
  return h;
}

/** Why an `--allow-hosts` entry is invalid, or null. */
export function allowEntryError(entry: string): string | null {
  const e = normalizeHost(entry.trim());
  if (e === '') return 'is empty';
  if (e.includes('/')) return parseCidr(e) ? null : 'is not a valid CIDR range (such as 10.0.0.0/8 or fd00::/8)';
  if (parseIp(e)) return null;
  const name = e.startsWith('*.') ? e.slice(2) : e;
  return /^[a-z0-9_]([a-z0-9_-]{0,62})(\.[a-z0-9_]([a-z0-9_-]{0,62}))*$/.test(name)
    ? null
    : 'is not a host name, address or CIDR range';
}

const HOW_TO_ALLOW = 'a webhook may not reach it unless the operator allows it with --allow-hosts';

/** The guard: the built-in deny-list, opened by an allow-list. Immutable. */
export class AddressPolicy {
  private readonly names = new Set<string>();
  private readonly suffixes: string[] = [];
  private readonly ranges: Range[] = [];

  /** Throws RangeError naming the first invalid entry. */
  constructor(allowHosts: readonly string[] = []) {
    for (const raw of allowHosts) {
      const why = allowEntryError(raw);
      if (why) throw new RangeError(`allow-hosts entry "${raw}" ${why}`);
      const e = normalizeHost(raw.trim());
      const range = parseCidr(e);
      if (range) this.ranges.push(range);
      else if (e.startsWith('*.')) this.suffixes.push(e.slice(1));
      else this.names.add(e);
    }
  }

  /** True when the allow-list opens this host name (exactly or by a `*.` suffix). */
  nameAllowed(host: string): boolean {
    const h = normalizeHost(host);
    return this.names.has(h) || this.suffixes.some((s) => h.endsWith(s));
  }

  /**
   * At registration: why a URL's host may not be a webhook target, or null. An IP address (in
   * any encoding) is judged now; a name only when it is one that always points inside.
   */
  checkHost(host: string): string | null {
    const h = normalizeHost(host);
    if (h === '') return 'the URL has no host';
    if (this.nameAllowed(h)) return null;
    const ip = parseIp(h);
    if (ip) return this.checkIp(ip, h);
    if (DENIED_NAMES.has(h) || h.endsWith('.localhost'))
      return `host ${h} points inside the machine or its cloud; ${HOW_TO_ALLOW}`;
    return null;
  }

  /**
   * At connect time: why the socket may not connect to `address` (as resolved or connected) on
   * behalf of the URL host `host`, or null.
   */
  checkAddress(address: string, host: string): string | null {
    if (this.nameAllowed(host)) return null;
    const ip = parseIp(normalizeHost(address));
    if (!ip) return `connected address ${address.slice(0, 64)} is not an IP address`;
    return this.checkIp(ip, normalizeHost(host));
  }

  private checkIp(ip: IpAddress, host: string): string | null {
    const what = deniedAs(ip);
    if (what === null) return null;
    const inner = embeddedIpv4(ip)?.ip;
    if (this.ranges.some((r) => inRange(ip, r) || (inner !== undefined && inRange(inner, r)))) return null;
    // A name's resolved address is never shown: it would tell a tenant what the operator's
    // internal names point to (a map of the private network, one refusal at a time).
    const shown = formatIp(ip);
    if (host !== '' && host !== shown && parseIp(host) === null) {
      const kind = deniedAs(embeddedIpv4(ip)?.ip ?? ip) ?? what;
      return `host ${host.slice(0, 100)} resolves to ${kind}; ${HOW_TO_ALLOW}`;
    }
    return `${shown} is ${what}; ${HOW_TO_ALLOW}`;
  }
}
