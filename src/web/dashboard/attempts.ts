import { getAddress } from 'viem';
import { formatUsdc } from '../../money/usdc.ts';
import { type RefusedAttempt, refusalSentence, type SessionAttempts } from '../../x402/attempts.ts';
import { type Html, html, joinHtml } from '../kit/html.ts';
import { moment, shortened } from './views.ts';

function attemptRow(attempt: RefusedAttempt): Html {
  const times = attempt.count === 1 ? html`1` : html`${attempt.count}<br><span class="note">since ${moment(attempt.firstSeenAt)}</span>`;
  return html`<tr><td data-label="When">${moment(attempt.lastSeenAt)}</td>
<td data-label="Payer" class="nowrap">${shortened(getAddress(attempt.payer), 6, 4)}</td>
<td data-label="Amount" class="nowrap">${attempt.value === null ? '—' : `${formatUsdc(attempt.value)} USDC`}</td>
<td data-label="Reason">${refusalSentence(attempt.reason)}<br><code>${attempt.reason}</code></td>
<td data-label="Times">${times}</td></tr>`;
}

/** The refused proofs a session counts but does not list: their named payer did not sign them. */
function unsignedNote({ count, lastSeenAt }: NonNullable<SessionAttempts['unsigned']>): Html {
  const refused =
    count === 1
      ? html`1 refused payment (${moment(lastSeenAt)}) whose signature was not that of the payer it named`
      : html`${count} refused payments (the last ${moment(lastSeenAt)}) whose signature was not that of the payer they named`;
  return html`<p id="attempts-unsigned">Not listed: ${refused}. Anyone can send such a payment naming any address, so these name nobody and never push a payer’s attempt off this list.</p>`;
}

/**
 * A session's refused payment attempts (x402/attempts.ts): when, the payer who signed, the amount it
 * authorized, why it was refused, and how many times; then how many refused proofs were not signed by
 * the payer they named. Nothing when there are none.
 */
export function refusedAttemptsSection(attempts: SessionAttempts | undefined): Html {
  if (!attempts || (attempts.signed.length === 0 && !attempts.unsigned)) return html``;
  const table = attempts.signed.length
    ? html`<table class="cards"><thead><tr><th scope="col">When</th><th scope="col">Payer</th><th scope="col">Amount</th><th scope="col">Reason</th><th scope="col">Times</th></tr></thead><tbody>
${joinHtml(attempts.signed.map(attemptRow), html`\n`)}
</tbody></table>`
    : html``;
  return html`<section aria-labelledby="attempts-heading"><h2 id="attempts-heading">Refused attempts</h2>
<p class="note">Payments that were refused, nothing charged; the most recent first. Repeats of one payer for one reason are counted on one line. The payer is the wallet that signed the payment.</p>
${table}${attempts.unsigned ? unsignedNote(attempts.unsigned) : ''}</section>`;
}
