/**
 * How an `amqp` destination is registered (its target parsed from the API's body, checked against
 * the address policy and the credentials rule) and shown. No client library: the API and the
 * registry load this at start; the channel that delivers (channel.ts) is loaded on first use.
 */
import type { AmqpTarget } from '../../core/destination.ts';
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

/**
 * The credentials of an `amqp://` URL (AMQP's PLAIN login sends them as they are); null for
 * amqps:// or a URL without any (the client then logs in as guest, which is no secret).
 */
export function clearCredentials(target: AmqpTarget): ClearCredentials | null {
  const url = new URL(target.url);
  return url.protocol === 'amqp:' && urlHasCredentials(url)
    ? { field: 'url', what: 'the credentials in an amqp:// URL' }
    : null;
}

/** Registration of an `amqp` destination: `url` (amqp:// or amqps://), `exchange`, `routingKey`. */
export const amqpSpec: KindSpec<
  AmqpTarget,
  { url: string; exchange: string; routingKey?: string } & InsecureCredentialsOptIn
> = {
  parse(body, policy) {
    checkBrokerUrl('url', body.url, ['amqp:', 'amqps:'], policy);
    const target: AmqpTarget & InsecureCredentialsOptIn = {
      kind: 'amqp',
      url: body.url,
      exchange: body.exchange,
      routingKey: body.routingKey ?? '',
      ...optInJson(body),
    };
    checkCredentialsTls(clearCredentials(target), target);
    return target;
  },
  json: (t) => ({
    url: urlForDisplay(t.url),
    exchange: t.exchange,
    routingKey: t.routingKey,
    ...optInJson(t as InsecureCredentialsOptIn),
  }),
};
