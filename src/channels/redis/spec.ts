/**
 * How a `redis` destination is registered (its target parsed from the API's body, checked against
 * the address policy and the credentials rule) and shown. No client library: the API and the
 * registry load this at start; the channel that delivers (channel.ts) is loaded on first use.
 */
import type { RedisTarget } from '../../core/destination.ts';
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

/** The credentials of a `redis://` URL (they would go unencrypted); null for rediss:// or none. */
export function clearCredentials(target: RedisTarget): ClearCredentials | null {
  const url = new URL(target.url);
  return url.protocol === 'redis:' && urlHasCredentials(url)
    ? { field: 'url', what: 'the credentials in a redis:// URL' }
    : null;
}

/** Registration of a `redis` destination: `url` (redis:// or rediss://), `stream`, optional `maxLen`. */
export const redisSpec: KindSpec<
  RedisTarget,
  { url: string; stream: string; maxLen?: number } & InsecureCredentialsOptIn
> = {
  parse(body, policy) {
    checkBrokerUrl('url', body.url, ['redis:', 'rediss:'], policy);
    const target: RedisTarget & InsecureCredentialsOptIn = {
      kind: 'redis',
      url: body.url,
      stream: body.stream,
      maxLen: body.maxLen ?? null,
      ...optInJson(body),
    };
    checkCredentialsTls(clearCredentials(target), target);
    return target;
  },
  json: (t) => ({
    url: urlForDisplay(t.url),
    stream: t.stream,
    maxLen: t.maxLen,
    ...optInJson(t as InsecureCredentialsOptIn),
  }),
};
