/** The HTTP webhook channel's surface: the channel, and registration of an `http` destination. */
import type { AddressPolicy } from '../../core/address.ts';
import type { HttpTarget } from '../../core/destination.ts';
import { invalid } from '../../core/errors.ts';
import { urlForDisplay, urlHasCredentials, type KindSpec } from '../broker/config.ts';

export { HttpChannel, type HttpChannelOptions } from './http-channel.ts';

/**
 * Throws unless `url` is an absolute http(s) URL whose host the private-address guard accepts.
 * The WHATWG parser has already turned every IPv4 encoding (2130706433, 0x7f.1, 0177.0.0.1)
 * into dotted decimal and IPv6 into its canonical form, so the guard sees the address that
 * would be used. A host name is judged by what it resolves to, at connect time.
 */
export function checkWebhookUrl(field: string, url: string, policy: AddressPolicy): string {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw invalid(field, 'must be an absolute http or https URL');
  }
  if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') throw invalid(field, 'must be an http or https URL');
  if (urlHasCredentials(parsed)) {
    throw invalid(
      field,
      'must not carry credentials (user:password@): Belfry would not send them, and a URL is shown back; receivers verify a delivery by its signature (webhook-signature)',
    );
  }
  const denied = policy.checkHost(parsed.hostname);
  if (denied) throw invalid(field, `host not allowed: ${denied}`);
  return url;
}

/** Registration of an `http` destination: `url`. */
export const httpSpec: KindSpec<HttpTarget, { url: string }> = {
  parse: (body, policy) => ({ kind: 'http', url: checkWebhookUrl('url', body.url, policy) }),
  // A URL stored before credentials were refused in it shows them as ***.
  json: (t) => ({ url: urlForDisplay(t.url) }),
};
