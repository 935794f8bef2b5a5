// The paid bench's load: every request carries its own pre-signed proof and is sent exactly once,
// `connections` at a time over keep-alive connections, each latency timed to the microsecond
// (autocannon rounds to whole milliseconds, too coarse for the latency a server adds). Reads its
// job as JSON from the file named by the first argument, prints the figures as JSON.
import { readFileSync } from 'node:fs';
import { Agent, request as httpRequest } from 'node:http';
import { percentile } from '../support.ts';

export type PaidJob = { origin: string; connections: number; requests: { path: string; headers: Record<string, string> }[]; expectedStatus: number };
export type PaidLoadResult = {
  total: number;
  seconds: number;
  requestsPerSecond: number;
  latencyP50: number;
  latencyP90: number;
  latencyP99: number;
  /** Answers other than expectedStatus, and errors, by status (or "error"). */
  unexpected: Record<string, number>;
  firstUnexpected?: string;
};

const job = JSON.parse(readFileSync(process.argv[2]!, 'utf8')) as PaidJob;
const origin = new URL(job.origin);
const agent = new Agent({ keepAlive: true, maxSockets: job.connections });

function send(path: string, headers: Record<string, string>): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const outgoing = httpRequest({ host: origin.hostname, port: origin.port, path, method: 'GET', headers, agent }, (response) => {
      let body = '';
      response.setEncoding('utf8');
      response.on('data', (chunk: string) => (body += chunk));
      response.on('end', () => resolve({ status: response.statusCode ?? 0, body }));
      response.on('error', reject);
    });
    outgoing.on('error', reject);
    outgoing.end();
  });
}

const latencies: number[] = [];
const unexpected: Record<string, number> = {};
let firstUnexpected: string | undefined;
let next = 0;

async function worker(): Promise<void> {
  for (let index = next++; index < job.requests.length; index = next++) {
    const { path, headers } = job.requests[index]!;
    const started = performance.now();
    let outcome: string;
    try {
      const answer = await send(path, headers);
      outcome = String(answer.status);
      if (answer.status !== job.expectedStatus) firstUnexpected ??= `${answer.status} ${answer.body.slice(0, 300)}`;
    } catch (error) {
      outcome = 'error';
      firstUnexpected ??= (error as Error).message;
    }
    latencies.push(performance.now() - started);
    if (outcome !== String(job.expectedStatus)) unexpected[outcome] = (unexpected[outcome] ?? 0) + 1;
  }
}

const started = performance.now();
await Promise.all(Array.from({ length: job.connections }, worker));
const seconds = (performance.now() - started) / 1000;
agent.destroy();
const result: PaidLoadResult = {
  total: latencies.length,
  seconds,
  requestsPerSecond: latencies.length / seconds,
  latencyP50: percentile(latencies, 50),
  latencyP90: percentile(latencies, 90),
  latencyP99: percentile(latencies, 99),
  unexpected,
  ...(firstUnexpected ? { firstUnexpected } : {}),
};
process.stdout.write(JSON.stringify(result));
