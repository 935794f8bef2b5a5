import { z } from 'zod';
import { invalidField, TillError } from '../common/errors.ts';
import { type Network, SCHEME } from '../common/network.ts';
import { PAYMENT_IDENTIFIER, PAYMENT_IDENTIFIER_FIELD, paymentIdentifierProblem } from './extensions.ts';

const address = z.string().regex(/^0x[0-9a-fA-F]{40}$/);
const uint = z.union([z.string().regex(/^\d{1,78}$/), z.number().int().nonnegative()]).transform((v) => BigInt(v));
const authorization = z.object({
  from: address,
  to: address,
  value: uint,
  validAfter: uint,
  validBefore: uint,
  nonce: z.string().regex(/^0x[0-9a-fA-F]{64}$/),
});
const exactPayload = z.object({ signature: z.string().regex(/^0x[0-9a-fA-F]+$/), authorization });

/** v1-shaped, as `x402-fetch` sends it in X-PAYMENT (x402Version 1, or 2 echoed from our body). */
const v1Shape = z.object({ x402Version: z.union([z.literal(1), z.literal(2)]), scheme: z.string(), network: z.string(), payload: exactPayload });
/** v2, as `@x402/fetch` sends it in PAYMENT-SIGNATURE (or X-PAYMENT). */
const v2Shape = z.object({
  x402Version: z.literal(2),
  accepted: z.object({ scheme: z.string(), network: z.string(), asset: address, amount: z.string(), payTo: address }).passthrough(),
  resource: z.object({ url: z.string() }).passthrough().optional(),
  payload: exactPayload,
  extensions: z.record(z.string(), z.unknown()).optional(),
});

/** Every accepted proof, whatever its encoding, in one form. */
export type Proof = {
  scheme: string;
  network: string;
  /** The token the client says it signed for, when its encoding says (v2 only). */
  asset: string | undefined;
  /** The resource URL the client says it paid for, when its encoding says (v2 only). */
  resource: string | undefined;
  signature: `0x${string}`;
  from: `0x${string}`;
  to: `0x${string}`;
  value: bigint;
  validAfter: bigint;
  validBefore: bigint;
  nonce: `0x${string}`;
  /** The client's x402 payment-identifier, checked for its form (extensions.ts); v2 only. */
  paymentIdentifier: string | undefined;
};

export type DecodedProof = { ok: true; proof: Proof } | { ok: false; error: 'invalid_payload' | 'conflicting_payment_headers'; message: string };

function decodeBase64Json(header: string): unknown {
  if (!/^[A-Za-z0-9+/_-]+={0,2}$/.test(header.trim())) throw new Error('not base64');
  return JSON.parse(Buffer.from(header.trim(), 'base64').toString('utf8'));
}

/**
 * The `id` of the payment-identifier extension a v2 payload carries, if any. The extension without
 * an `id` names nothing (the server's declaration echoed back); an `id` that breaks the extension's
 * rules (16–128 characters of A–Z a–z 0–9 _ -) is refused with a 400 naming it, never ignored: a
 * client that meant to name its payment must not be charged as if it had not.
 */
function paymentIdentifierOf(extensions: Record<string, unknown> | undefined): string | undefined {
  const extension = extensions?.[PAYMENT_IDENTIFIER];
  if (extension === undefined) return undefined;
  const info = typeof extension === 'object' && extension !== null ? (extension as { info?: unknown }).info : undefined;
  if (typeof info !== 'object' || info === null) throw invalidField(`extensions.${PAYMENT_IDENTIFIER}.info`, 'must be an object');
  const id = (info as { id?: unknown }).id;
  if (id === undefined) return undefined;
  const problem = paymentIdentifierProblem(id);
  if (problem) throw new TillError('invalid_payment_identifier', { field: PAYMENT_IDENTIFIER_FIELD, problem });
  return id as string;
}

/** The proof a request carries, in one form; a malformed payment identifier is a TillError (400). */
export function decodeProof(headers: { xPayment: string | undefined; paymentSignature: string | undefined }): DecodedProof | undefined {
  if (headers.xPayment && headers.paymentSignature)
    return { ok: false, error: 'conflicting_payment_headers', message: 'Send either X-PAYMENT or PAYMENT-SIGNATURE, not both' };
  const header = headers.xPayment ?? headers.paymentSignature;
  if (!header) return undefined;
  let json: unknown;
  try {
    json = decodeBase64Json(header);
  } catch {
    return { ok: false, error: 'invalid_payload', message: 'The payment header is not base64-encoded JSON' };
  }
  const v2 = v2Shape.safeParse(json);
  const v1 = v2.success ? undefined : v1Shape.safeParse(json);
  if (!v2.success && !v1?.success) {
    const issue = (v1?.error ?? v2.error).issues[0];
    return {
      ok: false,
      error: 'invalid_payload',
      message: `The payment payload is malformed at ${issue?.path.join('.') || 'its root'}: ${issue?.message ?? 'invalid'}`,
    };
  }
  const payload = v2.success ? v2.data.payload : v1!.data!.payload;
  const { authorization } = payload;
  return {
    ok: true,
    proof: {
      scheme: v2.success ? v2.data.accepted.scheme : v1!.data!.scheme,
      network: v2.success ? v2.data.accepted.network : v1!.data!.network,
      asset: v2.success ? v2.data.accepted.asset : undefined,
      resource: v2.success ? v2.data.resource?.url : undefined,
      signature: payload.signature as `0x${string}`,
      from: authorization.from.toLowerCase() as `0x${string}`,
      to: authorization.to.toLowerCase() as `0x${string}`,
      value: authorization.value,
      validAfter: authorization.validAfter,
      validBefore: authorization.validBefore,
      nonce: authorization.nonce.toLowerCase() as `0x${string}`,
      paymentIdentifier: v2.success ? paymentIdentifierOf(v2.data.extensions) : undefined,
    },
  };
}

/** Whether a proof names the offer's network, in x402 v1's or v2's spelling. */
export const isOfferedNetwork = (network: string, offered: Network) => network === offered.v1 || network === offered.v2;
export const isOurScheme = (scheme: string) => scheme === SCHEME;
