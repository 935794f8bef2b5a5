// Till's typed client: openapi-fetch over the types generated from Till's OpenAPI document
// (./openapi.ts), with the merchant's credential sent on every call.
import createClient, { type Client, type ClientOptions } from 'openapi-fetch';
import type { components, operations, paths, webhooks } from './openapi.ts';

export { isTillEvent, type TillEvent, type TillEventType, verifyWebhook, WebhookVerificationError, type WebhookVerificationOptions } from './webhooks.ts';
export type { components, operations, paths, webhooks };

type Schemas = components['schemas'];
/** E1's body. */
export type NewPaymentSession = Schemas['NewPaymentSession'];
/** E2's body. */
export type PaymentSessionUpdate = Schemas['UpdatePaymentSession'];
/** What E1 and E2 answer: the session id and its hosted page. */
export type PaymentSessionCreated = Schemas['PaymentSessionResponse'];
/** A session as the read and the list answer it, with its payments and refunds. */
export type PaymentSession = Schemas['PaymentSessionDetails'];
/** An event as the events API lists it (its body as delivered, a JSON string). */
export type StoredEvent = Schemas['WebhookEvent'];
/** What prepare answers: the typed data for the payout wallet to sign and the fields to submit with its signature. */
export type PreparedRefund = Schemas['PreparedRefund'];
/** The EIP-712 typed data of a refund's TransferWithAuthorization. */
export type RefundTypedData = Schemas['RefundTypedData'];
/** The refund create's body: the prepared fields and the signature. */
export type NewRefund = Schemas['CreateRefund'];
/** A refund as the read and the list answer it, its status decided by the chain. */
export type Refund = Schemas['Refund'];
/** Every refusal: `error.code` from the closed catalogue, `error.field` naming a bad field. */
export type TillError = Schemas['Error'];

export type TillClientOptions = Omit<ClientOptions, 'baseUrl'> & {
  /** The Till's address, e.g. `https://till.example.com` (no trailing path). */
  baseUrl: string;
} & (
    | { /** An API key, sent as `X-SC-ApiKey`. */ apiKey: string; accessToken?: never }
    | {
        /** A client-credentials access token (`POST /oauth/token`), or a function that gives a fresh one, sent as `Authorization: Bearer`. */
        accessToken: string | (() => string | Promise<string>);
        apiKey?: never;
      }
    | { apiKey?: never; accessToken?: never }
  );

export type TillClient = Client<paths>;

/**
 * A client of one Till, authenticated as one merchant in one mode (the key's or the token's):
 * `client.POST('/api/checkout/v2/payment_session', { body })` answers `{ data }` or `{ error }`, both typed.
 */
export function createTillClient(options: TillClientOptions): TillClient {
  const { apiKey, accessToken, ...rest } = options;
  const client = createClient<paths>(rest);
  if (apiKey !== undefined || accessToken !== undefined)
    client.use({
      async onRequest({ request }) {
        if (apiKey !== undefined) request.headers.set('x-sc-apikey', apiKey);
        else if (accessToken !== undefined)
          request.headers.set('authorization', `Bearer ${typeof accessToken === 'function' ? await accessToken() : accessToken}`);
        return request;
      },
    });
  return client;
}
