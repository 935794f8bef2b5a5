import { type Expression, type ExpressionBuilder, type Insertable, type RawBuilder, type Selectable, type SqlBool, sql, type Updateable } from 'kysely';
import { TillError } from '../common/errors.ts';
import { type Db, isUniqueViolation, type Tx } from '../db/index.ts';
import { prepareQuery } from '../db/prepared.ts';
import type { Database, Mode, PaymentSessionsTable, SessionOrigin, SessionStatus } from '../db/schema.ts';

/**
 * The owner of `payment_sessions`: every write to the table, with the state rules it keeps.
 * Routes, the expiry sweep, payments and (later) the dashboard and MCP tools call these.
 */
export type SessionRow = Selectable<PaymentSessionsTable>;

/**
 * A TRANSIENT session past its deadline is expired even before the sweeper marks it; an open session
 * archived from the dashboard is expired too (it can no longer be paid or changed).
 */
export function isExpired(session: Pick<SessionRow, 'status' | 'expires_at'> & { archived_at?: number | null }, now: number): boolean {
  if (session.status === 'EXPIRED') return true;
  if (session.status !== 'OPEN') return false;
  return (session.expires_at !== null && session.expires_at <= now) || (session.archived_at ?? null) !== null;
}

/**
 * A session by id, whatever its mode: for a row already found through a lookup of the service's
 * mode (and for tests). Anything answering a request uses {@link findMerchantSession} or another
 * lookup that takes the mode.
 */
export async function findSession(db: Db, sessionId: string): Promise<SessionRow | undefined> {
  return db.selectFrom('payment_sessions').selectAll().where('id', '=', sessionId).executeTakeFirst();
}

/** A merchant's session made in `mode` (the service's): a session of the other mode is not found, as an unknown one. */
export async function findMerchantSession(db: Db, mode: Mode, merchantId: string, sessionId: string): Promise<SessionRow | undefined> {
  // By its key alone, then checked. With the merchant and mode in the query, PostgreSQL takes
  // (merchant_id, mode, created_at, id) for a merchant its statistics do not know yet (one that
  // began after the last ANALYZE) and walks every session of that merchant to find the id.
  const session = await findSession(db, sessionId);
  return session && session.merchant_id === merchantId && session.mode === mode ? session : undefined;
}

/** An orderId is unique per merchant and mode: a second session with it is refused by name. */
export function orderIdInUse(error: unknown, orderId: string | null | undefined): never {
  if (isUniqueViolation(error)) throw new TillError('order_id_in_use', { orderId: String(orderId), field: 'orderId' });
  throw error;
}

/** A new session's row: each column {@link insertSessionFrom} writes, and its merchant. */
export type NewSessionRow = Pick<Insertable<PaymentSessionsTable>, 'merchant_id' | (typeof NEW_SESSION_COLUMNS)[number]>;

/** The INSERT of a new session, built and compiled once: only the values change from one session to the next. */
const insertNewSession = prepareQuery((db: Db, row: Record<keyof NewSessionRow, unknown>) =>
  db
    .insertInto('payment_sessions')
    .values(Object.fromEntries(['merchant_id', ...NEW_SESSION_COLUMNS].map((column) => [column, row[column as keyof NewSessionRow]])) as never),
);

export async function insertSession(db: Db, row: NewSessionRow): Promise<void> {
  const values = { merchant_id: row.merchant_id } as Record<keyof NewSessionRow, unknown>;
  for (const column of NEW_SESSION_COLUMNS) values[column] = row[column] ?? null;
  try {
    await insertNewSession.execute(db, values);
  } catch (error) {
    orderIdInUse(error, row.order_id);
  }
}

/**
 * {@link insertSession} as a part of one PostgreSQL statement: the row (`values`, its columns as
 * the JSON text of {@link sessionValues}) is inserted once for each row of the CTE `source`, which
 * gives merchant_id, when `condition` holds, and its id returned. The server converts the values
 * to the columns' types (jsonb_populate_record), so the statement carries no list of types. A
 * taken orderId fails the whole statement (23505), as insertSession does.
 */
export function insertSessionFrom(source: string, values: string, condition: RawBuilder<unknown> = sql`true`): RawBuilder<unknown> {
  const columns = ['merchant_id', ...NEW_SESSION_COLUMNS].map((column) => sql.id(column));
  return sql`INSERT INTO payment_sessions (${sql.join(columns)})
    SELECT ${sql.join(columns.map((column) => sql`r.${column}`))}
    FROM ${sql.table(source)} CROSS JOIN LATERAL jsonb_populate_record(
      NULL::payment_sessions, ${values}::jsonb || jsonb_build_object('merchant_id', ${sql.table(source)}.merchant_id)
    ) r
    WHERE ${condition}
    RETURNING id`;
}

