/** Starts any system by key. */
import { startBelfry } from './belfry.ts';
import { startPeer } from './peer.ts';
import type { System, SystemKey, SystemOptions } from './system.ts';

export function startSystem(key: SystemKey, opts: SystemOptions): Promise<System> {
  switch (key) {
    case 'belfry-sqlite':
      return startBelfry('sqlite', opts);
    case 'belfry-postgres':
      return startBelfry('postgres', opts);
    default:
      return startPeer(key, opts);
  }
}
