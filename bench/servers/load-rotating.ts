// autocannon (its API, in a process of its own) for requests that change from one to the next:
// a mix of request kinds taken in turn, each rotating over its own paths (rows spread over a table),
// header sets (the mcp bench's bearer tokens, one per grant) and a body whose `[<id>]` becomes a
// fresh id. Reads its job as JSON from the file named by the first argument and prints autocannon's
// result as JSON, with `unexpected`: answers whose status is not the kind's expected one, or (for a
// JSON-RPC kind) whose body is a JSON-RPC error or a tool result with isError.
import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import type { MixedJob } from '../support.ts';

type Request = { method?: string; path?: string; headers?: Record<string, string>; body?: string };
type Context = { kind?: number };
/** The part of autocannon's API used here (the package ships no types). */
type Autocannon = (options: {
  url: string;
  connections: number;
  duration?: number;
  amount?: number;
  requests: { setupRequest(request: Request, context: Context): Request; onResponse(status: number, body: string, context: Context): void }[];
}) => Promise<Record<string, unknown>>;
const autocannon = createRequire(import.meta.url)('autocannon') as Autocannon;

const job = JSON.parse(readFileSync(process.argv[2]!, 'utf8')) as MixedJob;
const prefix = randomUUID().slice(0, 8);
const turns = job.kinds.map(() => 0);
let next = 0;
let ids = 0;
let unexpected = 0;
const result = await autocannon({
  url: job.origin,
  connections: job.connections,
  ...(job.amount ? { amount: job.amount } : { duration: job.durationSeconds }),
  requests: [
    {
      setupRequest: (request, context) => {
        const index = next++ % job.kinds.length;
        const kind = job.kinds[index]!;
        const turn = turns[index]!++;
        context.kind = index;
        return {
          ...request,
          method: kind.method,
          path: kind.paths[turn % kind.paths.length],
          headers: { ...kind.headers, ...(kind.headerSets ? kind.headerSets[turn % kind.headerSets.length] : {}) },
          ...(kind.body === undefined ? { body: undefined } : { body: kind.body.replace('[<id>]', `${prefix}-${++ids}`) }),
        };
      },
      onResponse: (status, body, context) => {
        const kind = job.kinds[context.kind ?? 0]!;
        if (status !== kind.expectedStatus || (kind.jsonRpc && /"error"\s*:|"isError"\s*:\s*true/.test(body))) unexpected++;
      },
    },
  ],
});
process.stdout.write(JSON.stringify({ ...result, unexpected }));
