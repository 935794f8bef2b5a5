import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { z } from 'zod';
import { TillError } from '../common/errors.ts';
import type { Mode } from '../common/modes.ts';
import { explorerTxUrlOf, networkOf } from '../config.ts';
import type { AppContext } from '../context.ts';
import { ErrorResponse } from '../http/errors.ts';
import { addRoute, type RouteDoc } from '../http/routes.ts';
import { validate } from '../http/validation.ts';
import { findReceiptWithAmountText, Receipt, type ReceiptView } from './receipts.ts';

const Params = z.strictObject({ publicOrderId: z.string().min(1).max(64) });

const doc: RouteDoc = {
  method: 'GET',
  url: '/checkout/v2/orders/receipt/{publicOrderId}',
  operationId: 'getOrderReceipt',
  tag: 'Orders',
  summary: 'Durable receipt of a settled order (E4)',
  description:
    'Public, keyed by the unguessable publicOrderId (with or without the TX- prefix). JSON by default; a readable page when the client asks for text/html.',
  security: 'none',
  params: Params,
  responses: { 200: { description: 'The receipt', schema: Receipt }, 404: { description: 'No such order', schema: ErrorResponse } },
};

/** What a receipt lookup found: the receipt, its amount in words, what was bought and its merchant, or nothing. */
export type FoundReceipt = { receipt: ReceiptView; amountText: string; concept: string | null; merchantId: string; mode: Mode } | undefined;

/**
 * The readable page of a receipt, given by the web layer (wired in main.ts): it answers a browser
 * that asks for text/html and says so with `true`; for everyone else it sends nothing and says
 * `false`, and they get the JSON. (A boolean, not the reply: a Fastify reply is a thenable, and
 * awaiting it waits for the answer to be sent and gives undefined.)
 */
export type ReceiptPage = (context: AppContext, request: FastifyRequest, reply: FastifyReply, found: FoundReceipt, publicOrderId: string) => Promise<boolean>;

/** E4: the receipt as JSON, or as the page `readable` renders when the client asks for one. */
export const registerReceiptRoutes =
  (readable?: ReceiptPage) =>
  (app: FastifyInstance, context: AppContext): void => {
    addRoute(app, doc, {}, async (request, reply) => {
      const { publicOrderId } = validate(Params, request.params);
      // A receipt is public: found in any served mode, linked to its own mode's explorer (the page says which mode).
      const found = await findReceiptWithAmountText(context.db, publicOrderId, {
        modes: context.config.modes,
        explorerTxUrl: (mode) => explorerTxUrlOf(context.config, mode),
        network: (mode) => networkOf(context.config, mode),
      });
      reply.header('vary', 'Accept');
      if (await readable?.(context, request, reply, found, publicOrderId)) return reply;
      if (!found) throw new TillError('not_found', { what: `Order ${publicOrderId}` });
      return found.receipt;
    });
  };
