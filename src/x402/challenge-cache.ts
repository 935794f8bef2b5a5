import type { AppContext } from '../context.ts';
import { CHANGES_CHANNEL, changeFeed, type DataChange, parseChangePayload } from '../db/changes.ts';
import { listenForNotifications, type NotificationListener } from '../db/notifications.ts';

/**
 * A challenge as sent: status, its own headers (content type and PAYMENT-REQUIRED), the same with
 * the x402 routes' CORS headers for the fast lane, and the JSON body, all encoded once.
 */
export type EncodedChallenge = { status: number; headers: Record<string, string>; withCors: Record<string, string>; body: Buffer };

/** How long an answer may be served after another process changed its rows, on SQLite. */
export const SQLITE_CHECK_MS = 20;
/** A lost LISTEN connection is opened again after this; meanwhile nothing is served from the cache. */
const RELISTEN_MS = 1000;
/** Answers held (≈ 2 KB each); past it the session filled first is dropped. An editable session holds a few amounts. */
export const MAX_ANSWERS = 10_000;
export const MAX_AMOUNTS_PER_SESSION = 8;

type Entry = { answer: EncodedChallenge; until: number };
type SessionEntries = { merchantId: string; amounts: Map<string, Entry> };

export type ChallengeCache = {
  /** The answer cached for this session and `?amount=` (`''` when none), if it is still valid at `now`. */
  get(sessionId: string, amount: string, now: number): EncodedChallenge | undefined;
  /** Taken before the database read an answer is built from; `put` keeps the answer only if nothing changed since. */
  ticket(): number;
  /** Keeps an answer until `until` (before its quote's last reuse and the session's expiry) unless a change came after `ticket`. */
  put(ticket: number, key: { sessionId: string; amount: string; merchantId: string }, answer: EncodedChallenge, until: number): void;
  close(): Promise<void>;
};

/**
 * The challenge of an unchanged session and quote is the same bytes, so it is encoded once per
 * instance. Every change to a session or a merchant drops what was built from it: this process's
 * writes synchronously at commit (db/changes.ts), other instances' through PostgreSQL NOTIFY (its
 * own connections' NOTIFYs are echoes of writes dropped at commit, and are ignored)
 * (served only while the LISTEN is in place), other processes' on SQLite through
 * `PRAGMA data_version` (checked at most every SQLITE_CHECK_MS). A proof never reads the cache.
 */
export function createChallengeCache(context: Pick<AppContext, 'db' | 'dbKind' | 'config' | 'log'>): ChallengeCache {
  const sessions = new Map<string, SessionEntries>();
  // Moves on every drop: a fill read before the move may be older than the drop, so it is not kept.
  let epoch = 0;
  let enabled = false;
  let answers = 0;
  const clear = () => {
    epoch++;
    sessions.clear();
    answers = 0;
  };
  const forget = (sessionId: string) => {
    answers -= sessions.get(sessionId)?.amounts.size ?? 0;
    sessions.delete(sessionId);
  };
  const drop = (change: DataChange) => {
    epoch++;
    if (change.ids === undefined) return clear();
    if (change.table === 'payment_sessions') for (const id of change.ids) forget(id);
    else for (const [id, entries] of sessions) if (change.ids.includes(entries.merchantId)) forget(id);
  };

  const feed = changeFeed(context.db);
  const unsubscribe = feed?.subscribe(drop);
  let listener: NotificationListener | undefined;
  let externalVersion = feed?.externalVersion;
  let checkedVersion = externalVersion?.();
  let checkedAt = performance.now();
  if (feed && context.dbKind === 'postgres') {
    listener = listenForNotifications(
      context.config.databaseUrl,
      CHANGES_CHANNEL,
      {
        onNotification: (payload, processId) => {
          // This instance's own write came back: the feed dropped it at commit, and dropping it
          // again would throw away an answer cached since from the committed rows.
          if (feed.isOwnBackend?.(processId)) return;
          drop(parseChangePayload(payload) ?? { table: 'payment_sessions', ids: undefined });
        },
        onListening: () => {
          clear();
          enabled = true;
        },
        onLost: () => {
          enabled = false;
          clear();
        },
      },
      { retryMs: RELISTEN_MS, log: context.log, what: 'data changes' },
    );
  } else enabled = feed !== undefined;

  /** SQLite: another process (the CLI, a second service) committed since the last look, so anything may have changed. */
  const checkOtherProcesses = () => {
    // A clock of its own: the bound holds even where the service's clock is a test's.
    const now = performance.now();
    if (!externalVersion || now - checkedAt < SQLITE_CHECK_MS) return;
    checkedAt = now;
    const version = externalVersion();
    if (version !== checkedVersion) {
      checkedVersion = version;
      clear();
    }
  };

  return {
    get(sessionId, amount, now) {
      if (!enabled) return undefined;
      checkOtherProcesses();
      const entry = sessions.get(sessionId)?.amounts.get(amount);
      if (!entry) return undefined;
      if (now < entry.until) return entry.answer;
      const entries = sessions.get(sessionId)!;
      entries.amounts.delete(amount);
      answers--;
      if (entries.amounts.size === 0) sessions.delete(sessionId);
      return undefined;
    },
    ticket: () => epoch,
    put(ticket, key, answer, until) {
      if (!enabled || ticket !== epoch) return;
      let entries = sessions.get(key.sessionId);
      if (!entries) {
        while (answers >= MAX_ANSWERS && sessions.size > 0) forget(sessions.keys().next().value!);
        entries = { merchantId: key.merchantId, amounts: new Map() };
        sessions.set(key.sessionId, entries);
      }
      if (!entries.amounts.has(key.amount)) {
        if (entries.amounts.size >= MAX_AMOUNTS_PER_SESSION) entries.amounts.delete(entries.amounts.keys().next().value!);
        else answers++;
      }
      entries.amounts.set(key.amount, { answer, until });
    },
    async close() {
      enabled = false;
      externalVersion = undefined;
      unsubscribe?.();
      clear();
      await listener?.close();
    },
  };
}
