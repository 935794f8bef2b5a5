import { sql } from 'kysely';
import { requireKeyScope } from '../auth/api-key-auth.ts';
import { TillError } from '../common/errors.ts';
import { newId } from '../common/ids.ts';
import { modeOfKey } from '../common/modes.ts';
import type { AppContext } from '../context.ts';
import { type Db, isUniqueViolation } from '../db/index.ts';
import { prepareQuery } from '../db/prepared.ts';
import { normalizeAddress } from '../mail/address.ts';
import { type ApiKeyUse, apiKeyUse, authenticateApiKey, usableApiKeyCtes } from '../merchants/api-keys.ts';
import { createdBody, type SessionCreatedResult, type SessionDraft } from './create-session.ts';
import { CREATION_LIMIT_NAME, CREATION_WINDOW_MS, creationLimit, creationShards, keySubject } from './creation-limit.ts';
import { claimIdempotencyKeyFrom, IDEMPOTENCY_TTL_MS, isLockTimeout, replayOf, requestHashOf, storedIdempotencyKey } from './idempotency.ts';
import { insertSessionFrom, orderIdInUse, sessionValues } from './sessions.ts';

type Context = Pick<AppContext, 'config' | 'db' | 'metrics'>;

type Outcome = {
  merchant_id: string;
  wallet_address: string | null;
  usable: number;
  /** This minute's count of the key's sessions, this one included; null without a usable key. */
  hits: number | null;
  created: number;
  request_hash: string | null;
  status_code: number | null;
  response_body: string | null;
};

type Params = ApiKeyUse & {
  sessionId: string;
  /** The row, as sessionValues writes it. */
  values: string;
  /** The 201 body for a merchant with a payout wallet, and without one (MERCHANT standing for its id). */
  plainBody: string;
  warnedBody: string;
  merchant: string;
  idempotencyKey: string;
  requestHash: string;
  expiresAt: number;
  limitSubject: string;
  /** The other rows the key's count is spread over (creation-limit.ts CREATION_SHARDS). */
  otherSubjects: string[];
  windowStart: number;
  windowEnd: number;
  points: number;
  /** The buyer's address and its row's id, in the statements that store one. */
  buyerEmail: string;
  receiptAddressId: string;
};

/** E1's scope: a restricted key without it is no usable key here, and is then told so (requireKeyScope). */
const CREATE_SCOPE = 'sessions:write';

// Stands for the merchant id in the stored body; ids are base64url, so they need no JSON escaping.
const MERCHANT = '\u0000merchant\u0000';

/** The statement, with an Idempotency-Key or without, with a buyer's address or without; built and compiled once, then run with each request's values. */
const statement = (idempotent: boolean, withBuyerEmail: boolean) =>
  prepareQuery((db: Db, p: Params) => {
    // The stored body is the one this request answers: its warning depends on the merchant the key names.
    const body = sql`CASE WHEN allowed.wallet_address IS NULL THEN replace(${p.warnedBody}, ${p.merchant}, allowed.merchant_id) ELSE ${p.plainBody} END`;
    const claim = idempotent
      ? claimIdempotencyKeyFrom('allowed', { key: p.idempotencyKey, requestHash: p.requestHash, now: p.now, expiresAt: p.expiresAt }, { status: 201, body })
      : undefined;
    // With a key, the session is inserted only when the claimed row is this request's own (its body names the new session).
    const insert = insertSessionFrom(
      'allowed',
      p.values,
      claim ? sql`EXISTS (SELECT 1 FROM claim WHERE position(${p.sessionId} IN claim.response_body) > 0)` : undefined,
    );
    // The key's count this minute (the limits' table, as consume() writes it): over the limit, nothing is claimed or inserted.
    const query = sql<Outcome>`WITH ${usableApiKeyCtes(p, CREATE_SCOPE)},
      counted AS (
        INSERT INTO rate_limit_windows (limit_name, subject, window_start, hits, expires_at)
        SELECT ${CREATION_LIMIT_NAME}, ${p.limitSubject}, ${p.windowStart}::bigint, 1, ${p.windowEnd}::bigint FROM usable
        ON CONFLICT (limit_name, subject, window_start) DO UPDATE SET hits = rate_limit_windows.hits + 1
        RETURNING hits
      ),
      total AS (
        SELECT (SELECT hits FROM counted) + coalesce((SELECT sum(hits) FROM rate_limit_windows
          WHERE limit_name = ${CREATION_LIMIT_NAME} AND subject = ANY(${p.otherSubjects}::text[]) AND window_start = ${p.windowStart}::bigint), 0) AS hits
      ),
      allowed AS (SELECT usable.* FROM usable WHERE (SELECT hits FROM total) <= ${p.points}::integer),
      ${claim ? sql`claim AS (${claim}),` : sql``}
      created AS (${insert})${
        // The address is the mail module's row (receipt-addresses.ts), written with the session or not at all.
        withBuyerEmail
          ? sql`, receipt_address AS (INSERT INTO mail_receipt_addresses (id, session_id, payment_id, email, created_at)
              SELECT ${p.receiptAddressId}, created.id, NULL, ${p.buyerEmail}, ${p.now}::bigint FROM created)`
          : sql``
      }
      SELECT key.merchant_id, key.wallet_address, (SELECT count(*) FROM usable)::integer AS usable, (SELECT hits FROM total)::integer AS hits,
        (SELECT count(*) FROM created)::integer AS created,
        ${claim ? sql`claim.request_hash, claim.status_code, claim.response_body FROM key LEFT JOIN claim ON true` : sql`NULL AS request_hash, NULL::integer AS status_code, NULL AS response_body FROM key`}`;
    return { compile: () => query.compile(db) };
  });
