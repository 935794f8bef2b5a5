import {
  type AuthenticationResponseJSON,
  generateAuthenticationOptions,
  generateRegistrationOptions,
  type PublicKeyCredentialCreationOptionsJSON,
  type PublicKeyCredentialRequestOptionsJSON,
  type RegistrationResponseJSON,
  verifyAuthenticationResponse,
  verifyRegistrationResponse,
} from '@simplewebauthn/server';
import { openSecret, sealSecret } from '../common/secrets.ts';
import type { Db } from '../db/index.ts';

/**
 * Passkeys (WebAuthn) as a second factor, through @simplewebauthn/server; owner of `user_passkeys`.
 * The relying party is the service's own host (TILL_BASE_URL). A ceremony's challenge travels
 * sealed (bound to the user and the ceremony) in the browser's cookie, for five minutes; the
 * answer is verified against it, the user's own passkeys only, and the origin of TILL_BASE_URL.
 */
const CEREMONY_MS = 5 * 60_000;

export type RelyingParty = { baseUrl: string; secretKey: Buffer };
type Ceremony = 'register' | 'authenticate';

const rpOf = (rp: RelyingParty) => {
  const url = new URL(rp.baseUrl);
  return { id: url.hostname, origin: url.origin };
};
const binding = (ceremony: Ceremony, userId: string) => `webauthn:${ceremony}:${userId}`;

/** The sealed challenge to keep in the browser until the answer comes. */
function sealChallenge(rp: RelyingParty, ceremony: Ceremony, userId: string, challenge: string, now: number): string {
  return sealSecret(JSON.stringify({ challenge, expiresAt: now + CEREMONY_MS }), rp.secretKey, binding(ceremony, userId));
}

function openChallenge(rp: RelyingParty, ceremony: Ceremony, userId: string, sealed: string | undefined, now: number): string | undefined {
  if (!sealed) return undefined;
  try {
    const opened = JSON.parse(openSecret(sealed, rp.secretKey, binding(ceremony, userId))) as { challenge: string; expiresAt: number };
    return opened.expiresAt > now ? opened.challenge : undefined;
  } catch {
    return undefined;
  }
}

export type Passkey = { id: string; name: string; createdAt: number; lastUsedAt: number | null };

export async function listPasskeys(db: Db, userId: string): Promise<Passkey[]> {
  const rows = await db
    .selectFrom('user_passkeys')
    .select(['id', 'name', 'created_at', 'last_used_at'])
    .where('user_id', '=', userId)
    .orderBy('created_at')
    .execute();
  return rows.map((row) => ({
    id: row.id,
    name: row.name,
    createdAt: Number(row.created_at),
    lastUsedAt: row.last_used_at === null ? null : Number(row.last_used_at),
  }));
}

/** The options for the browser's `navigator.credentials.create`, and the sealed challenge to keep. */
export async function registrationOptions(
  db: Db,
  rp: RelyingParty,
  user: { id: string; email: string },
  now: number,
): Promise<{ options: PublicKeyCredentialCreationOptionsJSON; sealed: string }> {
  const { id } = rpOf(rp);
  const existing = await db.selectFrom('user_passkeys').select(['id', 'transports']).where('user_id', '=', user.id).execute();
  const options = await generateRegistrationOptions({
    rpName: 'Till',
    rpID: id,
    userName: user.email,
    userID: new TextEncoder().encode(user.id),
    attestationType: 'none',
    excludeCredentials: existing.map((row) => ({ id: row.id, transports: JSON.parse(row.transports) as string[] })),
    authenticatorSelection: { residentKey: 'preferred', userVerification: 'preferred' },
  });
  return { options, sealed: sealChallenge(rp, 'register', user.id, options.challenge, now) };
}

