import { createUser } from '../accounts/users.ts';
import type { AppContext } from '../context.ts';
import { addConsent } from '../oauth/grants.ts';
import type { Scope } from '../oauth/scopes.ts';
import { issueMcpToken } from '../oauth/tokens.ts';

let users = 0;

/**
 * A coding agent authorized on a merchant's account, as consent and the code exchange leave it
 * (the full OAuth flow is tested in src/oauth/): a grant with these scopes and an access token for
 * the MCP endpoint. Each call is a new client unless `clientId` is given (consent to the same
 * client adds to its grant).
 */
export async function authorizedAgent(
  context: AppContext,
  merchantId: string,
  scopes: Scope[],
  clientId = `https://agent.example/${users + 1}/client.json`,
): Promise<{ grantId: string; accessToken: string; userId: string }> {
  const user = await createUser(context.db, {
    merchantId,
    email: `agent-owner-${++users}-${Date.now()}@shop.example`,
    password: 'correct horse battery staple',
  });
  const grant = await context.db
    .transaction()
    .execute((trx) => addConsent(trx, { merchantId, userId: user.id, clientId, clientName: 'Test agent', scopes }, context.now()));
  const { accessToken } = await issueMcpToken(
    context.db,
    context.config,
    { grantId: grant.id, clientId, merchantId, userId: user.id, scopes: grant.scopes },
    context.now(),
  );
  return { grantId: grant.id, accessToken, userId: user.id };
}