const statements = {
  plain: statement(false, false),
  idempotent: statement(true, false),
  plainWithBuyerEmail: statement(false, true),
  idempotentWithBuyerEmail: statement(true, true),
};

/**
 * E1 on PostgreSQL in one round trip: the API key's lookup, its `last_used_at`, the Idempotency-Key's
 * claim and the insert of the session are one statement (a named one, so each connection plans it
 * once), and a request waits for the database once. What comes back tells the outcomes apart: no
 * usable key (401), a session created (201), or the key's first answer (a replay, or 422 for
 * another body). The answers are those of requireMerchant → createPaymentSession; the rarer
 * failures take a second round trip to stay the same (a taken orderId still records the key's
 * use). On SQLite, where a query costs no round trip, E1 keeps that two-step path.
 */
function shardsOf(subject: string): Pick<Params, 'limitSubject' | 'otherSubjects'> {
  const { mine, others } = creationShards(subject);
  return { limitSubject: mine, otherSubjects: others };
}

export async function createSessionWithApiKey(
  context: Context,
  presentedKey: string,
  guessed: SessionDraft,
  options: { idempotencyKey?: string | undefined; requestBody: unknown; buyerEmail?: string | null | undefined },
): Promise<SessionCreatedResult> {
  const now = guessed.created_at;
  const use = apiKeyUse(presentedKey, context.config.modes, now);
  if (!use) throw new TillError('unauthorized', { presented: true });
  // The session is of the key's mode, whatever the draft guessed from its prefix.
  const mode = modeOfKey(use.keyMode);
  const draft: SessionDraft = { ...guessed, mode };
  const { baseUrl } = context.config;
  const limit = creationLimit(context.config);
  const requestHash = options.idempotencyKey ? requestHashOf(options.requestBody) : '';
  const params: Params = {
    ...use,
    sessionId: draft.id,
    values: sessionValues(draft),
    plainBody: JSON.stringify(createdBody(baseUrl, draft, MERCHANT, true)),
    warnedBody: JSON.stringify(createdBody(baseUrl, draft, MERCHANT, false)),
    merchant: JSON.stringify(MERCHANT).slice(1, -1),
    idempotencyKey: options.idempotencyKey === undefined ? '' : storedIdempotencyKey(options.idempotencyKey, mode),
    requestHash,
    expiresAt: now + IDEMPOTENCY_TTL_MS,
    ...shardsOf(keySubject(use.keyHash)),
    windowStart: now - (now % CREATION_WINDOW_MS),
    windowEnd: now - (now % CREATION_WINDOW_MS) + CREATION_WINDOW_MS,
    points: limit.points,
    buyerEmail: options.buyerEmail == null ? '' : normalizeAddress(options.buyerEmail),
    receiptAddressId: options.buyerEmail == null ? '' : newId('mra_'),
  };
  const chosen = `${options.idempotencyKey ? 'idempotent' : 'plain'}${options.buyerEmail == null ? '' : 'WithBuyerEmail'}` as const;

  let outcome: Outcome | undefined;
  try {
    outcome = await statements[chosen].executeTakeFirst(context.db, params);
  } catch (error) {
    if (isLockTimeout(error)) throw new TillError('idempotency_key_in_use');
    // The statement failed whole, its write of last_used_at with it: record the key's use as the two-step path does.
    if (isUniqueViolation(error)) await authenticateApiKey(context.db, presentedKey, context.config.modes, now);
    return orderIdInUse(error, draft.order_id);
  }
  if (!outcome || outcome.usable === 0) {
    // A second round trip tells a restricted key without the scope (403) from no key (401).
    const key = outcome && (await authenticateApiKey(context.db, presentedKey, context.config.modes, now));
    if (key) requireKeyScope(key, CREATE_SCOPE);
    throw new TillError('unauthorized', { presented: true });
  }
  if (outcome.hits !== null && outcome.hits > limit.points)
    throw new TillError('rate_limited', { what: limit.what, retryAfterSeconds: Math.max(1, Math.ceil((params.windowEnd - now) / 1000)) });
  if (outcome.created === 1) {
    context.metrics.sessionsCreated.inc();
    return createdBody(baseUrl, draft, outcome.merchant_id, outcome.wallet_address !== null);
  }
  if (outcome.request_hash === null) throw new TillError('idempotency_key_in_use');
  const first = replayOf({ request_hash: outcome.request_hash, status_code: outcome.status_code, response_body: outcome.response_body }, requestHash);
  return JSON.parse(first.body) as SessionCreatedResult;
}
