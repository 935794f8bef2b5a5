// A merchant backend's webhook receiver: checks each delivery and answers 200.
//   node docs/examples/webhook-receiver.mjs      (npm install standardwebhooks)
// PORT: where it listens (default 3000).
// WEBHOOK_KEY: the webhook key (X-Webhook-Api-Key) and WEBHOOK_SECRET: the signing secret, both
// printed by `till merchant set-webhook`. A delivery that does not match them gets 401, so Till
// retries it; a match gets 200.
import { timingSafeEqual } from 'node:crypto';
import { createServer } from 'node:http';
import { Webhook } from 'standardwebhooks';

const port = Number(process.env.PORT ?? 3000);
const key = process.env.WEBHOOK_KEY;
const verifier = process.env.WEBHOOK_SECRET ? new Webhook(process.env.WEBHOOK_SECRET) : undefined;
const same = (a, b) => a.length === b.length && timingSafeEqual(Buffer.from(a), Buffer.from(b));

createServer((request, response) => {
  const chunks = [];
  request.on('data', (chunk) => chunks.push(chunk));
  request.on('end', () => {
    const body = Buffer.concat(chunks).toString('utf8');
    try {
      if (key && !same(String(request.headers['x-webhook-api-key'] ?? ''), key)) throw new Error('wrong X-Webhook-Api-Key');
      verifier?.verify(body, request.headers);
    } catch (error) {
      console.log(`refused a delivery: ${error.message}`);
      response.writeHead(401).end();
      return;
    }
    const event = JSON.parse(body);
    // Deliveries can repeat: deduplicate by event.id (or paymentSessionId / orderId) before acting.
    console.log(
      `received ${event.event} for ${event.paymentSessionId} (order ${event.orderId}, status ${event.status})${verifier ? ', signature verified' : ''}`,
    );
    response.writeHead(200).end();
  });
}).listen(port, () => console.log(`webhook receiver listening on http://localhost:${port}`));
