/**
 * What the node knows of its storage beyond "the store answers a ping", for /readyz:
 *
 * - `storage_full`: a write failed for lack of disk space. Until space returns the node is not
 *   ready (a balancer sends writes elsewhere), and a write that needs space is refused with 503
 *   storage_full; nothing it acknowledged is lost, and what it refused wrote nothing. It is ready
 *   again by itself once the data dir's file system has STORAGE_ROOM_BYTES_MIN free (statfs, read
 *   when /readyz asks: a balancer that sends it nothing meanwhile would otherwise keep it out for
 *   good, as no write would succeed to say so).
 * - `store_damaged`: SQLite found the file damaged during a call (SQLITE_CORRUPT, SQLITE_NOTADB).
 *   The check at start finds damage already there; this is damage it had no time to find or that
 *   came later. Only a restart (on a repaired file) clears it.
 *
 * SQLite only: errors reach it from the store thread (every call that fails). On PostgreSQL a full
 * disk answers 503 storage_full as well, and readiness follows PostgreSQL's own answers.
 */
import { statfs } from 'node:fs/promises';
import { isStoreFull } from '../store/failure-kind.ts';
import { isDamageCode } from '../store/sqlite/integrity-check.ts';

/** Free space on the data dir's file system at which a node that ran out is ready again. */
export const STORAGE_ROOM_BYTES_MIN = 16 * 1024 * 1024;

export type StorageReason = 'storage_full' | 'store_damaged';

export interface StorageWatchOptions {
  /** The data dir, whose file system holds the store. */
  dataDir: string;
  roomBytesMin?: number;
  /** Called once each time the node runs out of space, and once when it has room again. */
  onChange?: (full: boolean, detail: { freeBytes?: number }) => void;
}

export class StorageWatch {
  /** A write was refused for space and no room has been seen since. */
  private full = false;
  private damaged = false;

  constructor(private readonly opts: StorageWatchOptions) {}

  /** Looks at an error a store call or a request failed with; true when it says the disk is full. */
  observe(err: unknown): boolean {
    if (isDamageCode((err as { code?: unknown } | null)?.code)) this.damaged = true;
    if (!isStoreFull(err)) return false;
    if (!this.full) this.opts.onChange?.(true, {});
    this.full = true;
    return true;
  }

  /** The reasons the storage makes the node not ready, as stable codes; empty when none. */
  async reasons(): Promise<StorageReason[]> {
    const reasons: StorageReason[] = [];
    if (this.damaged) reasons.push('store_damaged');
    if (this.full && !(await this.hasRoomAgain())) reasons.push('storage_full');
    return reasons;
  }

  private async hasRoomAgain(): Promise<boolean> {
    let freeBytes: number;
    try {
      const fs = await statfs(this.opts.dataDir);
      freeBytes = fs.bavail * fs.bsize;
    } catch {
      return false; // Cannot tell: stay out until it can.
    }
    if (freeBytes < (this.opts.roomBytesMin ?? STORAGE_ROOM_BYTES_MIN)) return false;
    // Another /readyz may have seen it first.
    if (this.full) this.opts.onChange?.(false, { freeBytes });
    this.full = false;
    return true;
  }
}
