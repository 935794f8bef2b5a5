import { randomInt } from 'node:crypto';
import { removeAllPasskeys } from '../accounts/passkeys.ts';
import { isRole, ROLES } from '../accounts/roles.ts';
import { removeTotp } from '../accounts/two-factor.ts';
import { endAllUserSessions } from '../accounts/user-sessions.ts';
import { changeRole, createUser, findUserByEmail, LastOwnerError, listMembers, passwordSetAt, setPassword, UserError } from '../accounts/users.ts';
import { keysMadeByAgentsSince } from '../merchants/api-keys.ts';
import { OPERATOR } from '../merchants/events.ts';
import { findMerchant } from '../merchants/merchants.ts';
import { revokeEveryGrant } from '../web/dashboard/agent-access.ts';
import { noneLeft, printResult, takeFlag, takeOption, UsageError } from './output.ts';
import { withDatabase } from './with-database.ts';

/** The password piped in on stdin: the first line, without its line ending. */
async function readPasswordFromStdin(): Promise<string> {
  if (process.stdin.isTTY) throw new UsageError('--password-stdin reads the password from a pipe, e.g. printf %s "$PASSWORD" | till users create …');
  const chunks: Buffer[] = [];
  for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString('utf8').split(/\r?\n/)[0] ?? '';
}

/** A password for a person to type once and change: 20 characters from an unambiguous alphabet. */
export function generatePassword(): string {
  const alphabet = 'abcdefghijkmnpqrstuvwxyzABCDEFGHJKLMNPQRSTUVWXYZ23456789';
  return Array.from({ length: 20 }, () => alphabet[randomInt(alphabet.length)]).join('');
}

async function passwordFrom(args: string[]): Promise<{ password: string; generated: boolean }> {
  if (takeFlag(args, '--password-stdin')) return { password: await readPasswordFromStdin(), generated: false };
  return { password: generatePassword(), generated: true };
}

