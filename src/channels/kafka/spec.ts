/**
 * How a `kafka` destination is registered (its target parsed from the API's body, checked against
 * the address policy and the credentials rule) and shown. No client library: the API and the
 * registry load this at start; the channel that delivers (channel.ts) is loaded on first use.
 */
import type { KafkaTarget } from '../../core/destination.ts';
import { invalid } from '../../core/errors.ts';
import {
  checkCredentialsTls,
  checkHostPort,
  optInJson,
  type ClearCredentials,
  type InsecureCredentialsOptIn,
  type KindSpec,
} from '../broker/config.ts';

/**
 * SASL PLAIN without TLS: the password crosses the network as it is. SCRAM proves the password
 * without sending it, so it is not refused.
 */
export function clearCredentials(target: Pick<KafkaTarget, 'sasl' | 'ssl'>): ClearCredentials | null {
  return target.sasl?.mechanism === 'plain' && !target.ssl
    ? { field: 'sasl.mechanism', what: 'the password of SASL PLAIN (without "ssl": true)' }
    : null;
}

/** Registration of a `kafka` destination: `brokers` (host:port), `topic`, optional `sasl`, `ssl`. */
export const kafkaSpec: KindSpec<
  KafkaTarget,
  { brokers: string[]; topic: string; sasl?: KafkaTarget['sasl']; ssl?: boolean } & InsecureCredentialsOptIn
> = {
  parse(body, policy) {
    body.brokers.forEach((b, i) => {
      // KafkaJS splits a broker at its first colon: an IPv6 literal cannot be reached by address.
      if (b.startsWith('[')) throw invalid(`brokers.${i}`, 'an IPv6 address is not supported here: give a host name');
      checkHostPort(`brokers.${i}`, b, policy);
    });
    const target: KafkaTarget & InsecureCredentialsOptIn = {
      kind: 'kafka',
      brokers: body.brokers,
      topic: body.topic,
      sasl: body.sasl ?? null,
      ssl: body.ssl ?? false,
      ...optInJson(body),
    };
    checkCredentialsTls(clearCredentials(target), target);
    return target;
  },
  json: (t) => ({
    brokers: t.brokers,
    topic: t.topic,
    ssl: t.ssl,
    sasl: t.sasl ? { mechanism: t.sasl.mechanism, username: t.sasl.username } : null,
    ...optInJson(t as InsecureCredentialsOptIn),
  }),
};
