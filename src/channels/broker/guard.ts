/**
 * The private-address guard for broker connections. A broker host is user input like a webhook
 * URL: it is resolved here, every address judged by the policy (`--allow-hosts` opens it), and
 * the client connects to the address that passed, so a name cannot resolve one way when judged
 * and another when connected (DNS rebinding).
 */
import { promisify } from 'node:util';
import type { LookupAddress } from 'node:dns';
import { normalizeHost, parseIp, type AddressPolicy } from '../../core/address.ts';
import { ADDRESS_DENIED_CODE, AddressDeniedError, guardedLookup, type Resolver } from '../http/guarded-connect.ts';

export { AddressDeniedError };

/** The address to connect to for `host`, one the policy allows; rejects with AddressDeniedError. */
export async function guardedAddress(policy: AddressPolicy, host: string, resolve?: Resolver): Promise<string> {
  const h = normalizeHost(host);
  if (parseIp(h)) {
    const why = policy.checkAddress(h, h);
    if (why) throw new AddressDeniedError(why);
    return h;
  }
  const lookup = promisify(guardedLookup(policy, resolve)) as unknown as (
    host: string,
    options: object,
  ) => Promise<LookupAddress[]>;
  const addresses = await lookup(h, { all: true });
  return addresses[0].address;
}

/** True for the error the guard refuses an address with. */
export function isAddressDenied(err: unknown): boolean {
  // Clients wrap socket errors (KafkaJS keeps the code; some keep only a cause): walk the chain.
  for (
    let e = err as { code?: unknown; cause?: unknown; originalError?: unknown } | null, depth = 0;
    e && typeof e === 'object' && depth < 5;
    e = (e.originalError ?? e.cause) as typeof e, depth++
  ) {
    if (e instanceof AddressDeniedError || e.code === ADDRESS_DENIED_CODE) return true;
  }
  return false;
}
