// A TCP proxy a test controls, between Till instances and a server they depend on (PostgreSQL):
// `cut()` drops every open connection and refuses new ones, as a database that has gone away;
// `hold()` keeps new connections waiting, unanswered, as a slow network does; `loseAnswers()` passes
// requests on but drops what the server sends back, as a connection lost after a request was sent;
// `restore()` lets connections through again (the held ones too). The server itself is never touched.
import { once } from 'node:events';
import type { AddressInfo } from 'node:net';
import { connect, createServer, type Server, type Socket } from 'node:net';
import { Transform } from 'node:stream';

export type TcpProxy = {
  /** The port the proxy listens on (127.0.0.1). */
  port: number;
  /** Destroys every open connection, both ways, and closes each new one at once until restored. */
  cut(): void;
  /** New connections are accepted but wait, unanswered, until restored; open ones go on. */
  hold(): void;
  /** Requests still reach the server; whatever it sends back is dropped until restored. */
  loseAnswers(): void;
  restore(): void;
  readonly isCut: boolean;
  /** Connections accepted while cut, each closed at once. */
  readonly refused: number;
  close(): Promise<void>;
};

export async function startTcpProxy(target: { host: string; port: number }): Promise<TcpProxy> {
  const open = new Set<Socket>();
  let cut = false;
  let refused = 0;
  let holding = false;
  let losing = false;
  const held: Socket[] = [];
  const server = createServer((client) => {
    if (cut) {
      refused++;
      client.destroy();
      return;
    }
    if (holding) {
      client.pause();
      held.push(client);
      return;
    }
    pass(client);
  });
  function pass(client: Socket): void {
    const upstream = connect(target.port, target.host);
    for (const socket of [client, upstream]) {
      open.add(socket);
      socket.on('close', () => open.delete(socket));
      // A connection cut either way ends its pair; the error itself is expected here.
      socket.on('error', () => {});
    }
    client.on('close', () => upstream.destroy());
    upstream.on('close', () => client.destroy());
    client.pipe(upstream);
    const answers = new Transform({ transform: (chunk, _encoding, done) => done(null, losing ? undefined : chunk) });
    upstream.pipe(answers).pipe(client);
    client.resume();
  }
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as { port: number };
  return {
    port,
    cut() {
      cut = true;
      for (const socket of open) socket.destroy();
    },
    hold() {
      holding = true;
    },
    loseAnswers() {
      losing = true;
    },
    restore() {
      cut = false;
      holding = false;
      losing = false;
      for (const client of held.splice(0)) if (!client.destroyed) pass(client);
    },
    get isCut() {
      return cut;
    },
    get refused() {
      return refused;
    },
    async close() {
      for (const socket of [...open, ...held]) socket.destroy();
      server.close();
      await once(server, 'close');
    },
  };
}

/** A PostgreSQL URL's server behind a new proxy: the proxy, and the same URL through it. */
export async function proxiedPostgres(databaseUrl: string): Promise<{ proxy: TcpProxy; url: string }> {
  const url = new URL(databaseUrl);
  const proxy = await startTcpProxy({ host: url.hostname, port: Number(url.port || 5432) });
  url.port = String(proxy.port);
  return { proxy, url: url.toString() };
}

/**
 * A TCP port that forwards to the service: the service's base URL must be known before it listens
 * (its form posts are refused from any other origin), and the paying service listens on a port of
 * its own choosing.
 */
export async function forwardingPort(): Promise<{ server: Server; port: number; forwardTo(port: number): void }> {
  let target = 0;
  const server = createServer((socket) => {
    const upstream = connect(target, '127.0.0.1');
    socket.pipe(upstream).pipe(socket);
    const end = () => {
      socket.destroy();
      upstream.destroy();
    };
    socket.on('error', end);
    upstream.on('error', end);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    server,
    port: (server.address() as AddressInfo).port,
    forwardTo(port) {
      target = port;
    },
  };
}
