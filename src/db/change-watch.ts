import type { Kysely } from 'kysely';
import type { Logger } from 'pino';
import { changeFeed, type DataChange, type WatchedTable } from './changes.ts';

/**
 * What a cache of answers built from rows of watched tables needs to stay true, in one place for
 * every such cache (the API keys', the x402 challenges'), on both engines. A cache is told to drop
 * - what a committed write of this process changed, at its commit (db/changes.ts, synchronously:
 *   the writer's next request already misses);
 * - what another instance or process changed: on PostgreSQL through the NOTIFY of the change's
 *   trigger, on one LISTEN per database handle; the cache serves nothing while that LISTEN is not
 *   in place (a change could be missed) and drops everything when it is lost or comes back;
 * - everything, on SQLite, once `PRAGMA data_version` says another connection committed, looked
 *   at before an answer is served (at most every `otherProcessesEveryMs`).
 * A cache fills an entry from a read taken after `ticket()` and keeps it only if `keeps(ticket)`:
 * nothing was dropped meanwhile, so the read cannot be older than a change already seen.
 */
export type ChangeWatch = {
  /** True when entries may be served now (after dropping everything if another SQLite connection committed). */
  usable(): boolean;
  /**
   * Like `usable`, for an answer that must reflect every change committed anywhere before the call
   * (a revoked key is refused on the next request, on every instance): on PostgreSQL after one
   * round trip on the LISTEN connection (shared by the calls that come meanwhile), so every NOTIFY
   * of such a change has been acted on; on SQLite `PRAGMA data_version` is looked at every time.
   */
  current(): Promise<boolean>;
  /** Taken before the database read an entry is built from. */
  ticket(): number;
  /** True when an entry read after `ticket` may be kept: the cache is usable and nothing was dropped since. */
  keeps(ticket: number): boolean;
  /** Stops watching and serving. */
  close(): void;
};

export type ChangeWatchOptions = {
  /** The tables whose changes drop entries. */
  tables: readonly WatchedTable[];
  /** SQLite: how long an entry may be served after another process committed (0: looked at on every use). */
  otherProcessesEveryMs: number;
  log?: Logger;
};

/**
 * Watches `db`'s changes for a cache. `drop(change)` is told each change to one of the tables (ids
 * undefined: any row of it), `drop(undefined)` when anything may have changed. A handle not opened
 * by openDatabase has no change feed: its watch is never usable, so its cache serves nothing.
 */
export function watchChanges<DB>(db: Kysely<DB>, options: ChangeWatchOptions, drop: (change: DataChange | undefined) => void): ChangeWatch {
  const feed = changeFeed(db);
  let epoch = 0;
  let closed = feed === undefined;
  // PostgreSQL serves once the LISTEN is in place; SQLite (and a handle with no one to follow) at once.
  let listening = feed?.followOthers === undefined;
  const dropped = (change: DataChange | undefined) => {
    epoch++;
    drop(change);
  };
  const unsubscribe = feed?.subscribe(dropped, options.tables);
  const unfollow = feed?.followOthers?.(
    {
      change: (change) => {
        if (!change || options.tables.includes(change.table)) dropped(change);
      },
      listening: () => {
        dropped(undefined);
        listening = true;
      },
      lost: () => {
        listening = false;
        dropped(undefined);
      },
    },
    options.log,
  );

  let externalVersion = feed?.externalVersion;
  let seenVersion = externalVersion?.();
  // A clock of its own: the bound holds even where the service's clock is a test's.
  let lookedAt = performance.now();
  const lookAtOtherProcesses = () => {
    if (!externalVersion) return;
    if (options.otherProcessesEveryMs > 0) {
      const now = performance.now();
      if (now - lookedAt < options.otherProcessesEveryMs) return;
      lookedAt = now;
    }
    const version = externalVersion();
    if (version !== seenVersion) {
      seenVersion = version;
      dropped(undefined);
    }
  };

  const usable = () => {
    if (closed || !listening) return false;
    lookAtOtherProcesses();
    return true;
  };
  return {
    usable,
    async current() {
      if (!usable()) return false;
      if (!feed?.othersCaughtUp) return true;
      return (await feed.othersCaughtUp()) && usable();
    },
    ticket: () => epoch,
    keeps: (ticket) => usable() && ticket === epoch,
    close() {
      closed = true;
      externalVersion = undefined;
      unsubscribe?.();
      unfollow?.();
      dropped(undefined);
    },
  };
}
