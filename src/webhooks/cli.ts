import { withDatabase } from '../cli/with-database.ts';
import { findMerchant } from '../merchants/merchants.ts';
import { UsageError, noneLeft, printResult, takeFlag, takeOption } from '../cli/output.ts';
import { listDeliveries, redeliverEvent, sendTestEvent } from './deliveries.ts';
import { WebhookSettingsError, setWebhook } from './endpoints.ts';
import { refusalOf } from './ssrf.ts';


const NO_ENDPOINT = 'no webhook URL is set for this merchant; set one with: till merchant set-webhook MERCHANT_ID --url URL';

/** `till merchant set-webhook MERCHANT_ID --url URL [--events a,b] [--rotate] [--json]` */
export async function setWebhookCommand(args: string[]): Promise<void> {
  const json = takeFlag(args, '--json');
  const rotate = takeFlag(args, '--rotate');
  const url = takeOption(args, '--url');
  const events = takeOption(args, '--events')?.split(',').map((e) => e.trim()).filter(Boolean);
  const [merchantId] = args.splice(0, 1);
  noneLeft(args);
  if (!merchantId || !url) throw new UsageError('merchant set-webhook needs MERCHANT_ID --url URL [--events payment.succeeded,session.expired,…] [--rotate] [--json]');
  const result = await withDatabase(async ({ db }, config) => {
    if (!(await findMerchant(db, merchantId))) throw new UsageError(`no merchant ${merchantId}`);
    try {
      const secrets = await setWebhook(db, config.secretKey, merchantId, { url, ...(events ? { events } : {}), rotate }, config.mode);
      // Told now, not discovered at the first delivery: where this URL leads and whether the guard lets it.
      const refusal = await refusalOf(url, config.webhooks);
      return { ...secrets, ...(refusal ? { warning: `deliveries to this URL will not be sent: ${refusal}` } : {}) };
    } catch (error) {
      if (error instanceof WebhookSettingsError) throw new UsageError(`--${error.field}: ${error.message}`);
      throw error;
    }
  });
  if (result.warning && !json) process.stderr.write(`Warning: ${result.warning}\n`);
  printResult(json, result, `Webhook of ${merchantId} set to ${url}.\nWebhook key (sent as X-Webhook-Api-Key): ${result.webhookKey}\nSigning secret (Standard Webhooks): ${result.signingSecret}`);
}

/** `till webhooks list [--merchant ID] [--json]`, `till webhooks redeliver EVENT_ID`, `till webhooks test --merchant ID` */
export async function webhooksCommand(args: string[]): Promise<void> {
  const sub = args.shift();
  const json = takeFlag(args, '--json');
  if (sub === 'list') {
    const merchantId = takeOption(args, '--merchant');
    noneLeft(args);
    const deliveries = await withDatabase(({ db }) => listDeliveries(db, merchantId ? { merchantId } : {}));
    const lines = deliveries.map((d) => {
      const last = d.attempts.at(-1);
      return `${d.createdAt}  ${d.eventId}  ${d.event.padEnd(17)}  ${d.status.padEnd(9)}  attempts ${d.attempts.length}${last ? `, last ${last.statusCode ?? last.error}` : ''}`;
    });
    printResult(json, { deliveries }, lines.length ? lines.join('\n') : 'No webhook deliveries.');
    return;
  }
  if (sub === 'redeliver') {
    const [eventId] = args.splice(0, 1);
    noneLeft(args);
    if (!eventId) throw new UsageError('webhooks redeliver needs EVENT_ID');
    const result = await withDatabase(({ db }) => redeliverEvent(db, eventId));
    if ('refused' in result) throw new UsageError(result.refused === 'unknown_event' ? `no webhook event ${eventId}` : NO_ENDPOINT);
    printResult(json, { eventId, deliveryId: result.deliveryId }, `Event ${eventId} queued again as delivery ${result.deliveryId}.`);
    return;
  }
  if (sub === 'test') {
    const merchantId = takeOption(args, '--merchant');
    noneLeft(args);
    if (!merchantId) throw new UsageError('webhooks test needs --merchant MERCHANT_ID');
    const result = await withDatabase(async ({ db }) => {
      if (!(await findMerchant(db, merchantId))) throw new UsageError(`no merchant ${merchantId}`);
      return sendTestEvent(db, merchantId);
    });
    if ('refused' in result) throw new UsageError(NO_ENDPOINT);
    printResult(json, result, `Test event ${result.eventId} queued as delivery ${result.deliveryId}.`);
    return;
  }
  throw new UsageError('webhooks commands: list [--merchant MERCHANT_ID] [--json] | redeliver EVENT_ID [--json] | test --merchant MERCHANT_ID [--json]');
}
