import { PostgresAdapter } from 'kysely';
import { newId } from '../common/ids.ts';
import type { Mode } from '../common/modes.ts';
import type { Db } from '../db/index.ts';
import { findMerchant, setMerchantWallet } from './merchants.ts';

/**
 * The owner of `merchant_events`: the activity log. Every change a merchant's user, a coding agent
 * or the operator makes (payout wallet, keys, roles, invitations, webhooks, links, refunds, brand,
 * a sign-in from a new browser) is recorded here, in the transaction of the change itself
 * (`recordActivity` on the change's transaction, or `withActivity` around it): both or neither.
 */

/** Who made a change, and from where (a browser's address and user agent; none for the CLI). */
export type Actor = {
  kind: 'user' | 'agent' | 'operator';
  /** The user's id, or the coding agent's grant id. */
  id: string | null;
  /** The user's email, or the coding agent's name, as it was then. */
  label: string | null;
  ip: string | null;
  userAgent: string | null;
};

export const OPERATOR: Actor = { kind: 'operator', id: null, label: null, ip: null, userAgent: null };

/** Every kind of change the log records, in the words of its page. */
export const ACTIVITY_TYPES = {
  wallet_changed: 'Payout wallet changed',
  business_changed: 'Business details changed',
  chains_changed: 'Accepted chains changed',
  brand_changed: 'Brand changed',
  api_key_created: 'API key created',
  api_key_revoked: 'API key revoked',
  client_created: 'Client credentials created',
  client_revoked: 'Client credentials revoked',
  webhook_changed: 'Webhook endpoint changed',
  webhook_secret_revealed: 'Webhook secrets revealed',
  webhook_secret_rotated: 'Webhook secrets rotated',
  webhook_test_sent: 'Webhook test event sent',
  webhook_redelivered: 'Webhook event redelivered',
  link_created: 'Payment link created',
  link_changed: 'Payment link changed',
  link_archived: 'Payment link archived',
  refund_sent: 'Refund sent',
  agent_authorized: 'Coding agent authorized',
  agent_revoked: 'Coding agent revoked',
  role_changed: 'Role changed',
  member_removed: 'Member removed',
  invitation_sent: 'Invitation sent',
  invitation_revoked: 'Invitation revoked',
  invitation_accepted: 'Invitation accepted',
  password_changed: 'Password changed',
  signed_in_new_browser: 'Signed in from a new browser',
  account_opened: 'Account opened (sign-up)',
} as const;
export type ActivityType = keyof typeof ACTIVITY_TYPES;

export const isActivityType = (value: unknown): value is ActivityType => typeof value === 'string' && Object.hasOwn(ACTIVITY_TYPES, value);

/** One change: its kind, its mode (null: of both, like a role or the brand), and what it says (the page shows it as `key: value`). */
export type Change = { type: ActivityType; mode: Mode | null; detail: Record<string, string | number | boolean | null> };

export type ActivityEntry = Change & { id: string; merchantId: string; actor: Actor; at: number };

/** Records a change on `trx`, which should be the change's own transaction. */
export async function recordActivity(trx: Db, merchantId: string, actor: Actor, change: Change, now: number): Promise<void> {
  await trx
    .insertInto('merchant_events')
    .values({
      id: newId('mev_'),
      merchant_id: merchantId,
      user_id: actor.kind === 'user' ? actor.id : null,
      type: change.type,
      detail: JSON.stringify(change.detail),
      created_at: now,
      mode: change.mode,
      actor: actor.kind,
      actor_id: actor.id,
      actor_label: actor.label?.slice(0, 254) ?? null,
      ip: actor.ip?.slice(0, 64) ?? null,
      user_agent: actor.userAgent?.slice(0, 400) ?? null,
    })
    .execute();
}

/** Runs `work` in a transaction (or in `db` when it is one already). */
export const inTransaction = <T>(db: Db, work: (trx: Db) => Promise<T>): Promise<T> => (db.isTransaction ? work(db) : db.transaction().execute(work));

/**
 * Makes a change and records it in one transaction. `change` says what was done from `work`'s
 * result; undefined records nothing (nothing was changed: an unknown id, a refusal).
 */
export async function withActivity<T>(
  db: Db,
  merchantId: string,
  actor: Actor,
  work: (trx: Db) => Promise<T>,
  change: (result: T) => Change | undefined,
  now: number,
): Promise<T> {
  return inTransaction(db, async (trx) => {
    const result = await work(trx);
    const done = change(result);
    if (done) await recordActivity(trx, merchantId, actor, done, now);
    return result;
  });
}