/** What a new session is written with, all but its merchant. */
const NEW_SESSION_COLUMNS = [
  'id',
  'order_id',
  'order_type',
  'status',
  'amount_minor',
  'currency',
  'min_amount_minor',
  'editable',
  'concept',
  'success_url',
  'cancel_url',
  'fail_url',
  'pay_to',
  'expires_at',
  'created_at',
  'updated_at',
  'version',
  'created_via',
  'mode',
] as const satisfies readonly (keyof PaymentSessionsTable)[];

/** A new session's row as the JSON text {@link insertSessionFrom} takes (money as digits, never through a float). */
export function sessionValues(row: Pick<Insertable<PaymentSessionsTable>, (typeof NEW_SESSION_COLUMNS)[number]>): string {
  return JSON.stringify(Object.fromEntries(NEW_SESSION_COLUMNS.map((column) => [column, row[column] ?? null])), (_key, value) =>
    typeof value === 'bigint' ? value.toString() : value,
  );
}

/** An archived session can no longer change; a TRANSIENT one that is paid, expired or being paid neither; a STATIC one otherwise always can. */
export async function assertChangeable(db: Db, session: SessionRow, now: number): Promise<void> {
  if (session.archived_at !== null) throw new TillError('session_expired');
  if (session.order_type !== 'TRANSIENT') return;
  if (session.status === 'SUCCESS') throw new TillError('session_settled');
  if (isExpired(session, now)) throw new TillError('session_expired');
  const current = await db.selectFrom('payment_sessions').select('payments_in_progress').where('id', '=', session.id).executeTakeFirst();
  if ((current?.payments_in_progress ?? 0) > 0) throw new TillError('payment_in_progress');
}

export type SessionChanges = Pick<
  Updateable<PaymentSessionsTable>,
  'order_id' | 'concept' | 'success_url' | 'fail_url' | 'cancel_url' | 'amount_minor' | 'currency' | 'min_amount_minor' | 'editable'
>;

/**
 * Applies an E2 update and bumps the version, conditional on the version and status read, so a
 * concurrent payment or update is never overwritten (and a TRANSIENT session never changes while
 * a payment of it is in progress).
 */
export async function updateSession(db: Db, session: SessionRow, changes: SessionChanges, now: number): Promise<void> {
  try {
    const result = await db
      .updateTable('payment_sessions')
      .set((eb) => ({ ...changes, updated_at: now, version: eb('version', '+', 1) }))
      .where('id', '=', session.id)
      .where('version', '=', session.version)
      .where('status', '=', session.status)
      .where('archived_at', 'is', null)
      .$if(session.order_type === 'TRANSIENT', (qb) => qb.where('payments_in_progress', '=', 0))
      // The id names the changed row to caches of answers built from it (db/changes.ts).
      .returning('id')
      .executeTakeFirst();
    if (!result) throw new TillError('session_changed');
  } catch (error) {
    orderIdInUse(error, changes.order_id);
  }
}

/** A session due to expire, and where it stands in the sweep's order. */
export type DueSession = { id: string; merchant_id: string; expires_at: number };

/**
 * Open TRANSIENT sessions of `mode` past their deadline with no payment in progress, in deadline
 * order (ties by id), after `after` when given: a sweep walks past rows it could not expire instead
 * of reading them again.
 */
export async function findDueForExpiry(
  db: Db,
  modes: readonly Mode[],
  now: number,
  limit: number,
  after?: Pick<DueSession, 'id' | 'expires_at'>,
): Promise<DueSession[]> {
  let query = db
    .selectFrom('payment_sessions')
    .select(['id', 'merchant_id', 'expires_at'])
    .where('status', '=', 'OPEN')
    .where('mode', 'in', modes)
    .where('order_type', '=', 'TRANSIENT')
    .where('expires_at', '<=', now)
    .where('payments_in_progress', '=', 0);
  if (after)
    query = query.where((eb) => eb.or([eb('expires_at', '>', after.expires_at), eb.and([eb('expires_at', '=', after.expires_at), eb('id', '>', after.id)])]));
  const rows = await query.orderBy('expires_at').orderBy('id').limit(limit).execute();
  return rows.map((row) => ({ id: row.id, merchant_id: row.merchant_id, expires_at: row.expires_at! }));
}

