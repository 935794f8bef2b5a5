import type { FastifyInstance } from 'fastify';
import type { RailsByMode } from '../../chain/rails.ts';
import { makeRefund, prepareRefund, typedDataJson } from '../../chain/refunds.ts';
import type { AppContext } from '../../context.ts';
import { formFields } from '../../http/forms.ts';
import { recordActivity } from '../../merchants/events.ts';
import { formatUsdc } from '../../money/usdc.ts';
import { actorOf } from '../kit/actor.ts';
import type { DashboardUser } from './layout.ts';
import { addDashboardRoute } from './page-route.ts';

const ORDERS_PATH = '/dashboard/orders';
const REFUSED = { description: 'A field is refused (`error.field` names it: amount, signature, validBefore, nonce, reason); nothing was recorded or moved' };
const NOT_FOUND = { description: 'No such order of this merchant in the mode the dashboard shows' };

/**
 * Refunds from the order's payout wallet, in two form posts made by the Orders page's script:
 * prepare (the EIP-712 typed data the payout wallet signs, as JSON), then the signed refund (checked,
 * recorded, settled through the facilitator; 303 back to the order with the refund's state).
 */
export function registerRefunds(app: FastifyInstance, context: AppContext, rails: RailsByMode): void {
  const scopeOf = (signedIn: DashboardUser) => ({ merchantId: signedIn.user.merchantId, mode: signedIn.modes.mode });
  const orderIdOf = (params: unknown) => String((params as { paymentId?: unknown }).paymentId ?? '').toUpperCase();

  addDashboardRoute(
    app,
    context,
    {
      method: 'POST',
      url: `${ORDERS_PATH}/{paymentId}/refund/prepare`,
      permission: 'refunds',
      summary: 'The EIP-712 typed data of a refund of an order (amount in USDC), for its payout wallet to sign (JSON)',
      responses: { 200: { description: 'The typed data to sign (eth_signTypedData_v4) and the fields to post back' }, 400: REFUSED, 404: NOT_FOUND },
    },
    async (signedIn, request, reply) => {
      const fields = formFields(request);
      const { payment, typedData } = await prepareRefund(context, scopeOf(signedIn), orderIdOf(request.params), fields.amount);
      const json = typedDataJson(typedData);
      return reply
        .code(200)
        .header('cache-control', 'no-store')
        .send({
          orderId: payment.public_order_id,
          typedData: json,
          fields: { amount: fields.amount?.trim(), validBefore: json.message.validBefore, nonce: json.message.nonce },
        });
    },
  );

  addDashboardRoute(
    app,
    context,
    {
      method: 'POST',
      url: `${ORDERS_PATH}/{paymentId}/refund`,
      permission: 'refunds',
      summary: 'Makes a refund of an order from the authorization its payout wallet signed: checked, recorded, settled; back to Orders with its state',
      responses: { 400: REFUSED, 404: NOT_FOUND, 503: { description: 'No facilitator is configured; nothing was recorded' } },
    },
    async (signedIn, request, reply) => {
      const fields = formFields(request);
      const orderId = orderIdOf(request.params);
      // Refunded on the rails of the order's mode, the mode the dashboard shows.
      const services = rails[signedIn.modes.mode];
      const refund = await makeRefund(
        context,
        services,
        scopeOf(signedIn),
        orderId,
        {
          amount: fields.amount,
          validBefore: fields.validBefore,
          nonce: fields.nonce,
          signature: fields.signature,
          reason: fields.reason,
        },
        { origin: 'dashboard' },
        (trx, made) =>
          recordActivity(
            trx,
            signedIn.user.merchantId,
            actorOf(signedIn.user, request),
            { type: 'refund_sent', mode: made.mode, detail: { order: orderId, refund: made.id, usdc: formatUsdc(made.value), reason: made.reason } },
            context.now(),
          ),
      );
      const query = new URLSearchParams({ q: orderId, refund: refund.id, refundStatus: refund.status });
      return reply.code(303).header('location', `${ORDERS_PATH}?${query}`).send();
    },
  );
}