/** Verifies the browser's answer and stores the passkey; a refusal's reason otherwise. */
export async function registerPasskey(
  db: Db,
  rp: RelyingParty,
  userId: string,
  sealed: string | undefined,
  response: unknown,
  name: string,
  now: number,
): Promise<{ passkey: Passkey } | { refused: string }> {
  const challenge = openChallenge(rp, 'register', userId, sealed, now);
  if (!challenge) return { refused: 'The passkey request expired or was not started here: try again.' };
  const { id, origin } = rpOf(rp);
  let verified: Awaited<ReturnType<typeof verifyRegistrationResponse>>;
  try {
    verified = await verifyRegistrationResponse({
      response: response as RegistrationResponseJSON,
      expectedChallenge: challenge,
      expectedOrigin: origin,
      expectedRPID: id,
      requireUserVerification: false,
    });
  } catch {
    return { refused: 'The browser’s answer is not a valid passkey registration.' };
  }
  if (!verified.verified) return { refused: 'The passkey could not be verified.' };
  const { credential } = verified.registrationInfo;
  const taken = await db.selectFrom('user_passkeys').select('id').where('id', '=', credential.id).executeTakeFirst();
  if (taken) return { refused: 'This passkey is registered already.' };
  await db
    .insertInto('user_passkeys')
    .values({
      id: credential.id,
      user_id: userId,
      public_key: Buffer.from(credential.publicKey).toString('base64url'),
      counter: credential.counter,
      transports: JSON.stringify(credential.transports ?? []),
      name,
      created_at: now,
      last_used_at: null,
    })
    .execute();
  return { passkey: { id: credential.id, name, createdAt: now, lastUsedAt: null } };
}

/** The options for `navigator.credentials.get`: the user's own passkeys only. Undefined when the user has none. */
export async function authenticationOptions(
  db: Db,
  rp: RelyingParty,
  userId: string,
  now: number,
): Promise<{ options: PublicKeyCredentialRequestOptionsJSON; sealed: string } | undefined> {
  const mine = await db.selectFrom('user_passkeys').select(['id', 'transports']).where('user_id', '=', userId).execute();
  if (mine.length === 0) return undefined;
  const options = await generateAuthenticationOptions({
    rpID: rpOf(rp).id,
    allowCredentials: mine.map((row) => ({ id: row.id, transports: JSON.parse(row.transports) as string[] })),
    userVerification: 'preferred',
  });
  return { options, sealed: sealChallenge(rp, 'authenticate', userId, options.challenge, now) };
}

/**
 * Whether the browser's answer is a signature of this user's own passkey over the challenge; the
 * passkey's counter is moved on (a counter that went back is a cloned authenticator: refused).
 */
export async function verifyPasskey(
  db: Db,
  rp: RelyingParty,
  userId: string,
  sealed: string | undefined,
  response: unknown,
  now: number,
): Promise<true | string> {
  const challenge = openChallenge(rp, 'authenticate', userId, sealed, now);
  if (!challenge) return 'The passkey request expired or was not started here: try again.';
  const credentialId = (response as { id?: unknown } | null)?.id;
  if (typeof credentialId !== 'string') return 'The browser’s answer is not a passkey.';
  const row = await db.selectFrom('user_passkeys').selectAll().where('id', '=', credentialId).where('user_id', '=', userId).executeTakeFirst();
  if (!row) return 'This passkey is not one of yours.';
  const { id, origin } = rpOf(rp);
  try {
    const verified = await verifyAuthenticationResponse({
      response: response as AuthenticationResponseJSON,
      expectedChallenge: challenge,
      expectedOrigin: origin,
      expectedRPID: id,
      credential: { id: row.id, publicKey: Buffer.from(row.public_key, 'base64url'), counter: Number(row.counter), transports: JSON.parse(row.transports) },
      requireUserVerification: false,
    });
    if (!verified.verified) return 'The passkey’s signature is not right.';
    const moved = await db
      .updateTable('user_passkeys')
      .set({ counter: verified.authenticationInfo.newCounter, last_used_at: now })
      .where('id', '=', row.id)
      .where('counter', '=', row.counter)
      .executeTakeFirst();
    return moved.numUpdatedRows > 0n ? true : 'This passkey was used at the same moment elsewhere: try again.';
  } catch {
    return 'The passkey’s signature is not right.';
  }
}

/** Removes one of the user's passkeys (never another user's). */
export async function removePasskey(db: Db, userId: string, passkeyId: string): Promise<boolean> {
  const removed = await db.deleteFrom('user_passkeys').where('id', '=', passkeyId).where('user_id', '=', userId).executeTakeFirst();
  return removed.numDeletedRows > 0n;
}

/** Removes every passkey of a user (an operator's reset of their second factors); how many there were. */
export async function removeAllPasskeys(db: Db, userId: string): Promise<number> {
  const removed = await db.deleteFrom('user_passkeys').where('user_id', '=', userId).executeTakeFirst();
  return Number(removed.numDeletedRows);
}
