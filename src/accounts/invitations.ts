import { createHash, randomBytes } from 'node:crypto';
import { newId } from '../common/ids.ts';
import type { Mode } from '../common/modes.ts';
import type { Db } from '../db/index.ts';
import { queueMail } from '../mail/outbox.ts';
import { type Actor, inTransaction, recordActivity } from '../merchants/events.ts';
import { findMerchant } from '../merchants/merchants.ts';
import { ROLE_LABELS, type Role } from './roles.ts';
import { createUser, emailProblem, findUserByEmail, normalizeEmail, passwordProblem, type User, UserError } from './users.ts';

/**
 * The owner of `invitations`: a member invited by email to a merchant's team, with a role. The link's
 * token is shown once, in the mail, and stored as its SHA-256; it works once, for 7 days, until
 * revoked; accepting it makes the user, with the password the invitee chooses.
 */
export const INVITATION_LIFETIME_MS = 7 * 24 * 3_600_000;
export const INVITATION_PATH = '/invitations/accept';

export type Invitation = {
  id: string;
  merchantId: string;
  email: string;
  role: Role;
  invitedBy: string | null;
  createdAt: number;
  expiresAt: number;
  acceptedAt: number | null;
  revokedAt: number | null;
};

/** Why a link cannot be used: each has its own words on the refusal page. */
export type InvitationState = 'pending' | 'accepted' | 'revoked' | 'expired';

const hashOf = (token: string) => createHash('sha256').update(token).digest('hex');

type Row = {
  id: string;
  merchant_id: string;
  email: string;
  role: string;
  invited_by: string | null;
  created_at: number;
  expires_at: number;
  accepted_at: number | null;
  revoked_at: number | null;
};
const toInvitation = (row: Row): Invitation => ({
  id: row.id,
  merchantId: row.merchant_id,
  email: row.email,
  role: row.role as Role,
  invitedBy: row.invited_by,
  createdAt: Number(row.created_at),
  expiresAt: Number(row.expires_at),
  acceptedAt: row.accepted_at === null ? null : Number(row.accepted_at),
  revokedAt: row.revoked_at === null ? null : Number(row.revoked_at),
});

export const stateOf = (invitation: Invitation, now: number): InvitationState => {
  if (invitation.acceptedAt !== null) return 'accepted';
  if (invitation.revokedAt !== null) return 'revoked';
  return invitation.expiresAt <= now ? 'expired' : 'pending';
};

/** Why an invitation link was refused: its state, none of ours, or its address taken by a user made since. */
export type InvitationRefusal = Exclude<InvitationState, 'pending'> | 'unknown' | 'taken';

/** A refused invitation, naming the form field at fault. */
export class InvitationError extends UserError {
  readonly field: 'email' | 'role' | 'password';
  constructor(field: 'email' | 'role' | 'password', message: string) {
    super(message);
    this.field = field;
  }
}

/**
 * Invites `email` to the merchant's team as `role`: the invitation, its mail and its line in the
 * activity log in one transaction. An earlier pending invitation of the same address is revoked (the
 * newest link is the one that works). Refused for an address that already has a Till user.
 */
export async function inviteMember(
  db: Db,
  input: { merchantId: string; email: string; role: Role; actor: Actor },
  at: { now: number; baseUrl: string; mailMode: Mode },
): Promise<Invitation> {
  const email = normalizeEmail(input.email);
  const problem = emailProblem(email);
  if (problem) throw new InvitationError('email', `${problem}: write it as name@example.com`);
  const existing = await findUserByEmail(db, email);
  if (existing)
    throw new InvitationError(
      'email',
      existing.merchantId === input.merchantId ? 'is already a member of this team' : 'already has a Till sign-in of another business',
    );
  const token = randomBytes(32).toString('base64url');
  const invitation: Invitation = {
    id: newId('inv_'),
    merchantId: input.merchantId,
    email,
    role: input.role,
    invitedBy: input.actor.kind === 'user' ? input.actor.id : null,
    createdAt: at.now,
    expiresAt: at.now + INVITATION_LIFETIME_MS,
    acceptedAt: null,
    revokedAt: null,
  };
  return inTransaction(db, async (trx) => {
    const merchant = await findMerchant(trx, input.merchantId);
    if (!merchant) throw new UserError(`no merchant ${input.merchantId}`);
    await trx
      .updateTable('invitations')
      .set({ revoked_at: at.now })
      .where('merchant_id', '=', input.merchantId)
      .where('email', '=', email)
      .where('accepted_at', 'is', null)
      .where('revoked_at', 'is', null)
      .execute();
    await trx
      .insertInto('invitations')
      .values({
        id: invitation.id,
        merchant_id: invitation.merchantId,
        email,
        role: invitation.role,
        token_hash: hashOf(token),
        invited_by: invitation.invitedBy,
        created_at: at.now,
        expires_at: invitation.expiresAt,
        accepted_at: null,
        revoked_at: null,
      })
      .execute();
    await queueMail(
      trx,
      {
        mode: at.mailMode,
        merchantId: input.merchantId,
        userId: null,
        cause: `invitation:${invitation.id}`,
        recipient: email,
        data: {
          kind: 'invitation',
          merchantName: merchant.name,
          invitedBy: input.actor.label,
          role: ROLE_LABELS[input.role],
          link: `${at.baseUrl}${INVITATION_PATH}?token=${token}`,
          expiresAt: invitation.expiresAt,
        },
      },
      at.now,
    );
    await recordActivity(trx, input.merchantId, input.actor, { type: 'invitation_sent', mode: null, detail: { email, role: input.role } }, at.now);
    return invitation;
  });
}

