/**
 * How a `nats` destination is registered (its target parsed from the API's body, checked against
 * the address policy and the credentials rule) and shown. No client library: the API and the
 * registry load this at start; the channel that delivers (channel.ts) is loaded on first use.
 */
import type { NatsTarget } from '../../core/destination.ts';
import { invalid } from '../../core/errors.ts';
import {
  checkBrokerUrl,
  checkCredentialsTls,
  optInJson,
  urlForDisplay,
  urlHasCredentials,
  type ClearCredentials,
  type InsecureCredentialsOptIn,
  type KindSpec,
} from '../broker/config.ts';

/** True when the target's servers are tls:// (registration refuses a mix). */
export function wantsTls(target: NatsTarget): boolean {
  return target.servers.some((s) => s.startsWith('tls:'));
}

/** A credential that would cross the network unencrypted: over nats:// servers. */
export function clearCredentials(target: NatsTarget): ClearCredentials | null {
  if (wantsTls(target)) return null;
  const i = target.servers.findIndex((s) => urlHasCredentials(new URL(s)));
  if (i >= 0) return { field: `servers.${i}`, what: 'the credentials in a nats:// URL' };
  if (target.token !== null) return { field: 'token', what: 'the token, to nats:// servers,' };
  return null;
}

/** Registration of a `nats` destination: `servers` (all nats:// or all tls:// URLs), `subject`, optional `token`. */
export const natsSpec: KindSpec<
  NatsTarget,
  { servers: string[]; subject: string; token?: string } & InsecureCredentialsOptIn
> = {
  parse(body, policy) {
    const schemes = body.servers.map((s, i) => checkBrokerUrl(`servers.${i}`, s, ['nats:', 'tls:'], policy).protocol);
    const mixed = schemes.findIndex((p) => p !== schemes[0]);
    if (mixed >= 0)
      throw invalid(
        `servers.${mixed}`,
        `is ${schemes[mixed]}// where servers.0 is ${schemes[0]}//: list only tls:// servers (TLS for all) or only nats:// servers`,
      );
    const target: NatsTarget & InsecureCredentialsOptIn = {
      kind: 'nats',
      servers: body.servers,
      subject: body.subject,
      token: body.token ?? null,
      ...optInJson(body),
    };
    checkCredentialsTls(clearCredentials(target), target);
    return target;
  },
  json: (t) => ({
    servers: t.servers.map(urlForDisplay),
    subject: t.subject,
    ...optInJson(t as InsecureCredentialsOptIn),
  }),
};
