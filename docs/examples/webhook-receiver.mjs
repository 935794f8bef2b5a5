// A merchant backend's webhook receiver: checks each delivery and answers 200.
//   node docs/examples/webhook-receiver.mjs      (npm install standardwebhooks)
// PORT: where it listens (default 3000).
// WEBHOOK_KEY: the webhook key (X-Webhook-Api-Key) and WEBHOOK_SECRET: the signing secret, both
// printed by `till merchant set-webhook`. A delivery that does not match them gets 401, so Till
// retries it; a match gets 200.
// Switching after a rotation: each may list several values, comma-separated (the new one and the
// old one: WEBHOOK_SECRET=whsec_new,whsec_old), and a delivery matching any of them is accepted.
// During the overlap Till signs with both secrets (webhook-signature holds one v1 signature per
// secret, space-separated), so a receiver holding either secret verifies it.
import { timingSafeEqual } from 'node:crypto';
import { createServer } from 'node:http';
import { Webhook } from 'standardwebhooks';

const list = (value) =>
  (value ?? '')
    .split(',')
    .map((part) => part.trim())
    .filter(Boolean);
const port = Number(process.env.PORT ?? 3000);
const keys = list(process.env.WEBHOOK_KEY);
const verifiers = list(process.env.WEBHOOK_SECRET).map((secret) => new Webhook(secret));
const same = (a, b) => a.length === b.length && timingSafeEqual(Buffer.from(a), Buffer.from(b));

/** Throws unless one of the secrets verifies the delivery (any of its signatures, its timestamp fresh). */
function verifySignature(body, headers) {
  let refusal;
  for (const verifier of verifiers) {
    try {
      return verifier.verify(body, headers);
    } catch (error) {
      refusal = error;
    }
  }
  throw refusal;
}

createServer((request, response) => {
  const chunks = [];
  request.on('data', (chunk) => chunks.push(chunk));
  request.on('end', () => {
    const body = Buffer.concat(chunks).toString('utf8');
    try {
      const presented = String(request.headers['x-webhook-api-key'] ?? '');
      if (keys.length && !keys.some((key) => same(presented, key))) throw new Error('wrong X-Webhook-Api-Key');
      if (verifiers.length) verifySignature(body, request.headers);
    } catch (error) {
      console.log(`refused a delivery: ${error.message}`);
      response.writeHead(401).end();
      return;
    }
    const event = JSON.parse(body);
    // Deliveries can repeat: deduplicate by event.id (or paymentSessionId / orderId) before acting.
    console.log(
      `received ${event.event} for ${event.paymentSessionId} (order ${event.orderId}, status ${event.status})${verifiers.length ? ', signature verified' : ''}`,
    );
    response.writeHead(200).end();
  });
}).listen(port, () => console.log(`webhook receiver listening on http://localhost:${port}`));