export async function usersCommand(args: string[]): Promise<void> {
  const sub = args.shift();
  const json = takeFlag(args, '--json');
  if (sub === 'create') {
    const merchantId = takeOption(args, '--merchant');
    const email = takeOption(args, '--email');
    const role = roleOption(args) ?? 'owner';
    const { password, generated } = await passwordFrom(args);
    noneLeft(args);
    if (!merchantId || !email) throw new UsageError('users create needs --merchant MERCHANT_ID --email EMAIL [--role ROLE] [--password-stdin]');
    const user = await withDatabase(async ({ db }) => {
      if (!(await findMerchant(db, merchantId))) throw new UsageError(`no merchant ${merchantId}`);
      return createUser(db, { merchantId, email, password, role }).catch(usage);
    });
    printResult(
      json,
      { userId: user.id, merchantId, email: user.email, role: user.role, ...(generated ? { password } : {}) },
      `User ${user.id} (${user.email}, ${user.role}) created for merchant ${merchantId}.${generated ? `\nPassword (shown once): ${password}` : ''}`,
    );
    return;
  }
  if (sub === 'list') {
    const merchantId = takeOption(args, '--merchant');
    noneLeft(args);
    if (!merchantId) throw new UsageError('users list needs --merchant MERCHANT_ID');
    const members = await withDatabase(async ({ db }) => {
      if (!(await findMerchant(db, merchantId))) throw new UsageError(`no merchant ${merchantId}`);
      return listMembers(db, merchantId);
    });
    printResult(
      json,
      { merchantId, users: members.map((m) => ({ userId: m.id, email: m.email, role: m.role, createdAt: new Date(m.createdAt).toISOString() })) },
      members.map((m) => `${m.id}  ${m.role.padEnd(9)}  ${m.email}`).join('\n') || 'No users.',
    );
    return;
  }
  if (sub === 'set-role') {
    const email = takeOption(args, '--email');
    const role = roleOption(args);
    noneLeft(args);
    if (!email || !role) throw new UsageError(`users set-role needs --email EMAIL --role ${ROLES.join('|')}`);
    const result = await withDatabase(async ({ db }) => {
      const user = await findUserByEmail(db, email);
      if (!user) throw new UsageError(`no user with email ${email}`);
      return changeRole(db, { merchantId: user.merchantId, userId: user.id, role, actor: OPERATOR }).catch(usage);
    });
    if (!result) throw new UsageError(`no user with email ${email}`);
    printResult(
      json,
      { userId: result.member.id, email: result.member.email, from: result.member.role, role, changed: result.changed },
      result.changed ? `${result.member.email} is now ${role} (was ${result.member.role}).` : `${result.member.email} is already ${role}: nothing changed.`,
    );
    return;
  }
  if (sub === 'reset-password') {
    const email = takeOption(args, '--email');
    const keepAgents = takeFlag(args, '--keep-agents');
    const { password, generated } = await passwordFrom(args);
    noneLeft(args);
    if (!email) throw new UsageError('users reset-password needs --email EMAIL [--password-stdin] [--keep-agents]');
    const { user, agentsRevoked, agentKeys } = await withDatabase(async ({ db }) => {
      const existing = await findUserByEmail(db, email);
      if (!existing) throw new UsageError(`no user with email ${email}`);
      const previousSetAt = (await passwordSetAt(db, existing.id)) ?? existing.createdAt;
      const now = Date.now();
      const found = await setPassword(db, email, password, now, undefined, OPERATOR).catch(usage);
      if (!found) throw new UsageError(`no user with email ${email}`);
      await endAllUserSessions(db, found.id);
      const agentsRevoked = keepAgents ? 0 : await revokeEveryGrant(db, found.merchantId, now);
      return { user: found, agentsRevoked, agentKeys: await keysMadeByAgentsSince(db, found.merchantId, previousSetAt) };
    });
    const keyLines = agentKeys.map((key) => `  ${key.keyId}  ${key.masked}  ${key.mode}  made ${key.createdAt} by ${key.clientId}`);
    printResult(
      json,
      {
        userId: user.id,
        email: user.email,
        ...(generated ? { password } : {}),
        agentsRevoked,
        apiKeysMadeByAgents: agentKeys.map((key) => ({
          keyId: key.keyId,
          masked: key.masked,
          mode: key.mode,
          createdAt: key.createdAt,
          clientId: key.clientId,
        })),
      },
      [
        `Password of ${user.email} reset; its sessions are signed out.`,
        keepAgents ? 'Coding agents keep their access (--keep-agents).' : `Coding agents' access revoked: ${agentsRevoked}.`,
        ...(agentKeys.length
          ? [
              'API keys coding agents made while the previous password was in force (revoke any you do not recognise with till keys revoke KEY_ID):',
              ...keyLines,
            ]
          : []),
        ...(generated ? [`Password (shown once): ${password}`] : []),
      ].join('\n'),
    );
    return;
  }
  if (sub === 'reset-two-factor') {
    const email = takeOption(args, '--email');
    noneLeft(args);
    if (!email) throw new UsageError('users reset-two-factor needs --email EMAIL');
    // A locked-out user (no authenticator, no recovery code, no passkey): the operator checks who asks, then removes them all.
    const reset = await withDatabase(async ({ db }) => {
      const user = await findUserByEmail(db, email);
      if (!user) throw new UsageError(`no user with email ${email}`);
      const totp = await removeTotp(db, user.id);
      const passkeys = await removeAllPasskeys(db, user.id);
      await endAllUserSessions(db, user.id);
      return { user, totp, passkeys };
    });
    printResult(
      json,
      { userId: reset.user.id, email: reset.user.email, authenticatorRemoved: reset.totp, passkeysRemoved: reset.passkeys },
      `Second factors of ${reset.user.email} removed (authenticator app: ${reset.totp ? 'yes' : 'none'}, passkeys: ${reset.passkeys}); its sessions are signed out. It signs in with its password and sets up a second factor again.`,
    );
    return;
  }
  throw new UsageError(
    `users commands: create --merchant MERCHANT_ID --email EMAIL [--role ${ROLES.join('|')}] [--password-stdin] [--json] | list --merchant MERCHANT_ID [--json] | set-role --email EMAIL --role ${ROLES.join('|')} [--json] | reset-password --email EMAIL [--password-stdin] [--keep-agents] [--json] | reset-two-factor --email EMAIL [--json]`,
  );
}

/** `--role`, one of the roles (accounts/roles.ts); undefined when not given. */
function roleOption(args: string[]) {
  const role = takeOption(args, '--role');
  if (role === undefined) return undefined;
  if (!isRole(role)) throw new UsageError(`--role must be one of ${ROLES.join(', ')}, not ${JSON.stringify(role)}`);
  return role;
}

function usage(error: unknown): never {
  if (error instanceof LastOwnerError) throw new UsageError(`refused: ${error.message}`);
  if (error instanceof UserError) throw new UsageError(error.message);
  throw error;
}
