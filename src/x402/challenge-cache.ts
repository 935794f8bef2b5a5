import type { AppContext } from '../context.ts';
import { watchChanges } from '../db/change-watch.ts';
import { ANSWER_TABLES, type DataChange } from '../db/changes.ts';

/**
 * A challenge as sent: status, its own headers (content type and PAYMENT-REQUIRED), the same with
 * the x402 routes' CORS headers for the fast lane, and the JSON body, all encoded once.
 */
export type EncodedChallenge = { status: number; headers: Record<string, string>; withCors: Record<string, string>; body: Buffer };

/** How long an answer may be served after another process changed its rows, on SQLite. */
export const SQLITE_CHECK_MS = 20;
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
 * instance. Every change to a session or a merchant drops what was built from it (db/change-watch.ts):
 * this process's writes synchronously at commit, other instances' through PostgreSQL NOTIFY (served
 * only while the LISTEN is in place), other processes' on SQLite through `PRAGMA data_version`
 * (looked at most every SQLITE_CHECK_MS). A proof never reads the cache.
 */
export function createChallengeCache(context: Pick<AppContext, 'db' | 'log'>): ChallengeCache {
  const sessions = new Map<string, SessionEntries>();
  let answers = 0;
  const forget = (sessionId: string) => {
    answers -= sessions.get(sessionId)?.amounts.size ?? 0;
    sessions.delete(sessionId);
  };
  const drop = (change: DataChange | undefined) => {
    if (change?.ids === undefined) {
      sessions.clear();
      answers = 0;
    } else if (change.table === 'payment_sessions') for (const id of change.ids) forget(id);
    else for (const [id, entries] of sessions) if (change.ids.includes(entries.merchantId)) forget(id);
  };
  const watch = watchChanges(context.db, { tables: ANSWER_TABLES, otherProcessesEveryMs: SQLITE_CHECK_MS, log: context.log }, drop);

  return {
    get(sessionId, amount, now) {
      if (!watch.usable()) return undefined;
      const entry = sessions.get(sessionId)?.amounts.get(amount);
      if (!entry) return undefined;
      if (now < entry.until) return entry.answer;
      const entries = sessions.get(sessionId)!;
      entries.amounts.delete(amount);
      answers--;
      if (entries.amounts.size === 0) sessions.delete(sessionId);
      return undefined;
    },
    ticket: () => watch.ticket(),
    put(ticket, key, answer, until) {
      if (!watch.keeps(ticket)) return;
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
      watch.close();
    },
  };
}
