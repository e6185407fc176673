/**
 * Checks of a broker destination's target at registration, beside what the API schema checks:
 * URLs parse with the kind's schemes, and every host passes the private-address guard (the same
 * guard judges the addresses again at connect). Errors are 400s naming the field.
 */
import type { AddressPolicy } from '../../core/address.ts';
import { invalid } from '../../core/errors.ts';

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
  if (!schemes.includes(url.protocol))
    throw invalid(field, `must be a ${schemes.join(' or ')} URL, not ${url.protocol}`);
  if (url.hostname === '') throw invalid(field, 'has no host');
  checkHost(field, url.hostname, policy);
  return url;
}

/** `host:port` (IPv6 in brackets) with its host past the guard. */
export function checkHostPort(field: string, text: string, policy: AddressPolicy): void {
  const m = /^(\[[0-9a-fA-F:.]+\]|[^:\[\]\s/]+):(\d{1,5})$/.exec(text);
  if (!m || Number(m[2]) < 1 || Number(m[2]) > 65535)
    throw invalid(field, 'must be host:port (such as 127.0.0.1:9092)');
  checkHost(field, m[1], policy);
}

/**
 * A URL as the API shows it: a password becomes `***`, and so does a user name given alone (NATS
 * reads `nats://token@host` as a token; no kind's lone user name is meant to be public). Text that
 * does not parse is hidden whole.
 */
export function urlForDisplay(text: string): string {
  try {
    const u = new URL(text);
    if (u.password !== '') u.password = '***';
    else if (u.username !== '') u.username = '***';
    else return text;
    return u.toString();
  } catch {
    return '(unparsable URL)';
  }
}

/** True when the URL carries a user name or a password. */
export function urlHasCredentials(url: URL): boolean {
  return url.username !== '' || url.password !== '';
}

/**
 * The opt-in a broker target (and a Kafka source) may carry: send its credentials over a
 * connection without TLS, where anyone on the path can read them. Off unless set.
 */
export interface InsecureCredentialsOptIn {
  allowInsecureCredentials?: boolean;
}

/** Where a target would send a credential without TLS: the field that holds it, and how. */
export interface ClearCredentials {
  field: string;
  what: string;
}

/** A credential would cross the network unencrypted and the target did not allow it: discarded. */
export class InsecureCredentialsError extends Error {
  constructor(clear: ClearCredentials) {
    super(
      `${clear.field}: ${clear.what} would be sent without TLS; refused (set "allowInsecureCredentials": true on the destination to send it anyway)`,
    );
    this.name = 'InsecureCredentialsError';
  }
}

/**
 * Throws a 400 naming the field when `clear` names a credential that would go without TLS and
 * the body did not say `allowInsecureCredentials: true`.
 */
export function checkCredentialsTls(clear: ClearCredentials | null, optIn: InsecureCredentialsOptIn): void {
  if (clear && optIn.allowInsecureCredentials !== true) {
    throw invalid(
      clear.field,
      `${clear.what} would be sent without TLS, readable by anyone on the network path; use TLS, or set "allowInsecureCredentials": true to send it anyway`,
    );
  }
}

/** At connect: the same rule, for targets stored before it (refused with a discard, not sent). */
export function assertCredentialsTls(clear: ClearCredentials | null, optIn: InsecureCredentialsOptIn): void {
  if (clear && optIn.allowInsecureCredentials !== true) throw new InsecureCredentialsError(clear);
}

/** The opt-in as the API shows it: present only when set. */
export function optInJson(optIn: InsecureCredentialsOptIn): { allowInsecureCredentials?: true } {
  return optIn.allowInsecureCredentials === true ? { allowInsecureCredentials: true } : {};
}