/** OPEN → EXPIRED, only if still due and with no payment in progress; the row as left, or undefined. */
export async function expireSession(trx: Tx, sessionId: string, now: number): Promise<SessionRow | undefined> {
  return trx
    .updateTable('payment_sessions')
    .set({ status: 'EXPIRED', updated_at: now })
    .where('id', '=', sessionId)
    .where('status', '=', 'OPEN')
    .where('order_type', '=', 'TRANSIENT')
    .where('payments_in_progress', '=', 0)
    .where('expires_at', '<=', now)
    .returningAll()
    .executeTakeFirst();
}

/**
 * Counts a claimed payment as in progress, only while the session is open, unexpired and still at
 * the version the payment was quoted for. Undefined when it is not.
 */
export async function startPayment(trx: Tx, sessionId: string, terms: { quotedVersion: number; payTo: string; now: number }): Promise<SessionRow | undefined> {
  const payTo = terms.payTo.toLowerCase();
  return (
    trx
      .updateTable('payment_sessions')
      .set((eb) => ({ payments_in_progress: eb('payments_in_progress', '+', 1) }))
      .where('id', '=', sessionId)
      .where('status', '=', 'OPEN')
      .where('archived_at', 'is', null)
      .where('version', '=', terms.quotedVersion)
      .where((eb) => eb.or([eb('expires_at', 'is', null), eb('expires_at', '>', terms.now)]))
      // Still paid to the address the proof was checked against: the session's own, else the merchant's wallet of the session's mode now.
      .where((eb) =>
        eb.or([
          eb(eb.fn('lower', ['payment_sessions.pay_to']), '=', payTo),
          eb.and([
            eb('payment_sessions.pay_to', 'is', null),
            eb.exists(
              eb
                .selectFrom('merchants')
                .select('merchants.id')
                .whereRef('merchants.id', '=', 'payment_sessions.merchant_id')
                .where((m) =>
                  m(
                    m.fn('lower', [
                      sql<string | null>`CASE WHEN payment_sessions.mode = 'sandbox' THEN merchants.test_wallet_address ELSE merchants.wallet_address END`,
                    ]),
                    '=',
                    payTo,
                  ),
                ),
            ),
          ]),
        ]),
      )
      .returningAll()
      .executeTakeFirst()
  );
}

/** A payment recorded FAILED settled after all: a TRANSIENT session it paid is SUCCESS (it no longer counted as in progress). */
export async function markPaidLate(trx: Tx, sessionId: string, now: number): Promise<SessionRow> {
  return trx
    .updateTable('payment_sessions')
    .set((eb) => ({
      updated_at: now,
      status: eb.case().when('order_type', '=', 'TRANSIENT').then(eb.val<SessionStatus>('SUCCESS')).else(eb.ref('status')).end(),
    }))
    .where('id', '=', sessionId)
    .returningAll()
    .executeTakeFirstOrThrow();
}

/** A payment in progress ended; a TRANSIENT session that it paid is now SUCCESS. */
export async function finishPayment(trx: Tx, sessionId: string, now: number, settled: boolean): Promise<SessionRow> {
  return trx
    .updateTable('payment_sessions')
    .set((eb) => ({
      payments_in_progress: eb('payments_in_progress', '-', 1),
      updated_at: now,
      ...(settled ? { status: eb.case().when('order_type', '=', 'TRANSIENT').then(eb.val<SessionStatus>('SUCCESS')).else(eb.ref('status')).end() } : {}),
    }))
    .where('id', '=', sessionId)
    .returningAll()
    .executeTakeFirstOrThrow();
}

/** A payment was reversed, so the merchant was not paid: a TRANSIENT session can be paid again. */
export async function reopenAfterReversal(trx: Tx, sessionId: string, now: number): Promise<SessionRow> {
  const reopened = await trx
    .updateTable('payment_sessions')
    .set({ status: 'OPEN', updated_at: now })
    .where('id', '=', sessionId)
    .where('order_type', '=', 'TRANSIENT')
    .where('status', '=', 'SUCCESS')
    .returningAll()
    .executeTakeFirst();
  return reopened ?? (await trx.selectFrom('payment_sessions').selectAll().where('id', '=', sessionId).executeTakeFirstOrThrow());
}

export const MAX_SESSIONS_PAGE_SIZE = 100;

export type SessionsPage = { sessions: SessionRow[]; page: number; size: number; hasMore: boolean };

/**
 * A merchant's sessions, newest first, one page at a time (read on the (merchant_id, created_at)
 * index); archived ones only when asked. `hasMore` tells whether a next page exists, without a count.
 */
