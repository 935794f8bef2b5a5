import { noneLeft, printResult, takeFlag, UsageError } from './output.ts';
import { callTill, TillUnreachable, tillApiOf } from './till-api.ts';

type Triggered = { event: { id: string; type: string; createdAt: string; body: string }; deliveryId: string | null };

/** `till trigger EVENT_TYPE [--api-key KEY] [--till URL] [--json]`: a test-mode event with made-up values, for trying a receiver. */
export async function triggerCommand(args: string[]): Promise<void> {
  const json = takeFlag(args, '--json');
  const api = tillApiOf(args);
  const [type] = args.splice(0, 1);
  noneLeft(args);
  if (!type)
    throw new UsageError('till trigger EVENT_TYPE (payment.succeeded, session.expired, … or webhook.test) [--api-key sk_test_…] [--till URL] [--json]');
  if (api.modeName === 'live') throw new UsageError('till trigger makes test events only: use an sk_test_ key');
  const made = await callTill<Triggered>(api, 'POST', '/api/checkout/v2/events/test', { type }).catch((error: unknown) => {
    throw error instanceof TillUnreachable ? new Error(`${api.baseUrl} could not be reached: ${error.message}`) : error;
  });
  printResult(
    json,
    made,
    `Triggered ${made.event.type} ${made.event.id} (test mode)${made.deliveryId ? `, queued to the webhook URL as delivery ${made.deliveryId}` : ''}; till listen forwards it.`,
  );
}
