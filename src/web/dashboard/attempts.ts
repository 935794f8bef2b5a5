import { getAddress } from 'viem';
import { formatUsdc } from '../../money/usdc.ts';
import { type RefusedAttempt, refusalSentence } from '../../x402/attempts.ts';
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

/**
 * A session's refused payment attempts (x402/attempts.ts): when, the payer the proof named, the
 * amount it authorized, why it was refused, and how many times. Nothing when there are none.
 */
export function refusedAttemptsSection(attempts: RefusedAttempt[]): Html {
  if (attempts.length === 0) return html``;
  return html`<section aria-labelledby="attempts-heading"><h2 id="attempts-heading">Refused attempts</h2>
<p class="note">Payments that were refused, nothing charged; the most recent first. Repeats of one payer for one reason are counted on one line. The payer is the address the payment named.</p>
<table class="cards"><thead><tr><th scope="col">When</th><th scope="col">Payer</th><th scope="col">Amount</th><th scope="col">Reason</th><th scope="col">Times</th></tr></thead><tbody>
${joinHtml(attempts.map(attemptRow), html`\n`)}
</tbody></table></section>`;
}