/** The merchant's invitations not yet accepted, revoked or expired, newest first. */
export async function listPendingInvitations(db: Db, merchantId: string, now: number): Promise<Invitation[]> {
  const rows = await db
    .selectFrom('invitations')
    .selectAll()
    .where('merchant_id', '=', merchantId)
    .where('accepted_at', 'is', null)
    .where('revoked_at', 'is', null)
    .where('expires_at', '>', now)
    .orderBy('created_at', 'desc')
    .execute();
  return rows.map(toInvitation);
}

/** Revokes one of the merchant's pending invitations, recorded in the activity log. Undefined when it has no such pending invitation. */
export async function revokeInvitation(db: Db, input: { merchantId: string; id: string; actor: Actor }, now: number): Promise<Invitation | undefined> {
  return inTransaction(db, async (trx) => {
    const row = await trx.selectFrom('invitations').selectAll().where('id', '=', input.id).where('merchant_id', '=', input.merchantId).executeTakeFirst();
    if (!row || stateOf(toInvitation(row), now) !== 'pending') return undefined;
    await trx.updateTable('invitations').set({ revoked_at: now }).where('id', '=', row.id).where('revoked_at', 'is', null).execute();
    await recordActivity(trx, input.merchantId, input.actor, { type: 'invitation_revoked', mode: null, detail: { email: row.email, role: row.role } }, now);
    return toInvitation(row);
  });
}

/** The invitation of a link, with its merchant's name; undefined for a token that is none of ours. */
export async function invitationOfToken(db: Db, token: string): Promise<(Invitation & { merchantName: string }) | undefined> {
  const row = await db
    .selectFrom('invitations')
    .innerJoin('merchants', 'merchants.id', 'invitations.merchant_id')
    .selectAll('invitations')
    .select('merchants.name as merchant_name')
    .where('token_hash', '=', hashOf(token))
    .executeTakeFirst();
  return row && { ...toInvitation(row), merchantName: row.merchant_name };
}

/**
 * Accepts an invitation: marked accepted (once: a second use, even racing, finds it used), the user
 * made with its role and the chosen password, and the acceptance recorded, in one transaction. A
 * link that cannot be used is refused with its state; a password too weak leaves it unused.
 */
export async function acceptInvitation(
  db: Db,
  input: { token: string; password: string; ip: string | null; userAgent: string | null },
  now: number,
): Promise<{ user: User } | { refused: InvitationRefusal }> {
  const problem = passwordProblem(input.password);
  if (problem) throw new InvitationError('password', problem);
  const invitation = await invitationOfToken(db, input.token);
  if (!invitation) return { refused: 'unknown' };
  const state = stateOf(invitation, now);
  if (state !== 'pending') return { refused: state };
  if (await findUserByEmail(db, invitation.email)) return { refused: 'taken' };
  return inTransaction(db, async (trx) => {
    const taken = await trx
      .updateTable('invitations')
      .set({ accepted_at: now })
      .where('id', '=', invitation.id)
      .where('accepted_at', 'is', null)
      .where('revoked_at', 'is', null)
      .where('expires_at', '>', now)
      .executeTakeFirst();
    if (taken.numUpdatedRows === 0n) return { refused: 'accepted' as const };
    const user = await createUser(trx, { merchantId: invitation.merchantId, email: invitation.email, password: input.password, role: invitation.role }, now);
    await recordActivity(
      trx,
      invitation.merchantId,
      { kind: 'user', id: user.id, label: user.email, ip: input.ip, userAgent: input.userAgent },
      { type: 'invitation_accepted', mode: null, detail: { email: user.email, role: user.role } },
      now,
    );
    return { user };
  });
}
