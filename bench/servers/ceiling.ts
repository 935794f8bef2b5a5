// The ceiling for the sessions bench: a bare node:http server doing the one INSERT of
// POST /api/checkout/v2/payment_session through the same driver as Till, with no framework,
// authentication or validation. Started by bench/sessions.ts with Till's settings in the
// environment and BENCH_MERCHANT_ID naming the merchant the rows belong to.
import { createServer } from 'node:http';
import { newId } from '../../src/common/ids.ts';
import { loadConfig } from '../../src/config.ts';
import { openDatabase } from '../../src/db/index.ts';
import { sessionCreatedBody } from '../../src/sessions/views.ts';

const config = loadConfig();
const merchantId = process.env.BENCH_MERCHANT_ID;
if (!merchantId) throw new Error('BENCH_MERCHANT_ID is required');
const { db, close } = openDatabase(config);

const server = createServer(async (request, response) => {
  if (request.method !== 'POST') {
    response.writeHead(204).end();
    return;
  }
  const chunks: Buffer[] = [];
  for await (const chunk of request) chunks.push(chunk as Buffer);
  const body = JSON.parse(Buffer.concat(chunks).toString()) as { amount: number; currency: string; orderId?: string; concept?: string; successUrl?: string };
  const now = Date.now();
  const sessionId = newId('ps_');
  await db
    .insertInto('payment_sessions')
    .values({
      id: sessionId,
      merchant_id: merchantId,
      order_id: body.orderId ?? null,
      order_type: 'TRANSIENT',
      status: 'OPEN',
      amount_minor: BigInt(Math.round(body.amount * 100)),
      currency: body.currency,
      min_amount_minor: null,
      editable: 0,
      concept: body.concept ?? null,
      success_url: body.successUrl ?? null,
      cancel_url: null,
      fail_url: null,
      pay_to: null,
      expires_at: now + config.sessionTtlSeconds * 1000,
      created_at: now,
      updated_at: now,
      version: 1,
      mode: config.mode,
    })
    .execute();
  response.writeHead(201, { 'content-type': 'application/json; charset=utf-8' }).end(JSON.stringify(sessionCreatedBody(config.baseUrl, sessionId)));
});

process.on('SIGTERM', () => server.close(() => void close()));
server.listen(config.port, config.host);
