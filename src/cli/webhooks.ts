import { TillError } from '../common/errors.ts';
import { refusalOf } from '../common/ssrf.ts';
import type { Db } from '../db/index.ts';
import { findMerchant } from '../merchants/merchants.ts';
import { webhookTargetAllowance } from '../webhooks/deliver.ts';
import { listDeliveries, redeliverEvent, sendTestEvent } from '../webhooks/deliveries.ts';
import { checkOverlapHours, setWebhook } from '../webhooks/endpoints.ts';
import { modeOption } from './mode-option.ts';
import { noneLeft, printResult, takeFlag, takeOption, UsageError } from './output.ts';
import { withDatabase } from './with-database.ts';

const NO_ENDPOINT = 'no webhook URL is set for this merchant; set one with: till merchant set-webhook MERCHANT_ID --url URL';

/** A refusal of the webhooks code in the words of the command line: the option at fault, or the command that fixes it. */
function usageErrorOf(error: unknown, unknownEvent?: string): unknown {
  if (!(error instanceof TillError)) return error;
  if (error.code === 'no_webhook_endpoint') return new UsageError(NO_ENDPOINT);
  if (error.code === 'not_found' && unknownEvent) return new UsageError(`no webhook event ${unknownEvent}`);
  return new UsageError(error.field ? `--${error.field}: ${error.message}` : error.message);
}

async function requireMerchant(db: Db, merchantId: string): Promise<void> {
  if (!(await findMerchant(db, merchantId))) throw new UsageError(`no merchant ${merchantId}`);
}

/** `till merchant set-webhook MERCHANT_ID --url URL [--events a,b] [--rotate [--overlap HOURS]] [--mode test|live] [--json]` */
export async function setWebhookCommand(args: string[]): Promise<void> {
  const json = takeFlag(args, '--json');
  const givenMode = takeOption(args, '--mode');
  const rotate = takeFlag(args, '--rotate');
  const overlap = takeOption(args, '--overlap');
  const url = takeOption(args, '--url');
  const events = takeOption(args, '--events')
    ?.split(',')
    .map((e) => e.trim())
    .filter(Boolean);
  const [merchantId] = args.splice(0, 1);
  noneLeft(args);
  if (!merchantId || !url)
    throw new UsageError(
      'merchant set-webhook needs MERCHANT_ID --url URL [--events payment.succeeded,session.expired,…] [--rotate [--overlap HOURS]] [--mode test|live] [--json]',
    );
  if (overlap !== undefined && !rotate) throw new UsageError('--overlap goes with --rotate: how long the old signing secret keeps signing beside the new one');
  let overlapHours: number;
  try {
    overlapHours = checkOverlapHours(overlap);
  } catch (error) {
    throw usageErrorOf(error);
  }
  const result = await withDatabase(async ({ db }, config) => {
    await requireMerchant(db, merchantId);
    const mode = modeOption(givenMode, config);
    const secrets = await setWebhook(db, config.secretKey, merchantId, { url, ...(events ? { events } : {}), rotate, overlapHours }, mode).catch(
      (error: unknown) => {
        throw usageErrorOf(error);
      },
    );
    // Told now, not discovered at the first delivery: where this URL leads and whether the guard lets it.
    const refusal = await refusalOf(url, webhookTargetAllowance(config.webhooks));
    return { ...secrets, ...(refusal ? { warning: `deliveries to this URL will not be sent: ${refusal}` } : {}) };
  });
  if (result.warning && !json) process.stderr.write(`Warning: ${result.warning}\n`);
  printResult(
    json,
    result,
    `Webhook of ${merchantId} set to ${url}.\nWebhook key (sent as X-Webhook-Api-Key): ${result.webhookKey}\nSigning secret (Standard Webhooks): ${result.signingSecret}${
      rotate && overlapHours > 0
        ? `\nThe previous signing secret also signs deliveries for ${overlapHours} hours: switch your receiver to the new key and secret within that time.`
        : ''
    }`,
  );
}

/** `till webhooks list [--merchant ID] [--json]`, `till webhooks redeliver EVENT_ID`, `till webhooks test --merchant ID`, each with `--mode test|live` */
export async function webhooksCommand(args: string[]): Promise<void> {
  const sub = args.shift();
  const json = takeFlag(args, '--json');
  const givenMode = takeOption(args, '--mode');
  if (sub === 'list') return listCommand(args, json, givenMode);
  if (sub === 'redeliver') return redeliverCommand(args, json, givenMode);
  if (sub === 'test') return testCommand(args, json, givenMode);
  throw new UsageError(
    'webhooks commands (each with [--mode test|live]): list [--merchant MERCHANT_ID] [--json] | redeliver EVENT_ID [--json] | test --merchant MERCHANT_ID [--json]',
  );
}

async function listCommand(args: string[], json: boolean, givenMode: string | undefined): Promise<void> {
  const merchantId = takeOption(args, '--merchant');
  noneLeft(args);
  const deliveries = await withDatabase(({ db }, config) => listDeliveries(db, modeOption(givenMode, config), merchantId ? { merchantId } : {}));
  const lines = deliveries.map((d) => {
    const last = d.attempts.at(-1);
    return `${d.createdAt}  ${d.eventId}  ${d.event.padEnd(17)}  ${d.status.padEnd(9)}  attempts ${d.attempts.length}${last ? `, last ${last.statusCode ?? last.error}` : ''}`;
  });
  printResult(json, { deliveries }, lines.length ? lines.join('\n') : 'No webhook deliveries.');
}

async function redeliverCommand(args: string[], json: boolean, givenMode: string | undefined): Promise<void> {
  const [eventId] = args.splice(0, 1);
  noneLeft(args);
  if (!eventId) throw new UsageError('webhooks redeliver needs EVENT_ID');
  const { deliveryId } = await withDatabase(({ db }, config) => redeliverEvent(db, modeOption(givenMode, config), eventId)).catch((error: unknown) => {
    throw usageErrorOf(error, eventId);
  });
  printResult(json, { eventId, deliveryId }, `Event ${eventId} queued again as delivery ${deliveryId}.`);
}

async function testCommand(args: string[], json: boolean, givenMode: string | undefined): Promise<void> {
  const merchantId = takeOption(args, '--merchant');
  noneLeft(args);
  if (!merchantId) throw new UsageError('webhooks test needs --merchant MERCHANT_ID');
  const queued = await withDatabase(async ({ db }, config) => {
    await requireMerchant(db, merchantId);
    return sendTestEvent(db, modeOption(givenMode, config), merchantId);
  }).catch((error: unknown) => {
    throw usageErrorOf(error);
  });
  printResult(json, queued, `Test event ${queued.eventId} queued as delivery ${queued.deliveryId}.`);
}
