import { sql } from 'kysely';
import { TillError } from '../common/errors.ts';
import type { AppContext } from '../context.ts';
import { isUniqueViolation } from '../db/index.ts';
import { authenticateApiKey, usableApiKeyCtes } from '../merchants/api-keys.ts';
import { createdBody, type SessionCreatedResult, type SessionDraft } from './create-session.ts';
import { claimIdempotencyKeyFrom, isLockTimeout, replayOf, requestHashOf } from './idempotency.ts';
import { insertSessionFrom, orderIdInUse } from './sessions.ts';

type Context = Pick<AppContext, 'config' | 'db' | 'metrics'>;

type Outcome = {
  merchant_id: string;
  wallet_address: string | null;
  usable: number;
  created: number;
  request_hash: string | null;
  status_code: number | null;
  response_body: string | null;
};

// Stands for the merchant id in the body the statement stores; ids are base64url, so they need no JSON escaping.
const MERCHANT = '\u0000merchant\u0000';

/**
 * E1 on PostgreSQL in one round trip: the API key's lookup, its `last_used_at`, the Idempotency-Key's
 * claim and the insert of the session are one statement, so a request waits for the database
 * once. What comes back tells the outcomes apart: no usable key (401), a session created (201),
 * or the key's first answer (a replay, or 422 for another body). The answers are those of
 * requireMerchant → createPaymentSession; the rarer failures take a second round trip to stay
 * the same (a taken orderId still records the key's use). On SQLite, where a query costs no
 * round trip, E1 keeps that two-step path.
 */
export async function createSessionWithApiKey(
  context: Context,
  presentedKey: string,
  draft: SessionDraft,
  options: { idempotencyKey?: string | undefined; requestBody: unknown },
): Promise<SessionCreatedResult> {
  const now = draft.created_at;
  const key = usableApiKeyCtes(presentedKey, context.config.mode, now);
  if (!key) throw new TillError('unauthorized', { presented: true });
  const { baseUrl } = context.config;
  // The stored body is the one this request answers: its warning depends on the merchant the key names.
  const body = sql`CASE WHEN usable.wallet_address IS NULL
    THEN replace(${JSON.stringify(createdBody(baseUrl, draft, MERCHANT, false))}, ${JSON.stringify(MERCHANT).slice(1, -1)}, usable.merchant_id)
    ELSE ${JSON.stringify(createdBody(baseUrl, draft, MERCHANT, true))} END`;
  const requestHash = requestHashOf(options.requestBody);
  const claim = options.idempotencyKey
    ? claimIdempotencyKeyFrom('usable', { key: options.idempotencyKey, requestBody: options.requestBody, now }, { status: 201, body })
    : undefined;
  // With a key, the session is inserted only when the claimed row is this request's own (its body names the new session).
  const insert = insertSessionFrom(
    'usable',
    draft,
    claim ? sql`EXISTS (SELECT 1 FROM claim WHERE position(${draft.id} IN claim.response_body) > 0)` : undefined,
  );
  const statement = sql<Outcome>`WITH ${key},
    ${claim ? sql`claim AS (${claim}),` : sql``}
    created AS (${insert})
    SELECT key.merchant_id, key.wallet_address, (SELECT count(*) FROM usable)::integer AS usable, (SELECT count(*) FROM created)::integer AS created,
      ${claim ? sql`claim.request_hash, claim.status_code, claim.response_body FROM key LEFT JOIN claim ON true` : sql`NULL AS request_hash, NULL::integer AS status_code, NULL AS response_body FROM key`}`;

  let outcome: Outcome | undefined;
  try {
    outcome = (await statement.execute(context.db)).rows[0];
  } catch (error) {
    if (isLockTimeout(error)) throw new TillError('idempotency_key_in_use');
    // The statement failed whole, its write of last_used_at with it: record the key's use as the two-step path does.
    if (isUniqueViolation(error)) await authenticateApiKey(context.db, presentedKey, context.config.mode, now);
    return orderIdInUse(error, draft.order_id);
  }
  if (!outcome || outcome.usable === 0) throw new TillError('unauthorized', { presented: true });
  if (outcome.created === 1) {
    context.metrics.sessionsCreated.inc();
    return createdBody(baseUrl, draft, outcome.merchant_id, outcome.wallet_address !== null);
  }
  if (outcome.request_hash === null) throw new TillError('idempotency_key_in_use');
  const first = replayOf({ request_hash: outcome.request_hash, status_code: outcome.status_code, response_body: outcome.response_body }, requestHash);
  return JSON.parse(first.body) as SessionCreatedResult;
}