/**
 * Holds the merchant's row until the transaction ends, so that changes which check the team before
 * they write (the last owner) are made one at a time. SQLite has one writer at a time already.
 */
export async function lockMerchant(trx: Db, merchantId: string): Promise<void> {
  if (!(trx.getExecutor().adapter instanceof PostgresAdapter)) return;
  await trx.selectFrom('merchants').select('id').where('id', '=', merchantId).forNoKeyUpdate().execute();
}

export type WalletChange = {
  id: string;
  merchantId: string;
  /** The user who changed it on the dashboard; null when the operator did, from the CLI. */
  userId: string | null;
  /** The mode whose wallet changed; null for a change recorded before wallets had modes. */
  mode: Mode | null;
  from: string | null;
  to: string | null;
  at: number;
};

/**
 * Sets the payout wallet of a mode (null: none) and records the change, in one transaction unless `db` is
 * one already: both or neither. False when there is no such merchant.
 */
export async function changeWallet(
  db: Db,
  input: { merchantId: string; actor: Actor; mode: Mode; walletAddress: string | null },
  now = Date.now(),
): Promise<boolean> {
  return inTransaction(db, async (trx) => {
    const merchant = await findMerchant(trx, input.merchantId);
    if (!merchant) return false;
    await setMerchantWallet(trx, input.merchantId, input.mode, input.walletAddress);
    const change: Change = {
      type: 'wallet_changed',
      mode: input.mode,
      detail: { mode: input.mode, from: merchant.wallets[input.mode], to: input.walletAddress },
    };
    await recordActivity(trx, input.merchantId, input.actor, change, now);
    return true;
  });
}

/** The merchant's latest wallet change at or after `since`, if any. */
export async function latestWalletChange(db: Db, merchantId: string, since: number): Promise<WalletChange | undefined> {
  const row = await db
    .selectFrom('merchant_events')
    .selectAll()
    .where('merchant_id', '=', merchantId)
    .where('type', '=', 'wallet_changed')
    .where('created_at', '>=', since)
    .orderBy('created_at', 'desc')
    .orderBy('id', 'desc')
    .limit(1)
    .executeTakeFirst();
  if (!row) return undefined;
  const detail = JSON.parse(row.detail) as { mode?: Mode; from: string | null; to: string | null };
  return {
    id: row.id,
    merchantId: row.merchant_id,
    userId: row.user_id,
    mode: detail.mode ?? null,
    from: detail.from,
    to: detail.to,
    at: Number(row.created_at),
  };
}

/** What the activity page is narrowed to: who (a user id, `agent` or `operator`), what, when, and the mode shown (changes of both modes always show). */
export type ActivityFilter = { who?: string; type?: ActivityType; from?: number; to?: number; mode?: Mode };

/** A merchant's activity, newest first, filtered; at most `limit` entries. */
export async function searchActivity(db: Db, merchantId: string, filter: ActivityFilter, limit: number): Promise<ActivityEntry[]> {
  const rows = await db
    .selectFrom('merchant_events')
    .selectAll()
    .where('merchant_id', '=', merchantId)
    .$if(filter.who === 'agent' || filter.who === 'operator', (qb) => qb.where('actor', '=', filter.who as 'agent' | 'operator'))
    .$if(filter.who !== undefined && filter.who !== 'agent' && filter.who !== 'operator', (qb) => qb.where('user_id', '=', filter.who!))
    .$if(filter.type !== undefined, (qb) => qb.where('type', '=', filter.type!))
    .$if(filter.from !== undefined, (qb) => qb.where('created_at', '>=', filter.from!))
    .$if(filter.to !== undefined, (qb) => qb.where('created_at', '<', filter.to!))
    .$if(filter.mode !== undefined, (qb) => qb.where((eb) => eb.or([eb('mode', '=', filter.mode!), eb('mode', 'is', null)])))
    .orderBy('created_at', 'desc')
    .orderBy('id', 'desc')
    .limit(limit)
    .execute();
  return rows.map((row) => ({
    id: row.id,
    merchantId: row.merchant_id,
    type: row.type as ActivityType,
    mode: row.mode,
    detail: JSON.parse(row.detail) as Change['detail'],
    actor: {
      kind: row.actor ?? (row.user_id ? 'user' : 'operator'),
      id: row.actor_id ?? row.user_id,
      label: row.actor_label,
      ip: row.ip,
      userAgent: row.user_agent,
    },
    at: Number(row.created_at),
  }));
}