export async function listMerchantSessions(
  db: Db,
  mode: Mode,
  merchantId: string,
  options: { page?: number; size?: number; archived?: boolean } = {},
): Promise<SessionsPage> {
  const size = Math.min(Math.max(Math.trunc(options.size ?? 20), 1), MAX_SESSIONS_PAGE_SIZE);
  const page = Math.max(Math.trunc(options.page ?? 1), 1);
  const rows = await db
    .selectFrom('payment_sessions')
    .selectAll()
    .where('merchant_id', '=', merchantId)
    .where('mode', '=', mode)
    .where('archived_at', options.archived ? 'is not' : 'is', null)
    .orderBy('created_at', 'desc')
    .orderBy('id', 'desc')
    .limit(size + 1)
    .offset((page - 1) * size)
    .execute();
  return { sessions: rows.slice(0, size), page, size, hasMore: rows.length > size };
}

/** Where a page of sessions ends: the next page starts after this session. */
export type SessionsCursor = { createdAt: number; id: string };

/** A cursor as it travels in a link: `<created ms>.<session id>`. */
export const sessionsCursorText = (cursor: SessionsCursor) => `${cursor.createdAt}.${cursor.id}`;

export function parseSessionsCursor(text: string): SessionsCursor | undefined {
  const match = /^(\d{1,16})\.([A-Za-z0-9_-]{1,64})$/.exec(text);
  return match ? { createdAt: Number(match[1]), id: match[2]! } : undefined;
}

/** A condition on a merchant's sessions, for {@link pageOfSessions}. */
export type SessionCondition = (eb: ExpressionBuilder<Database, 'payment_sessions'>) => Expression<SqlBool>;

/**
 * A merchant's sessions of `mode` that meet `condition`, newest first, one slice at a time after
 * `after`: keyset paging on (created_at, id), so a page costs the same at any depth, and sessions
 * created meanwhile sort before the cursor (the slices after it neither repeat nor skip one). `next`
 * is the cursor of the following slice, absent on the last one.
 */
export async function pageOfSessions(
  db: Db,
  mode: Mode,
  merchantId: string,
  condition: SessionCondition | undefined,
  paging: { after?: SessionsCursor | undefined; size: number },
): Promise<{ sessions: SessionRow[]; next: SessionsCursor | undefined }> {
  const size = Math.min(Math.max(Math.trunc(paging.size), 1), MAX_SESSIONS_PAGE_SIZE);
  const { after } = paging;
  const rows = await db
    .selectFrom('payment_sessions')
    .selectAll()
    .where('merchant_id', '=', merchantId)
    .where('mode', '=', mode)
    .$if(condition !== undefined, (qb) => qb.where(condition!))
    .$if(after !== undefined, (qb) => qb.where((eb) => eb(eb.refTuple('created_at', 'id'), '<', eb.tuple(after!.createdAt, after!.id))))
    .orderBy('created_at', 'desc')
    .orderBy('id', 'desc')
    .limit(size + 1)
    .execute();
  const sessions = rows.slice(0, size);
  const last = sessions.at(-1);
  return { sessions, next: rows.length > size && last ? { createdAt: Number(last.created_at), id: last.id } : undefined };
}

/**
 * A merchant's sessions created one way (`api`: through E1), newest first, a slice at a time (on
 * the (merchant_id, created_via, created_at, id) index).
 */
export function listSessionsCreatedVia(
  db: Db,
  mode: Mode,
  merchantId: string,
  origin: SessionOrigin,
  paging: { after?: SessionsCursor | undefined; size: number },
): Promise<{ sessions: SessionRow[]; next: SessionsCursor | undefined }> {
  return pageOfSessions(db, mode, merchantId, (eb) => eb('created_via', '=', origin), paging);
}

/**
 * Where a session shows `status` through the API, as {@link isExpired} decides it: EXPIRED is also
 * an open session past its deadline (before the sweep marks it) or archived; OPEN is neither.
 */
export function showsStatus(eb: ExpressionBuilder<Database, 'payment_sessions'>, status: SessionStatus, now: number): Expression<SqlBool> {
  switch (status) {
    case 'SUCCESS':
      return eb('status', '=', 'SUCCESS');
    case 'EXPIRED':
      return eb.or([
        eb('status', '=', 'EXPIRED'),
        eb.and([eb('status', '=', 'OPEN'), eb.or([eb('expires_at', '<=', now), eb('archived_at', 'is not', null)])]),
      ]);
    case 'OPEN':
      return eb.and([eb('status', '=', 'OPEN'), eb.or([eb('expires_at', 'is', null), eb('expires_at', '>', now)]), eb('archived_at', 'is', null)]);
  }
}

