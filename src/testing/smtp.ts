// A real SMTP server in the test's process (the `smtp-server` package), and what it received, parsed
// with a real MIME parser (`mailparser`): a mail provider stand-in as RFC 5321 describes one.
import { type ParsedMail, simpleParser } from 'mailparser';
import { SMTPServer, type SMTPServerDataStream, type SMTPServerSession } from 'smtp-server';
import type { AppContext } from '../context.ts';
import { createMailTransport } from '../mail/transport.ts';
import { type MailWorker, startMailWorker } from '../mail/worker.ts';
import { renderMail } from '../web/mail/templates.ts';

export type ReceivedMail = { envelopeTo: string[]; raw: string; parsed: ParsedMail };

/** What the server does with the next message: take it, refuse it with a code, drop the connection, or never answer. */
export type Verdict = 'accept' | { refuse: number; message: string } | 'drop' | 'hang';

export type TestSmtpServer = {
  url: string;
  port: number;
  received: ReceivedMail[];
  /** Decides each message as it arrives (its count so far, from 0); accepts every one unless set. */
  verdict: (index: number) => Verdict;
  /** Called once a message has been accepted (the 250 is on its way). */
  onAccepted?: (mail: ReceivedMail, index: number) => void;
  close(): Promise<void>;
};

/** An SMTP server on a free port of 127.0.0.1: no TLS, no login (TILL_SMTP_URL `smtp://127.0.0.1:PORT?tls=none`). */
export async function startSmtpServer(): Promise<TestSmtpServer> {
  let arrived = 0;
  const sockets = new Set<import('node:net').Socket>();
  const state: TestSmtpServer = {
    url: '',
    port: 0,
    received: [],
    verdict: () => 'accept',
    close: async () => {},
  };
  const server = new SMTPServer({
    authOptional: true,
    disabledCommands: ['STARTTLS', 'AUTH'],
    logger: false,
    onConnect(session, callback) {
      callback();
      void session;
    },
    onData(stream: SMTPServerDataStream, session: SMTPServerSession, callback) {
      const chunks: Buffer[] = [];
      stream.on('data', (chunk: Buffer) => chunks.push(chunk));
      stream.on('end', async () => {
        const index = arrived++;
        const verdict = state.verdict(index);
        if (verdict === 'hang') return;
        if (verdict === 'drop') {
          for (const socket of sockets) socket.destroy();
          return;
        }
        if (verdict !== 'accept') {
          const error = Object.assign(new Error(verdict.message), { responseCode: verdict.refuse });
          return callback(error);
        }
        const raw = Buffer.concat(chunks).toString('utf8');
        const mail: ReceivedMail = { envelopeTo: session.envelope.rcptTo.map((r) => r.address), raw, parsed: await simpleParser(raw) };
        state.received.push(mail);
        callback();
        state.onAccepted?.(mail, index);
      });
    },
  });
  // A client killed mid-conversation resets its connection: that is what the crash tests do, not an error.
  server.on('error', () => {});
  server.server.on('connection', (socket: import('node:net').Socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.server.address() as { port: number };
  state.port = port;
  state.url = `smtp://127.0.0.1:${port}?tls=none`;
  state.close = () =>
    new Promise<void>((resolve) => {
      for (const socket of sockets) socket.destroy();
      server.close(() => resolve());
    });
  return state;
}

/** The mails received for `address`. */
export const mailsTo = (server: TestSmtpServer, address: string) => server.received.filter((mail) => mail.envelopeTo.includes(address));

/** The service's mail worker, sending over its TILL_SMTP_URL (each SMTP step bounded to 1 s) and looking for mail every 20 ms. */
export function startSmtpMailWorker(context: AppContext): MailWorker {
  return startMailWorker(context, {
    render: (mail) => renderMail({ db: context.db, baseUrl: context.config.baseUrl, secretKey: context.config.secretKey }, mail),
    transport: createMailTransport(context.config.mail, 1_000),
    pollIntervalMs: 20,
  });
}
