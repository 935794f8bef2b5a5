import { ConfigError } from '../config.ts';

export type WebhookSettings = {
  /** Delay before each retry, in milliseconds; the number of entries is the number of retries. */
  retrySchedule: number[];
  /** Lets deliveries reach a receiver on this machine (127.0.0.0/8, ::1); on by default in the sandbox. */
  allowLoopbackTargets: boolean;
  /** Lifts the SSRF guard for every private address, for local development and tests only. */
  allowPrivateTargets: boolean;
};

/** About three days: 5 s, 5 min, 30 min, 2 h, 5 h, 10 h, 14 h, 20 h, 24 h. */
export const DEFAULT_RETRY_SCHEDULE = '5s,5m,30m,2h,5h,10h,14h,20h,24h';

const UNIT_MS: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 };

export function parseRetrySchedule(text: string): number[] {
  return text.split(',').map((part) => {
    const match = /^\s*(\d+(?:\.\d+)?)(ms|s|m|h|d)\s*$/.exec(part);
    if (!match) throw new ConfigError('TILL_WEBHOOK_RETRY_SCHEDULE', `${JSON.stringify(part.trim())} is not a duration; write a comma-separated list such as 1s,2s,5s (units ms, s, m, h, d)`);
    return Math.round(Number(match[1]) * UNIT_MS[match[2]!]!);
  });
}

function flag(env: NodeJS.ProcessEnv, name: string, fallback: boolean): boolean {
  const value = env[name];
  if (value === undefined || value === '') return fallback;
  if (value !== 'true' && value !== 'false') throw new ConfigError(name, `${JSON.stringify(value)} — must be true or false`);
  return value === 'true';
}

/**
 * The webhook settings, from the environment, validated with a message that names the bad setting.
 * A merchant's first receiver is usually on their own machine, so the sandbox reaches loopback
 * unless told not to; live mode reaches only public addresses unless the operator allows more.
 */
export function loadWebhookSettings(env: NodeJS.ProcessEnv, mode: 'sandbox' | 'live'): WebhookSettings {
  return {
    retrySchedule: parseRetrySchedule(env.TILL_WEBHOOK_RETRY_SCHEDULE || DEFAULT_RETRY_SCHEDULE),
    allowLoopbackTargets: flag(env, 'TILL_WEBHOOK_ALLOW_LOOPBACK_TARGETS', mode === 'sandbox'),
    allowPrivateTargets: flag(env, 'TILL_WEBHOOK_ALLOW_PRIVATE_TARGETS', false),
  };
}
