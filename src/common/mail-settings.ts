import type { Mode } from './modes.ts';
import { redactUrl } from './redact.ts';

/**
 * How mail leaves Till. `implicit`: TLS from the first byte (smtps://, port 465); `starttls`: the
 * session must be upgraded with STARTTLS before anything is sent (smtp://, port 587); `none`: plain
 * text, for a mail catcher on a developer's machine, refused when the deployment serves live mode.
 */
export type SmtpSettings = { host: string; port: number; tls: 'implicit' | 'starttls' | 'none'; user: string | undefined; password: string | undefined };

export type MailSettings = {
  /** Unset: no mail leaves Till; each is kept, seen on the sandbox's mail page and by `till mail list`. */
  smtp: SmtpSettings | undefined;
  /** TILL_SMTP_URL as logs and `till doctor` may show it: no user, no password. */
  smtpShown: string | undefined;
  /** The From of every mail, `Name <address>` or an address. */
  from: string;
  /** How long one SMTP step (connecting, the greeting, any answer) may take before the attempt is retried (TILL_SMTP_TIMEOUT_MS). */
  timeoutMs: number;
};

type Refuse = (setting: string, message: string) => Error;

const ADDRESS = /^[^\s@<>"]+@[^\s@<>"]+\.[^\s@<>"]+$/;
const NAMED_ADDRESS = /^([^<>\r\n"]*|"[^"\r\n]*")\s*<([^\s@<>"]+@[^\s@<>"]+\.[^\s@<>"]+)>$/;

/** The address of a From, `Name <address>` or `address`; undefined when it is neither (or holds a line break). */
export function fromAddress(from: string): string | undefined {
  if (/[\r\n]/.test(from)) return undefined;
  const trimmed = from.trim();
  if (ADDRESS.test(trimmed)) return trimmed;
  return NAMED_ADDRESS.exec(trimmed)?.[2];
}

/**
 * TILL_SMTP_URL (`smtps://user:password@host[:465]`, `smtp://user:password@host[:587]`, with
 * `?tls=none` for a plain local catcher) and TILL_MAIL_FROM, validated; `refuse` makes the error that
 * names the setting at fault. A deployment that serves live mode sends over TLS only.
 */
export function loadMailSettings(env: NodeJS.ProcessEnv, modes: readonly Mode[], refuse: Refuse): MailSettings {
  const raw = env.TILL_SMTP_URL?.trim() || undefined;
  const fromSetting = env.TILL_MAIL_FROM?.trim() || undefined;
  const from = fromSetting ?? 'Till <till@localhost>';
  const timeoutText = env.TILL_SMTP_TIMEOUT_MS?.trim() || '30000';
  const timeoutMs = Number(timeoutText);
  if (!/^\d+$/.test(timeoutText) || timeoutMs < 100 || timeoutMs > 600_000)
    throw refuse('TILL_SMTP_TIMEOUT_MS', `${JSON.stringify(timeoutText)} must be a whole number of milliseconds from 100 to 600000`);
  if (fromSetting && !fromAddress(from))
    throw refuse('TILL_MAIL_FROM', `${JSON.stringify(from)} is not an address: write Name <address@example.com> or address@example.com`);
  if (!raw) return { smtp: undefined, smtpShown: undefined, from, timeoutMs };
  if (!fromSetting)
    throw refuse('TILL_MAIL_FROM', 'is required with TILL_SMTP_URL: the address mails are sent from, e.g. Shop payments <payments@example.com>');
  const shown = redactUrl(raw);
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw refuse('TILL_SMTP_URL', `${shown} is not a URL: write smtps://user:password@host:465 or smtp://user:password@host:587`);
  }
  if (url.protocol !== 'smtps:' && url.protocol !== 'smtp:') throw refuse('TILL_SMTP_URL', `${shown} must start with smtps:// (TLS) or smtp:// (STARTTLS)`);
  if (!url.hostname) throw refuse('TILL_SMTP_URL', `${shown} names no host`);
  const tlsParameter = url.searchParams.get('tls');
  if (tlsParameter !== null && tlsParameter !== 'none') throw refuse('TILL_SMTP_URL', `?tls=${tlsParameter} is not known: the only parameter is ?tls=none`);
  if (tlsParameter === 'none' && url.protocol === 'smtps:') throw refuse('TILL_SMTP_URL', '?tls=none goes with smtp://, not smtps://');
  const tls = url.protocol === 'smtps:' ? 'implicit' : tlsParameter === 'none' ? 'none' : 'starttls';
  if (tls === 'none' && modes.includes('live'))
    throw refuse('TILL_SMTP_URL', `${shown} sends in plain text (?tls=none), refused when live mode is served: use smtps:// or smtp:// (STARTTLS)`);
  const port = url.port ? Number(url.port) : tls === 'implicit' ? 465 : 587;
  return {
    smtp: {
      host: url.hostname.replace(/^\[|\]$/g, ''),
      port,
      tls,
      user: url.username ? decodeURIComponent(url.username) : undefined,
      password: url.password ? decodeURIComponent(url.password) : undefined,
    },
    smtpShown: `${url.protocol}//${url.host}${tls === 'none' ? ' (plain text)' : tls === 'starttls' ? ' (STARTTLS)' : ' (TLS)'}`,
    from,
    timeoutMs,
  };
}
