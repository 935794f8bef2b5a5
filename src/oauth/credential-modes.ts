import { type Mode, modeLabel } from '../common/modes.ts';
import type { Config } from '../config.ts';
import { isLoopbackClientId } from './client-metadata.ts';

// Every credential carries the mode it was made in (client credentials, coding agents' grants and
// their codes, refresh tokens and access tokens): it acts on that mode's data only, and only while
// the deployment serves that mode. These are the refusals, each naming why.

type ModeConfig = Pick<Config, 'modes'>;

/** Why a credential of `mode` is refused here, when the deployment does not serve that mode: "`made` for test mode, which …". */
export function unservedMode(config: ModeConfig, mode: Mode, made = 'this token was issued'): string | undefined {
  return config.modes.includes(mode) ? undefined : `${made} for ${modeLabel(mode)} mode, which this deployment does not serve`;
}

/** Why a token naming `claimed` is refused for a credential of `mode` (never, when the token names none: issued before modes). */
export function otherMode(claimed: Mode | undefined, mode: Mode): string | undefined {
  return claimed === undefined || claimed === mode
    ? undefined
    : `this token names ${modeLabel(claimed)} mode, but its credential is of ${modeLabel(mode)} mode`;
}

/** Why a coding agent's grant is refused: its reason (for the audit) and a message naming it. */
export type GrantRefusal = { reason: 'mode_not_served' | 'development_client'; message: string };

/**
 * Why a coding agent's grant can no longer be used, if it cannot: its mode is not served, or its
 * client is an agent under development on this machine (an http client_id on a loopback address)
 * and either the grant is live (such a client never gets live data) or the deployment no longer
 * accepts such clients. A refresh token must not outlive the rule that refuses the client's document.
 */
export function grantRefusal(
  config: ModeConfig & Pick<Config, 'oauthDevAllowLoopbackClients'>,
  grant: { mode: Mode; clientId: string },
  made = 'this token was issued',
): GrantRefusal | undefined {
  const unserved = unservedMode(config, grant.mode, made);
  if (unserved) return { reason: 'mode_not_served', message: unserved };
  if (!isLoopbackClientId(grant.clientId)) return undefined;
  if (grant.mode === 'live')
    return { reason: 'development_client', message: `the client ${grant.clientId} is a development client on this machine, which is never given live data` };
  if (!config.oauthDevAllowLoopbackClients)
    return {
      reason: 'development_client',
      message: `the client ${grant.clientId} is a development client on this machine, which this deployment does not accept (TILL_OAUTH_DEV_ALLOW_LOOPBACK_CLIENTS)`,
    };
  return undefined;
}