/**
 * Archives a merchant's session of `mode`: from now on it is hidden from the dashboard's list and
 * can no longer be paid or changed. False when it is not this merchant's, of the other mode, or
 * archived already.
 */
export async function archiveSession(db: Db, mode: Mode, merchantId: string, sessionId: string, now: number): Promise<boolean> {
  const result = await db
    .updateTable('payment_sessions')
    .set({ archived_at: now, updated_at: now })
    .where('id', '=', sessionId)
    .where('merchant_id', '=', merchantId)
    .where('mode', '=', mode)
    .where('archived_at', 'is', null)
    .returning('id')
    .executeTakeFirst();
  return result !== undefined;
}

/**
 * Sandbox sessions that are still open (not paid, expired or archived): what a live start refuses
 * to begin with, until `till live prepare` has archived them. Read on the partial index
 * payment_sessions_open_mode, so it costs the open sessions only.
 */
export async function countPayableSandboxSessions(db: Db): Promise<number> {
  const row = await db
    .selectFrom('payment_sessions')
    .select((eb) => eb.fn.countAll<number | bigint | string>().as('count'))
    .where('mode', '=', 'sandbox')
    // A literal, so both planners can match the partial index (a bound parameter would hide the match).
    .where('status', '=', sql.lit('OPEN'))
    .where('archived_at', 'is', null)
    .executeTakeFirstOrThrow();
  return Number(row.count);
}

/**
 * Archives every open sandbox session at once, as the dashboard archives one: no longer payable or
 * changeable, no webhook event (an archive sends none). The ids archived, for `till live prepare`.
 */
export async function archiveSandboxSessions(db: Db, now: number): Promise<string[]> {
  const rows = await db
    .updateTable('payment_sessions')
    .set({ archived_at: now, updated_at: now })
    .where('mode', '=', 'sandbox')
    .where('status', '=', sql.lit('OPEN'))
    .where('archived_at', 'is', null)
    .returning('id')
    .execute();
  return rows.map((row) => row.id);
}

/**
 * Lists a merchant's link for agents, or stops listing it (its challenges carry the bazaar
 * description and `/.well-known/x402` lists it while on). False when no such session of theirs.
 */
export async function setSessionDiscoverable(db: Db, mode: Mode, merchantId: string, sessionId: string, discoverable: boolean, now: number): Promise<boolean> {
  const result = await db
    .updateTable('payment_sessions')
    .set({ discoverable: discoverable ? 1 : 0, updated_at: now })
    .where('id', '=', sessionId)
    .where('merchant_id', '=', merchantId)
    .where('mode', '=', mode)
    // The id names the changed row to caches of answers built from it (db/changes.ts).
    .returning('id')
    .executeTakeFirst();
  return result !== undefined;
}

/** A discoverable link as `/.well-known/x402` lists it: the session and its merchant's name. */
export type DiscoverableSession = SessionRow & { merchant_name: string };

/**
 * The links of `mode` listed for agents, by id after `afterId`: discoverable, payable now (not
 * archived or expired, a TRANSIENT one still open) and with a payout address to be paid to. Read on
 * the partial index of discoverable sessions (migration 0039).
 */
export async function listDiscoverableSessions(
  db: Db,
  mode: Mode,
  page: { afterId: string | undefined; limit: number; now: number },
): Promise<DiscoverableSession[]> {
  const wallet = mode === 'live' ? 'm.wallet_address' : 'm.test_wallet_address';
  return db
    .selectFrom('payment_sessions as s')
    .innerJoin('merchants as m', 'm.id', 's.merchant_id')
    .selectAll('s')
    .select('m.name as merchant_name')
    .where('s.discoverable', '=', 1)
    .where('s.mode', '=', mode)
    .$if(page.afterId !== undefined, (qb) => qb.where('s.id', '>', page.afterId!))
    .where('s.archived_at', 'is', null)
    .where((eb) => eb.or([eb('s.expires_at', 'is', null), eb('s.expires_at', '>', page.now)]))
    .where((eb) => eb.or([eb('s.order_type', '=', 'STATIC'), eb('s.status', '=', 'OPEN')]))
    .where((eb) => eb.or([eb('s.pay_to', 'is not', null), eb(wallet, 'is not', null)]))
    .orderBy('s.id')
    .limit(page.limit)
    .execute();
}
