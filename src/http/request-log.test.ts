// What `till serve` logs per request: one entry, when it is answered, as JSON for log pipelines or as
// one readable line at a terminal. SQLite only: logging does not depend on the engine.
import assert from 'node:assert/strict';
import { Writable } from 'node:stream';
import { test } from 'node:test';
import { pino } from 'pino';
import { createLogger } from '../main.ts';
import { startListeningTestService } from '../testing/harness.ts';

/** A stream keeping what is written to it. */
function collector() {
  let text = '';
  const stream = new Writable({
    write(chunk, _encoding, done) {
      text += chunk;
      done();
    },
  });
  return { stream, text: () => text };
}

test('with info logging, a request is one JSON line: its id, method, URL, status and time', async () => {
  const lines: Record<string, unknown>[] = [];
  const log = pino({ level: 'info' }, { write: (line: string) => void lines.push(JSON.parse(line)) });
  const service = await startListeningTestService('sqlite', {}, { log });
  try {
    for (const [path, status] of [
      ['/healthz', 200],
      ['/no/such/route?x=1', 404],
    ] as const) {
      const response = await fetch(`${service.baseUrl}${path}`, { headers: { 'x-request-id': `one-line-${status}` } });
      assert.equal(response.status, status);
      await response.arrayBuffer();
      const mine = lines.filter((line) => line.reqId === `one-line-${status}`);
      assert.equal(mine.length, 1, JSON.stringify(mine));
      assert.equal(mine[0]!.msg, 'request completed');
      assert.deepEqual(mine[0]!.req, { method: 'GET', url: path });
      assert.deepEqual(mine[0]!.res, { statusCode: status });
      assert.equal(typeof mine[0]!.responseTime, 'number');
    }
  } finally {
    await service.stop();
  }
});

test('in the readable format (a terminal), a request is one line: time, level, method, URL, status, duration and its request id', async () => {
  const output = collector();
  const log = await createLogger({ logLevel: 'info' }, { format: 'pretty', destination: output.stream });
  const service = await startListeningTestService('sqlite', {}, { log });
  try {
    const response = await fetch(`${service.baseUrl}/healthz`);
    await response.arrayBuffer();
    log.warn('the payout wallet is not set');
    const lines = output.text().trimEnd().split('\n');
    const requests = lines.filter((line) => line.includes('/healthz'));
    assert.equal(requests.length, 1, output.text());
    assert.match(requests[0]!, /^\[\d\d:\d\d:\d\d\.\d{3}\] INFO: GET \/healthz → 200 in \d+ ms {"reqId":"[^"]+"}$/);
    assert.match(lines.at(-1)!, /^\[\d\d:\d\d:\d\d\.\d{3}\] WARN: the payout wallet is not set$/);
    assert.ok(!lines.some((line) => line.trimStart().startsWith('{')), output.text());
  } finally {
    await service.stop();
  }
});
