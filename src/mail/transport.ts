import { createTransport } from 'nodemailer';
import SMTPConnection from 'nodemailer/lib/smtp-connection';
import { fromAddress, type MailSettings, type SmtpSettings } from '../common/mail-settings.ts';
import type { MailContent } from './kinds.ts';

export type OutgoingMail = MailContent & { id: string; to: string };
export type MailTransport = { send(mail: OutgoingMail): Promise<void>; close(): void };

/** nodemailer's connection options for the settings: TLS as TILL_SMTP_URL says, and no reading of files or URLs into a message. */
function connectionOptions(smtp: SmtpSettings, timeoutMs: number) {
  return {
    host: smtp.host,
    port: smtp.port,
    secure: smtp.tls === 'implicit',
    requireTLS: smtp.tls === 'starttls',
    ignoreTLS: smtp.tls === 'none',
    ...(smtp.user !== undefined ? { auth: { user: smtp.user, pass: smtp.password ?? '' } } : {}),
    connectionTimeout: timeoutMs,
    greetingTimeout: timeoutMs,
    socketTimeout: timeoutMs,
  };
}

/** Line breaks in a header's text would start a header of their own: none survive. */
export const oneLine = (text: string) => text.replace(/[\r\n\u2028\u2029]+/g, ' ').trim();

/** The domain of the From address, which every Message-ID is made in. */
const messageIdDomain = (settings: MailSettings) => fromAddress(settings.from)?.split('@')[1] ?? 'till.invalid';

/**
 * The mail's Message-ID: its outbox id, so a copy sent again after a crash (the server took it, the
 * process died before recording that) is the same message, which mail clients show once.
 */
export const messageIdOf = (settings: MailSettings, mailId: string) => `<${mailId}@${messageIdDomain(settings)}>`;

/** An SMTP transport over nodemailer (pooled connections). Undefined without TILL_SMTP_URL. */
export function createMailTransport(settings: MailSettings, timeoutMs = settings.timeoutMs): MailTransport | undefined {
  const { smtp } = settings;
  if (!smtp) return undefined;
  const transporter = createTransport({
    pool: true,
    maxConnections: 4,
    ...connectionOptions(smtp, timeoutMs),
    disableFileAccess: true,
    disableUrlAccess: true,
  });
  return {
    async send(mail) {
      await transporter.sendMail({
        from: settings.from,
        to: mail.to,
        subject: oneLine(mail.subject),
        text: mail.text,
        html: mail.html,
        headers: Object.fromEntries(Object.entries(mail.headers).map(([name, value]) => [name, oneLine(value)])),
        messageId: messageIdOf(settings, mail.id),
      });
    },
    close: () => transporter.close(),
  };
}

/** nodemailer's connection, with the two steps it keeps to itself: a command and the server's answer to it. */
type Conversation = SMTPConnection & { _sendCommand(command: string): void; _responseActions: ((answer: string) => void)[] };

function command(connection: Conversation, line: string): Promise<string> {
  return new Promise((resolve) => {
    connection._responseActions.push(resolve);
    connection._sendCommand(line);
  });
}

/**
 * A real conversation with the SMTP server up to RCPT, as `till doctor` runs it: connect (with TLS as
 * configured), log in, MAIL FROM the From address, RCPT TO it, then RSET and QUIT; nothing is sent.
 * Answers what went wrong, in the operator's words, or undefined when the server took all of it.
 */
export async function checkSmtpConversation(settings: MailSettings, timeoutMs = settings.timeoutMs): Promise<string | undefined> {
  const { smtp } = settings;
  const from = fromAddress(settings.from);
  if (!smtp || !from) return 'no SMTP server is configured';
  const connection = new SMTPConnection(connectionOptions(smtp, timeoutMs)) as Conversation;
  const failed = new Promise<string>((resolve) => connection.once('error', (error: Error) => resolve(`the server ${error.message}`)));
  const talk = async (): Promise<string | undefined> => {
    await new Promise<void>((resolve, reject) => connection.connect((error) => (error ? reject(error) : resolve())));
    if (smtp.user !== undefined)
      await new Promise<void>((resolve, reject) =>
        connection.login({ user: smtp.user!, pass: smtp.password ?? '' }, (error) =>
          error ? reject(new Error(`refused the login: ${error.message}`)) : resolve(),
        ),
      );
    const mailFrom = await command(connection, `MAIL FROM:<${from}>`);
    if (!mailFrom.startsWith('2')) return `refused MAIL FROM:<${from}>: ${mailFrom.trim()}`;
    const rcpt = await command(connection, `RCPT TO:<${from}>`);
    if (!rcpt.startsWith('2')) return `refused RCPT TO:<${from}>: ${rcpt.trim()}`;
    await command(connection, 'RSET');
    return undefined;
  };
  try {
    return await Promise.race([talk(), failed]);
  } catch (error) {
    return (error as Error).message;
  } finally {
    connection.quit();
    connection.close();
  }
}
