import { invalidField, TillError } from '../common/errors.ts';
import { formatMinor, parseDecimalAmount } from '../money/decimal.ts';
import { currencyExponent, decimalNumber } from '../money/iso4217.ts';
import { RateUnavailableError, UnsupportedCurrencyError } from '../money/rates.ts';
import { AmountTooLargeToQuoteError, formatUsdc } from '../money/usdc.ts';
import { sessionResourceUrl } from '../sessions/views.ts';
import { type Answer, challengeAnswer } from './answers.ts';
import type { Offer } from './challenge.ts';
import { FACILITATOR_MIN_AMOUNT, MAX_DESCRIPTION_LENGTH } from './protocol.ts';
import { type Quote, quoteFor, type SessionToQuote } from './quotes.ts';
import type { PayFlow } from './services.ts';

/** The payout address a session is quoted to; without one nobody can pay it (the merchant's to fix). */
export function payeeOf(session: SessionToQuote): string {
  const payTo = session.pay_to ?? session.merchant_wallet_address;
  if (!payTo) throw new TillError('no_pay_to');
  return payTo;
}

/**
 * The amount asked for: the session's own, or for an editable session the buyer's `?amount=`, at or
 * above the floor (a 402 asks for it or names the floor). `?amount=` on a fixed session is a 400.
 */
export function chosenAmount(session: SessionToQuote, amount: string | undefined): { minor: bigint } | { answer: Answer } {
  if (session.editable !== 1) {
    if (amount !== undefined) throw invalidField('amount', 'is only accepted for sessions with an editable amount');
    return { minor: session.amount_minor };
  }
  const floor = { minAmount: session.min_amount_minor === null ? null : decimalNumber(session.min_amount_minor, session.currency), currency: session.currency };
  if (amount === undefined) return { answer: challengeAnswer('amount_required', undefined, { extra: floor }) };
  const parsed = parseDecimalAmount(amount, currencyExponent(session.currency) ?? 2);
  if (!parsed.ok) throw invalidField('amount', parsed.reason);
  if (session.min_amount_minor !== null && parsed.minor < session.min_amount_minor)
    return { answer: challengeAnswer('amount_below_minimum', undefined, { extra: floor }) };
  return { minor: parsed.minor };
}

/**
 * The description the facilitator takes: Coinbase's caps it at 500 characters (its API's
 * `Description`, `maxLength: 500`; one more is a 400 naming no field). A longer one is cut on a
 * code-point boundary (never half a surrogate pair) and ends with "…", within 500 UTF-16 units, so
 * it fits however the length is counted.
 */
export function offerDescription(full: string): string {
  if (full.length <= MAX_DESCRIPTION_LENGTH) return full;
  let cut = '';
  for (const point of full) {
    if (cut.length + point.length > MAX_DESCRIPTION_LENGTH - 1) break;
    cut += point;
  }
  return `${cut}…`;
}

/** An amount the facilitator would refuse is refused here first, naming the floor; nothing is asked of anyone. */
function belowFacilitatorMinimum(): Answer {
  return challengeAnswer('amount_below_minimum', undefined, {
    message: `The amount is below the smallest payment the facilitator settles: ${formatUsdc(FACILITATOR_MIN_AMOUNT)} USDC (${FACILITATOR_MIN_AMOUNT} base units)`,
    extra: { minUsdcAmount: FACILITATOR_MIN_AMOUNT.toString() },
  });
}

/** The stored quote of this amount (reused or new, a new one counted against `client`, the client IP) and the offer the challenge makes from it. */
export async function quoteOffer(
  flow: PayFlow,
  found: { session: SessionToQuote; reusable: Quote | undefined },
  amountMinor: bigint,
  payTo: string,
  now: number,
  client: string,
): Promise<{ quote: Quote; offer: Offer } | { answer: Answer }> {
  const { context, services, rails } = flow;
  const { session } = found;
  let quote: Quote;
  try {
    quote = await quoteFor(context.db, services.rates, {
      session,
      amountMinor,
      payTo,
      asset: rails.usdcAddress,
      now,
      candidate: found.reusable,
      beforeNewQuote: () => services.limitNewQuotes(session.id, client),
    });
  } catch (error) {
    // A currency the provider stopped quoting is as unavailable as a stale rate: never a made-up quote.
    if (error instanceof RateUnavailableError || error instanceof UnsupportedCurrencyError)
      throw new TillError('rate_unavailable', { currency: session.currency });
    if (error instanceof AmountTooLargeToQuoteError) throw invalidField('amount', 'is worth more USDC than one payment may ask for at the current rate');
    throw error;
  }
  if (quote.usdc_amount < FACILITATOR_MIN_AMOUNT) return { answer: belowFacilitatorMinimum() };
  const offer: Offer = {
    network: rails.network,
    resourceUrl: sessionResourceUrl(context.config.baseUrl, session.id),
    description: offerDescription(`${session.merchant_name}: ${session.concept ?? `payment session ${session.id}`}`),
    payTo,
    asset: rails.usdcAddress,
    usdcAmount: quote.usdc_amount,
    ...(session.discoverable === 1
      ? { discovery: { editable: session.editable === 1, suggestedAmount: formatMinor(session.amount_minor, currencyExponent(session.currency) ?? 2) } }
      : {}),
    price: { amount: decimalNumber(amountMinor, session.currency), currency: session.currency },
  };
  return { quote, offer };
}
