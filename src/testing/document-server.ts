// A web server on 127.0.0.1 serving what the test asks at each path: coding agents' Client ID
// Metadata Documents, well formed or not.
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

type Handler = (request: IncomingMessage, response: ServerResponse) => void;

/** A document server on 127.0.0.1: each path answers as its handler says, and every request and connection is counted. */
export async function startDocumentServer() {
  const handlers = new Map<string, Handler>();
  const requests = new Map<string, number>();
  let connections = 0;
  const server = createServer((request, response) => {
    const path = request.url ?? '/';
    requests.set(path, (requests.get(path) ?? 0) + 1);
    const handler = handlers.get(path);
    if (handler) handler(request, response);
    else response.writeHead(404).end('not found');
  });
  server.on('connection', () => connections++);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  const origin = `http://127.0.0.1:${port}`;
  return {
    port,
    origin,
    connections: () => connections,
    requestsTo: (path: string) => requests.get(path) ?? 0,
    /** Serves a handler at a fresh path; returns the document's URL. */
    serve(path: string, handler: Handler): string {
      handlers.set(path, handler);
      return `${origin}${path}`;
    },
    /** Serves a JSON document, made from its own URL, at a path. */
    serveDocument(path: string, document: (url: string) => unknown, headers: Record<string, string> = {}): string {
      return this.serve(path, (_request, response) => {
        response.writeHead(200, { 'content-type': 'application/json', ...headers }).end(JSON.stringify(document(`${origin}${path}`)));
      });
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

export type DocumentServer = Awaited<ReturnType<typeof startDocumentServer>>;
