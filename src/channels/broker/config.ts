/**
 * Checks of a broker destination's target at registration, beside what the API schema checks:
 * URLs parse with the kind's schemes, and every host passes the private-address guard (the same
 * guard judges the addresses again at connect). Errors are 400s naming the field.
 */
import type { AddressPolicy } from '../../core/address.ts';
import { invalid } from '../../core/errors.ts';
import { redactUrl } from '../../core/destination.ts';

/** A destination kind's registration check and its JSON form (credentials left out). */
export interface KindSpec<T, B = Record<string, unknown>> {
  /** The typed target from a body the schema accepted; throws a 400 naming the field. */
  parse(body: B, policy: AddressPolicy): T;
  /** The target as the API shows it: no password, SASL secret or token. */
  json(target: T): Record<string, unknown>;
}

export function checkHost(field: string, host: string, policy: AddressPolicy): void {
  const denied = policy.checkHost(host);
  if (denied) throw invalid(field, `host not allowed: ${denied}`);
}

/** A URL with one of `schemes` (such as 'redis:') whose host passes the guard. */
export function checkBrokerUrl(field: string, text: string, schemes: readonly string[], policy: AddressPolicy): URL {
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    throw invalid(field, `must be an absolute URL (${schemes.map((s) => `${s}//host:port`).join(' or ')})`);
  }
  if (!schemes.includes(url.protocol)) throw invalid(field, `must be a ${schemes.join(' or ')} URL, not ${url.protocol}`);
  if (url.hostname === '') throw invalid(field, 'has no host');
  checkHost(field, url.hostname, policy);
  return url;
}

/** `host:port` (IPv6 in brackets) with its host past the guard. */
export function checkHostPort(field: string, text: string, policy: AddressPolicy): void {
  const m = /^(\[[0-9a-fA-F:.]+\]|[^:\[\]\s/]+):(\d{1,5})$/.exec(text);
  if (!m || Number(m[2]) < 1 || Number(m[2]) > 65535) throw invalid(field, 'must be host:port (such as 127.0.0.1:9092)');
  checkHost(field, m[1], policy);
}

export { redactUrl };
