// autocannon (its API, in a process of its own) for requests that rotate over sets of headers,
// one set per request in turn: the mcp bench's bearer tokens, one per grant. Reads its job as JSON
// from the file named by the first argument and prints autocannon's result as JSON, with
// `bodyFailures`: answers whose body is a JSON-RPC error or a tool result with isError.
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';

type Request = { method?: string; headers?: Record<string, string>; body?: string };
/** The part of autocannon's API used here (the package ships no types). */
type Autocannon = (options: {
  url: string;
  connections: number;
  duration: number;
  requests: { method: string; body?: string; setupRequest(request: Request): Request; onResponse(status: number, body: string): void }[];
}) => Promise<Record<string, unknown>>;
const autocannon = createRequire(import.meta.url)('autocannon') as Autocannon;

type Job = {
  url: string;
  method: 'GET' | 'POST' | 'PUT';
  headers: Record<string, string>;
  body?: string;
  headerSets: Record<string, string>[];
  connections: number;
  durationSeconds: number;
};

const job = JSON.parse(readFileSync(process.argv[2]!, 'utf8')) as Job;
let next = 0;
let bodyFailures = 0;
const result = await autocannon({
  url: job.url,
  connections: job.connections,
  duration: job.durationSeconds,
  requests: [
    {
      method: job.method,
      ...(job.body === undefined ? {} : { body: job.body }),
      setupRequest: (request) => ({ ...request, headers: { ...job.headers, ...job.headerSets[next++ % job.headerSets.length] } }),
      onResponse: (_status, body) => {
        if (/"error"\s*:|"isError"\s*:\s*true/.test(body)) bodyFailures++;
      },
    },
  ],
});
process.stdout.write(JSON.stringify({ ...result, bodyFailures }));
