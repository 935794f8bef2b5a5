import { PostgresAdapter } from 'kysely';
import { z } from 'zod';
import { API_KEY_SCOPE_NAMES, type ApiKeyScope } from '../../common/api-key-scopes.ts';
import { keyModeOf } from '../../common/modes.ts';
import type { Tx } from '../../db/index.ts';
import { countActiveApiKeys, createApiKey } from '../../merchants/api-keys.ts';
import { recordActivity } from '../../merchants/events.ts';
import { successfulCallsSince } from '../audit.ts';
import { defineTool, ToolRefusal } from '../tool.ts';

/** Spec 8: keys one authorization may create in 24 hours, and keys an account may hold. */
export const KEYS_PER_DAY_PER_AUTHORIZATION = 5;
export const KEYS_PER_ACCOUNT = 25;
const DAY_MS = 86_400_000;

/**
 * Makes the calls of one merchant's agents take turns until their transaction ends, so each counts
 * what the others made: on PostgreSQL a row lock on the merchant (FOR NO KEY UPDATE: rows that only
 * refer to the merchant are not held up); SQLite runs one writing transaction at a time already.
 */
async function takeMerchantsTurn(trx: Tx, merchantId: string): Promise<void> {
  const postgres = trx.getExecutor().adapter instanceof PostgresAdapter;
  await trx
    .selectFrom('merchants')
    .select('id')
    .where('id', '=', merchantId)
    .$if(postgres, (qb) => qb.forNoKeyUpdate())
    .execute();
}

export const createApiKeyTool = defineTool({
  name: 'create_api_key',
  title: 'Create an API key',
  description: `Creates one API key for the payment API, of the authorization's mode (test or live), and returns it once: it can never be read again. At most ${KEYS_PER_DAY_PER_AUTHORIZATION} per 24 hours per authorization and ${KEYS_PER_ACCOUNT} on the account.`,
  scope: 'keys:write',
  input: z.strictObject({
    scopes: z
      .array(z.enum(API_KEY_SCOPE_NAMES as [ApiKeyScope, ...ApiKeyScope[]]))
      .min(1)
      .max(API_KEY_SCOPE_NAMES.length)
      .optional()
      .describe('A restricted key: the payment-API scopes it may use, each one this authorization holds itself (sessions:write). Omitted: a full key.'),
  }),
  output: z.object({
    keyId: z.string(),
    apiKey: z.string(),
    mode: z.enum(['test', 'live']),
    masked: z.string(),
    scopes: z.array(z.string()).nullable(),
    note: z.string(),
  }),
  async run(context, access, args, call) {
    const now = context.now();
    const merchantId = access.grant.merchantId;
    // A grant gives away no more than it holds: a restricted key's scopes are the grant's own.
    const beyond = args.scopes?.filter((scope) => !(access.scopes as readonly string[]).includes(scope));
    if (beyond?.length)
      throw new ToolRefusal(
        'scope_not_held',
        `create_api_key refused: this authorization does not hold ${beyond.join(', ')}, so it cannot give it to a key; nothing was made.`,
      );
    const scopes = args.scopes && API_KEY_SCOPE_NAMES.filter((scope) => args.scopes!.includes(scope));
    // Both caps are checked and the key made and audited in one transaction, in turn with the
    // merchant's other calls: racing calls cannot all see room for one more.
    const key = await context.db.transaction().execute(async (trx) => {
      await takeMerchantsTurn(trx, merchantId);
      if ((await successfulCallsSince(trx, access.grant.id, 'create_api_key', now - DAY_MS)) >= KEYS_PER_DAY_PER_AUTHORIZATION)
        throw new ToolRefusal(
          'key_limit_per_authorization',
          `create_api_key refused: this authorization already created ${KEYS_PER_DAY_PER_AUTHORIZATION} API keys in the last 24 hours.`,
        );
      if ((await countActiveApiKeys(trx, merchantId)) >= KEYS_PER_ACCOUNT)
        throw new ToolRefusal('key_limit_per_account', `create_api_key refused: the account already has ${KEYS_PER_ACCOUNT} API keys; revoke one first.`);
      // Of the grant's mode, whatever the deployment serves besides: a test grant never makes a live key.
      const made = await createApiKey(trx, merchantId, keyModeOf(access.grant.mode), now, scopes);
      await call.recordSuccess(trx);
      const agent = { kind: 'agent', id: access.grant.id, label: access.grant.clientName, ip: null, userAgent: null } as const;
      await recordActivity(trx, merchantId, agent, { type: 'api_key_created', mode: access.grant.mode, detail: { key: made.keyId, ends: made.lastFour } }, now);
      return made;
    });
    return {
      keyId: key.keyId,
      apiKey: key.apiKey,
      mode: key.mode,
      masked: `…${key.lastFour}`,
      scopes: key.scopes ?? null,
      note: 'Store this key now: it is shown once and can never be read again.',
    };
  },
});
