// Generated from Till's OpenAPI document (GET /openapi.json) by openapi-typescript: run `npm run generate:client`, do not edit.
export interface paths {
    "/api/checkout/v2/payment_session": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * List payment sessions
         * @description The merchant’s sessions, newest first, filtered by status, orderId and creation time, a page at a time: pass `nextCursor` as `cursor` for the next page. Each session is as the read of one answers it.
         */
        get: operations["listPaymentSessions"];
        /**
         * Update a payment session (E2)
         * @description Changes only the fields sent; `null` clears an optional field. Used for sessions that take several payments, such as donation links.
         */
        put: operations["updatePaymentSession"];
        /**
         * Create a payment session (E1)
         * @description Creates a session and returns its id and the hosted payment page URL. Send `Idempotency-Key` to make retries safe. One API key (or one merchant's bearer tokens) may create `TILL_SESSIONS_PER_MINUTE_PER_KEY` sessions a minute (6000 by default), counted across instances: past that, 429 `rate_limited` with Retry-After.
         */
        post: operations["createPaymentSession"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/checkout/v2/payment_session/{sessionId}": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * Read a payment session
         * @description Status, amounts, expiry and the payments made so far, each with its order id and receipt once settled.
         */
        get: operations["getPaymentSession"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/.well-known/x402": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * The payment links merchants made discoverable, for agents (x402 origin manifest)
         * @description Public and cacheable (Cache-Control, ETag; If-None-Match answers 304). Lists only links their merchant marked discoverable, payable now, of the mode the deployment serves live (test links only on a test-only deployment). Paged by `cursor`. See docs/x402.md.
         */
        get: operations["getDiscoveryManifest"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/.well-known/x402.json": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * The payment links merchants made discoverable, for agents (x402 origin manifest)
         * @description Public and cacheable (Cache-Control, ETag; If-None-Match answers 304). Lists only links their merchant marked discoverable, payable now, of the mode the deployment serves live (test links only on a test-only deployment). Paged by `cursor`. See docs/x402.md.
         */
        get: operations["getDiscoveryManifestJson"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/checkout/v2/payments/{paymentId}/refunds/prepare": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * Prepare a refund: the typed data its payout wallet signs
         * @description Answers the EIP-712 typed data of the EIP-3009 authorization that moves `amount` USDC from the payout wallet that received the payment back to its payer, with a fresh nonce, valid at once for 10 minutes. Nothing is recorded: sign it with the payout wallet’s key and post it to `POST /api/checkout/v2/refunds`. Needs `refunds:write`.
         */
        post: operations["prepareRefund"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/checkout/v2/refunds": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * List refunds
         * @description The merchant’s refunds of the credential’s mode, newest first, filtered by payment, session and status, a page at a time: pass `nextCursor` as `cursor` for the next page. Needs `refunds:read` of a restricted key or narrowed token.
         */
        get: operations["listRefunds"];
        put?: never;
        /**
         * Make a refund from a signed authorization
         * @description Takes the prepared fields and the payout wallet’s signature. The checks are the dashboard’s: the amount against what is left of the payment (atomically), the validity window, the nonce, and that the payment’s payout wallet signed exactly these terms. Then the facilitator submits it and the chain is read at once; only the chain decides its status (PENDING until then; `refund.succeeded` / `refund.failed` webhook events when decided). A refused refund records nothing and moves nothing. Needs `refunds:write`.
         */
        post: operations["createRefund"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/checkout/v2/refunds/{refundId}": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * Read a refund
         * @description Needs `refunds:read` of a restricted key or narrowed token.
         */
        get: operations["getRefund"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/checkout/v2/orders/receipt/{publicOrderId}": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * Durable receipt of a settled order (E4)
         * @description Public, keyed by the unguessable publicOrderId (with or without the TX- prefix). JSON by default; a readable page when the client asks for text/html.
         */
        get: operations["getOrderReceipt"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/checkout/v2/webhooks/deliveries": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * List webhook deliveries
         * @description The merchant’s webhook deliveries, newest first, each with every attempt (time, HTTP status, latency, start of the response).
         */
        get: operations["listWebhookDeliveries"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/checkout/v2/webhooks/events/{eventId}/redeliver": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * Redeliver a webhook event
         * @description Queues the event again, with the same id and the same body as first sent, to the current webhook URL.
         */
        post: operations["redeliverEvent"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/checkout/v2/webhooks/test": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * Send a test webhook
         * @description Queues a `webhook.test` event with sample values, signed like every other event, to the webhook URL. At most `TILL_WEBHOOK_TEST_EVENTS_PER_HOUR` (20 by default) per merchant per hour, with the dashboard's test events: past that, 429 with Retry-After.
         */
        post: operations["sendTestWebhook"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/checkout/v2/events": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * List events
         * @description The merchant’s webhook events of the credential’s mode (delivered or not, whatever the subscription), newest first or oldest first, filtered by type and creation time, a page at a time: pass `nextCursor` as `cursor` for the next page. Each event carries the exact body its webhook carried. Events are kept at least 30 days.
         */
        get: operations["listEvents"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/checkout/v2/events/{eventId}": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * Read an event
         * @description One of the merchant’s webhook events of the credential’s mode, with the exact body its webhook carried.
         */
        get: operations["getEvent"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/checkout/v2/events/test": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * Trigger a test event
         * @description Makes a test-mode event of the type with made-up values (fresh fake session, order and payment ids) in the shape of a real one, for trying a receiver: listed by the events API, so `till listen` forwards it, and delivered to the test-mode webhook URL when it is subscribed to the type (`webhook.test` whatever the subscription). Counts against `TILL_WEBHOOK_TEST_EVENTS_PER_HOUR` with the other test events. Test-mode credentials only.
         */
        post: operations["triggerTestEvent"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/.well-known/jwks.json": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** The public keys that sign access tokens (JWKS) */
        get: operations["getSigningKeys"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/.well-known/oauth-protected-resource": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** Protected resource metadata of the MCP endpoint (RFC 9728) */
        get: operations["getProtectedResourceMetadata"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/.well-known/oauth-protected-resource/mcp": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** Protected resource metadata of the MCP endpoint (RFC 9728) */
        get: operations["getMcpProtectedResourceMetadata"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/.well-known/oauth-authorization-server": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** Authorization server metadata (RFC 8414) */
        get: operations["getAuthorizationServerMetadata"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/x402/session/{sessionId}": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * Pay a session over x402 (E3)
         * @description Public. Without a proof: 402 with the challenge (body and PAYMENT-REQUIRED header). With X-PAYMENT or PAYMENT-SIGNATURE: verified, settled once, 200. A v2 payload may name its payment with the `payment-identifier` extension: a retry carrying the same identifier gets the first outcome and is never charged again. See docs/x402.md for every `error` code.
         */
        get: operations["payX402Session"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/checkout/v2/x402/session/{sessionId}": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * Pay a session over x402 (E3)
         * @description Public. Without a proof: 402 with the challenge (body and PAYMENT-REQUIRED header). With X-PAYMENT or PAYMENT-SIGNATURE: verified, settled once, 200. A v2 payload may name its payment with the `payment-identifier` extension: a retry carrying the same identifier gets the first outcome and is never charged again. See docs/x402.md for every `error` code.
         */
        get: operations["payX402SessionUnderCheckout"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/oauth/token": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * Token endpoint: client credentials for the payment API; authorization code and refresh token for coding agents
         * @description `grant_type=client_credentials` takes `client_id`, `client_secret` and `audience` (`{base_url}/checkout`, the only one) as a JSON or form body, or HTTP Basic, and an optional `scope` narrowing the token to `refunds:read` and/or `refunds:write` (without it the token may do everything the payment API does, as an API key may); the token is valid 24 h. `grant_type=authorization_code` takes `code`, `redirect_uri`, `code_verifier` (PKCE) and `client_id` (the metadata document URL; no secret); `grant_type=refresh_token` takes `refresh_token` and `client_id`, and answers a new refresh token each time (a used one presented again revokes the authorization). Coding agents get a 15-minute token for `{mcp_url}/mcp` with a `refresh_token` and `scope`. Tokens are ES256 JWTs (`typ` `at+jwt`), verifiable with `/.well-known/jwks.json`. Errors follow RFC 6749 §5.2.
         */
        post: operations["requestToken"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/oauth/revoke": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * Token revocation (RFC 7009) for coding agents
         * @description Takes `token` (a refresh token or an access token), optional `token_type_hint`, and `client_id` as a form (or JSON) body. Revoking either ends the whole authorization: its refresh tokens stop at once and its access tokens at their next call. Answers 200 whether or not the token was known, as RFC 7009 asks; a token of another client is left alone.
         */
        post: operations["revokeToken"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
}
export interface webhooks {
    event: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * An event delivered to the merchant’s webhook endpoint
         * @description POSTed to the endpoint of the session’s mode, signed as Standard Webhooks specify (`webhook-id`, `webhook-timestamp`, `webhook-signature`) and with `X-Webhook-Api-Key`. Answer 2xx; anything else is retried. See docs/api.md.
         */
        post: operations["receiveEvent"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
}
export interface components {
    schemas: {
        Error: {
            error: {
                /**
                 * @description One of the closed catalogue of codes; each code's status and meaning are listed under `x-error-codes` at the document's root
                 * @enum {string}
                 */
                code: "invalid_field" | "unknown_field" | "unsupported_chain" | "unsupported_token" | "payout_wallet_not_settable" | "invalid_payment_identifier" | "invalid_json" | "invalid_request" | "unauthorized" | "insufficient_scope" | "test_mode_only" | "not_found" | "method_not_allowed" | "session_settled" | "session_expired" | "session_changed" | "payment_in_progress" | "order_id_in_use" | "idempotency_key_in_use" | "payment_identifier_reused" | "no_webhook_endpoint" | "body_too_large" | "form_too_large" | "unsupported_media_type" | "idempotency_key_reused" | "no_pay_to" | "rate_limited" | "internal_error" | "rate_unavailable" | "facilitator_unavailable" | "facilitator_refused" | "database_unreachable" | "sandbox_unavailable";
                message: string;
                field?: string;
            };
        };
        PaymentSessionResponse: {
            /**
             * @description Public session id; an x402 buyer pays this id
             * @example ps_3q2Hf0…
             */
            sessionId: string;
            /** @description Hosted payment page; carries the session id as query parameter uid */
            redirectUrl: string;
            /** @description Present only when the session cannot be paid yet: `no_payout_wallet` — the merchant has no payout wallet (set it in the dashboard under Settings → Payout wallet; operators: `till merchant set-wallet`) */
            warnings?: {
                /** @enum {string} */
                code: "no_payout_wallet";
                message: string;
            }[];
        };
        NewPaymentSession: {
            /**
             * @description Amount of the purchase, in the currency: above 0, at most 10^12, the currency's decimals and 15 significant digits. On an editable session, the prefilled amount.
             * @example 25.5
             */
            amount: number;
            /**
             * @description ISO 4217 code, case-insensitive
             * @example USD
             */
            currency: string;
            /** @description TRANSIENT (default) is paid once and expires; STATIC never expires and takes many payments */
            orderType?: ("STATIC" | "TRANSIENT") | null;
            /** @description Floor of a buyer-chosen amount, with the rules of amount; only with editable: true */
            minAmount?: number | null;
            /** @description Whether the buyer chooses the amount */
            editable?: boolean | null;
            /** @description Merchant's unique reference of the order */
            orderId?: string | null;
            /** @description What is being paid for, shown to the buyer */
            concept?: string | null;
            successUrl?: string | null;
            cancelUrl?: string | null;
            failUrl?: string | null;
            /**
             * @description The buyer's email address: the receipt of the payment, and of its refunds, is mailed there once it settles. Only on a TRANSIENT session; never shown back.
             * @example buyer@example.org
             */
            buyerEmail?: string | null;
        };
        UpdatePaymentSession: {
            /** @description The session to update */
            sessionId: string;
            /**
             * @description Amount of the purchase, in the currency: above 0, at most 10^12, the currency's decimals and 15 significant digits. On an editable session, the prefilled amount.
             * @example 25.5
             */
            amount?: number;
            /**
             * @description ISO 4217 code, case-insensitive
             * @example USD
             */
            currency?: string;
            /** @description Floor of a buyer-chosen amount, with the rules of amount; only with editable: true */
            minAmount?: number | null;
            /** @description Whether the buyer chooses the amount */
            editable?: boolean | null;
            /** @description Merchant's unique reference of the order */
            orderId?: string | null;
            /** @description What is being paid for, shown to the buyer */
            concept?: string | null;
            successUrl?: string | null;
            cancelUrl?: string | null;
            failUrl?: string | null;
            /**
             * @description The buyer's email address: the receipt of the payment, and of its refunds, is mailed there once it settles. Only on a TRANSIENT session; never shown back.
             * @example buyer@example.org
             */
            buyerEmail?: string | null;
        };
        PaymentSessionDetails: {
            sessionId: string;
            redirectUrl: string;
            /** @enum {string} */
            status: "OPEN" | "SUCCESS" | "EXPIRED";
            /** @enum {string} */
            orderType: "STATIC" | "TRANSIENT";
            amount: number;
            currency: string;
            minAmount: number | null;
            editable: boolean;
            orderId: string | null;
            concept: string | null;
            successUrl: string | null;
            cancelUrl: string | null;
            failUrl: string | null;
            /** @description ISO 8601; null for STATIC sessions, which never expire */
            expiresAt: string | null;
            createdAt: string;
            updatedAt: string;
            /** @description Every payment attempt that was claimed for this session, oldest first; each successful one is an order */
            payments: components["schemas"]["SessionPayment"][];
        };
        SessionPayment: {
            /** @description The order id (TX-…) once settled; null while pending or failed */
            paymentId: string | null;
            /** @enum {string} */
            status: "PENDING" | "SUCCESS" | "FAILED" | "REVERSED";
            amount: number;
            currency: string;
            /** @description USDC, as a decimal string */
            tokenAmount: string;
            rate: string;
            payer: string;
            payTo: string;
            transactionHash: string | null;
            /** @description The public receipt (E4) of a settled order */
            receiptUrl: string | null;
            failureReason: string | null;
            createdAt: string;
            settledAt: string | null;
            /** @description Refunds of this payment from the merchant's payout wallet to the payer, oldest first */
            refunds: components["schemas"]["SessionRefund"][];
            /** @description What refunds that SUCCEEDED gave back, in the payment's currency */
            refundedAmount: number;
            /** @description The same in USDC, as a decimal string */
            refundedTokenAmount: string;
        };
        SessionRefund: {
            /** @description The refund id (rf_…) */
            id: string;
            /** @description In the payment's currency (its share of the payment, rounded down) */
            amount: number;
            currency: string;
            /** @description USDC given back, as a decimal string */
            tokenAmount: string;
            /** @enum {string} */
            status: "PENDING" | "SUCCEEDED" | "FAILED";
            txHash: string | null;
            createdAt: string;
        };
        PaymentSessionList: {
            /** @description Newest first; each exactly as the read of one session answers it */
            sessions: components["schemas"]["PaymentSessionDetails"][];
            /** @description Pass as `cursor` for the next page; null on the last page */
            nextCursor: string | null;
        };
        X402DiscoveryManifest: {
            /** @constant */
            x402Version: 2;
            items: components["schemas"]["X402DiscoveryResource"][];
            pagination: {
                limit: number;
                cursor: string | null;
            };
        };
        X402DiscoveryResource: {
            resource: string;
            /** @constant */
            type: "http";
            /** @constant */
            x402Version: 2;
            accepts: {
                [key: string]: unknown;
            }[];
            lastUpdated: string;
            description: string;
            mimeType: string;
            serviceName?: string;
            extensions: {
                [key: string]: unknown;
            };
            metadata: {
                name: string;
                price: string;
                currency: string;
                buyerChoosesAmount: boolean;
                minAmount?: string;
                merchant: string;
            };
        };
        PreparedRefund: {
            paymentId: string;
            /** @description USDC, as asked */
            amount: string;
            typedData: components["schemas"]["RefundTypedData"];
            /** @description ISO 8601, when it was prepared: the authorization is valid at once (the typed data’s validAfter is 0) */
            validFrom: string;
            /** @description ISO 8601: it must be submitted before this, 10 minutes after it was prepared */
            validBefore: string;
            /** @description The fields to post to POST /api/checkout/v2/refunds, with the `signature` */
            submit: {
                paymentId: string;
                amount: string;
                validBefore: string;
                nonce: string;
            };
        };
        /** @description EIP-712 typed data of the EIP-3009 TransferWithAuthorization to sign with the payout wallet (`eth_signTypedData_v4` takes it as it is; viem’s `signTypedData` without `EIP712Domain` and with the numbers as bigint) */
        RefundTypedData: {
            domain: {
                name: string;
                version: string;
                chainId: number;
                verifyingContract: string;
            };
            types: {
                [key: string]: {
                    name: string;
                    type: string;
                }[];
            };
            /** @constant */
            primaryType: "TransferWithAuthorization";
            message: {
                /** @description The payout wallet that received the payment: it signs */
                from: string;
                /** @description The payer, who gets the refund */
                to: string;
                /** @description USDC base units, as a decimal string */
                value: string;
                validAfter: string;
                /** @description Unix seconds */
                validBefore: string;
                nonce: string;
            };
        };
        Refund: {
            id: string;
            /** @description The order id (TX-…) of the payment it refunds */
            paymentId: string | null;
            paymentSessionId: string;
            /**
             * @description Decided by the chain alone: PENDING until the transfer is seen (SUCCEEDED) or the authorization can no longer move money (FAILED: expired unused or cancelled)
             * @enum {string}
             */
            status: "PENDING" | "SUCCEEDED" | "FAILED";
            /** @description In the payment's currency (its share of the payment, rounded down) */
            amount: number;
            currency: string;
            /** @description USDC given back, as a decimal string */
            tokenAmount: string;
            reason: string | null;
            /** @description The payout wallet it is paid from */
            from: string;
            /** @description The payer it is paid to */
            to: string;
            transactionHash: string | null;
            /** @description Why it FAILED, or while PENDING what stands in the way (a facilitator’s refusal); null otherwise */
            lastError: string | null;
            /**
             * @description How it was made: the dashboard, the payment API, or a coding agent through MCP
             * @enum {string}
             */
            origin: "dashboard" | "api" | "mcp";
            createdAt: string;
            updatedAt: string;
        };
        CreateRefund: {
            /**
             * @description The order id of the settled payment (`paymentId` of the session read: `TX-…`)
             * @example TX-6B1F0C2A9D3E4F5A6B7C8D9E0F1A2B3C
             */
            paymentId: string;
            /**
             * @description USDC to give back, as a decimal string with at most 6 decimals; at most what is left to refund of the payment
             * @example 0.40
             */
            amount: string;
            /** @description The typed data’s `validBefore`, Unix seconds as prepared */
            validBefore: string;
            /** @description The typed data’s `nonce`, as prepared */
            nonce: string;
            /** @description The payout wallet’s EIP-712 signature of the typed data, 0x and hex */
            signature: string;
            /** @description Why, in the merchant’s words (at most 200 characters): in the webhook event and the buyer’s mail */
            reason?: string;
        };
        RefundList: {
            refunds: components["schemas"]["Refund"][];
            /** @description The next page’s cursor; null on the last page */
            nextCursor: string | null;
        };
        OrderReceipt: {
            publicOrderId: string;
            /** @enum {string} */
            status: "SUCCESS" | "REVERSED";
            paymentSessionId: string;
            orderId: string | null;
            merchantName: string;
            amount: number;
            currency: string;
            /** @constant */
            token: "USDC";
            /** @description USDC paid, as a decimal string */
            tokenAmount: string;
            /** @description USDC per one unit of the currency, as used for this order */
            rate: string;
            /**
             * @description Where it was paid: `base`, or `base-sepolia` for a test-mode payment on Base Sepolia
             * @enum {string}
             */
            network: "base" | "base-sepolia";
            chainId: 8453 | 84532;
            payer: string;
            payTo: string;
            transactionHash: string;
            explorerUrl: string;
            settledAt: string;
            /** @description What the merchant refunded to the payer (refunds that succeeded), in the order's currency; 0 when none */
            refundedAmount: number;
            /** @description The same in USDC, as a decimal string */
            refundedTokenAmount: string;
            /** @description The refunds that succeeded, from the merchant's payout wallet to the payer, oldest first */
            refunds: {
                id: string;
                amount: number;
                tokenAmount: string;
                transactionHash: string;
                explorerUrl: string;
                refundedAt: string;
            }[];
        };
        WebhookDelivery: {
            deliveryId: string;
            /** @description Stable event id, sent as webhook-id and body.id; the same on every retry and redelivery */
            eventId: string;
            event: string;
            paymentSessionId: string | null;
            /** @enum {string} */
            status: "PENDING" | "SUCCEEDED" | "FAILED";
            attempts: {
                attempt: number;
                at: string;
                statusCode: number | null;
                error: string | null;
                latencyMs: number;
                /** @description First 1 KiB of the response body */
                response: string | null;
            }[];
            nextAttemptAt: string | null;
            lastError: string | null;
            createdAt: string;
            deliveredAt: string | null;
        };
        WebhookDeliveryQueued: {
            eventId: string;
            deliveryId: string;
        };
        WebhookEventList: {
            events: components["schemas"]["WebhookEvent"][];
            /** @description Pass as `cursor` for the next page; null on the last page */
            nextCursor: string | null;
        };
        WebhookEvent: {
            /** @description The event id (`evt_…`), sent as `webhook-id` and as the body’s `id` */
            id: string;
            /** @description The event type, as the body’s `event` */
            type: string;
            /** @description When the event was written (ISO 8601); the list is ordered by it */
            createdAt: string;
            paymentSessionId: string | null;
            /** @description The exact body every delivery of this event carried, byte for byte, as a JSON string: parse it to read it, verify or replay it as it is */
            body: string;
        };
        X402Paid: {
            /** @constant */
            status: "SUCCESS";
            paymentSessionId: string;
            payTo: string;
            receipt: string;
            paymentId: string;
        };
        X402Challenge: {
            /** @constant */
            x402Version: 2;
            error: string;
            message: string;
            accepts: {
                [key: string]: unknown;
            }[];
            /** @description With an offer: `payment-identifier` (always) and `bazaar` (a discoverable link), as in PAYMENT-REQUIRED */
            extensions?: {
                [key: string]: unknown;
            };
            /** @description With an offer: the amount in the session currency that maxAmountRequired is the price of */
            amount?: number;
            /** @description The session currency (ISO 4217) */
            currency?: string;
        };
        WebhookEventBody: {
            /** @description The event id (`evt_…`), also the `webhook-id` header: deduplicate by it */
            id: string;
            /**
             * @description The event type
             * @enum {string}
             */
            event: "payment.succeeded" | "session.expired" | "payment.pending" | "payment.failed" | "payment.reversed" | "refund.succeeded" | "refund.failed" | "webhook.test";
            /** @description When the status changed, epoch milliseconds */
            timestamp: number;
            /** @description The merchant's order id, if the session has one */
            orderId: string | null;
            /** @description The amount in `currency` (a refund event's: the refund's) */
            amount: number;
            /** @description ISO 4217 code */
            currency: string;
            /** @description The token paid, `USDC` */
            token: string;
            successUrl: string | null;
            failUrl: string | null;
            cancelUrl: string | null;
            paymentSessionId: string;
            /** @description The order id of the payment (`TX-…`); null for session.expired */
            paymentId: string | null;
            /** @enum {string} */
            status: "PENDING" | "SUCCESS" | "FAILED" | "EXPIRED";
            /** @description The chain, `base` (or `base-sepolia` for test mode there) */
            chain: string;
            /** @description Block-explorer links of the transaction */
            receipts: string[];
            /** @description Refund events only: the refund, whose amount and currency are the body’s */
            refund?: {
                id: string;
                reason: string | null;
                /** @description USDC sent back, as a decimal string */
                tokenAmount: string;
                transactionHash: string | null;
                failureReason: string | null;
            };
        };
    };
    responses: never;
    parameters: never;
    requestBodies: never;
    headers: never;
    pathItems: never;
}
export type $defs = Record<string, never>;
export interface operations {
    listPaymentSessions: {
        parameters: {
            query?: {
                status?: string;
                orderId?: string;
                createdFrom?: string;
                createdTo?: string;
                limit?: number;
                cursor?: string;
            };
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description A page of sessions */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["PaymentSessionList"];
                };
            };
            /** @description A query parameter is unknown, repeated or invalid; `error.field` names it */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Missing, unknown, revoked or wrong-mode API key */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    updatePaymentSession: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody: {
            content: {
                /**
                 * @example {
                 *       "sessionId": "ps_3q2Hf0aZ",
                 *       "amount": 15,
                 *       "concept": "Three coffees"
                 *     }
                 */
                "application/json": components["schemas"]["UpdatePaymentSession"];
            };
        };
        responses: {
            /** @description Session updated */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "sessionId": "ps_3q2Hf0aZ",
                     *       "redirectUrl": "https://till.example/checkout/pay?uid=ps_3q2Hf0aZ"
                     *     }
                     */
                    "application/json": components["schemas"]["PaymentSessionResponse"];
                };
            };
            /** @description A field is invalid, or tries to set the payout wallet (`payout_wallet_not_settable`); `error.field` names it */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Missing, unknown, revoked or wrong-mode API key */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description No such session for this merchant */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description TRANSIENT session settled, expired or with a payment in progress; session archived from the dashboard; or orderId already used */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Body over 16 KiB */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Content-Type is not application/json */
            415: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The new currency has no fresh exchange rate right now */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    createPaymentSession: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody: {
            content: {
                /**
                 * @example {
                 *       "amount": 12.5,
                 *       "currency": "USD",
                 *       "orderId": "order-1001",
                 *       "concept": "Two coffees",
                 *       "successUrl": "https://shop.example/thanks"
                 *     }
                 */
                "application/json": components["schemas"]["NewPaymentSession"];
            };
        };
        responses: {
            /** @description Session created */
            201: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "sessionId": "ps_3q2Hf0aZ",
                     *       "redirectUrl": "https://till.example/checkout/pay?uid=ps_3q2Hf0aZ"
                     *     }
                     */
                    "application/json": components["schemas"]["PaymentSessionResponse"];
                };
            };
            /** @description A field is invalid, or tries to set the payout wallet (`payout_wallet_not_settable`); `error.field` names it */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Missing, unknown, revoked or wrong-mode API key */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description `orderId` already used by this merchant, or the Idempotency-Key is in flight */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Body over 16 KiB */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Content-Type is not application/json */
            415: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Idempotency-Key reused with a different body */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Too many sessions created with this key this minute; Retry-After says when to try again */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The currency has no fresh exchange rate right now */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    getPaymentSession: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                sessionId: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The session */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["PaymentSessionDetails"];
                };
            };
            /** @description Missing, unknown, revoked or wrong-mode API key */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description No such session for this merchant */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    getDiscoveryManifest: {
        parameters: {
            query?: {
                limit?: number;
                cursor?: string;
            };
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description One page of the manifest */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["X402DiscoveryManifest"];
                };
            };
            /** @description Unchanged since the ETag sent in If-None-Match */
            304: {
                headers: {
                    [name: string]: unknown;
                };
                content?: never;
            };
            /** @description A malformed limit or cursor, or another query parameter */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    getDiscoveryManifestJson: {
        parameters: {
            query?: {
                limit?: number;
                cursor?: string;
            };
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description One page of the manifest */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["X402DiscoveryManifest"];
                };
            };
            /** @description Unchanged since the ETag sent in If-None-Match */
            304: {
                headers: {
                    [name: string]: unknown;
                };
                content?: never;
            };
            /** @description A malformed limit or cursor, or another query parameter */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    prepareRefund: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                paymentId: string;
            };
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": {
                    /**
                     * @description USDC to give back, as a decimal string with at most 6 decimals; at most what is left to refund of the payment
                     * @example 0.40
                     */
                    amount: string;
                };
            };
        };
        responses: {
            /** @description The typed data to sign */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["PreparedRefund"];
                };
            };
            /** @description A field is refused and `error.field` names it (paymentId, amount, validBefore, nonce, signature, reason); nothing was recorded and nothing moved */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Missing, unknown, revoked or wrong-mode API key */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description A client-credentials token issued without this scope (`insufficient_scope`) */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description No settled payment with this order id for this merchant in the credential’s mode */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    listRefunds: {
        parameters: {
            query?: {
                paymentId?: string;
                paymentSessionId?: string;
                status?: string;
                limit?: number;
                cursor?: string;
            };
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description A page of refunds */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["RefundList"];
                };
            };
            /** @description A query parameter is unknown, repeated or invalid; `error.field` names it */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Missing, unknown, revoked or wrong-mode API key */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description A client-credentials token issued without this scope (`insufficient_scope`) */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    createRefund: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": components["schemas"]["CreateRefund"];
            };
        };
        responses: {
            /** @description The refund, as the chain has decided it so far */
            201: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Refund"];
                };
            };
            /** @description A field is refused and `error.field` names it (paymentId, amount, validBefore, nonce, signature, reason); nothing was recorded and nothing moved */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Missing, unknown, revoked or wrong-mode API key */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description A client-credentials token issued without this scope (`insufficient_scope`) */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description No settled payment with this order id for this merchant in the credential’s mode */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description No facilitator is configured for this mode; nothing was recorded */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    getRefund: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                refundId: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The refund */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Refund"];
                };
            };
            /** @description The refund id is malformed (`error.field` is refundId) */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Missing, unknown, revoked or wrong-mode API key */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description A client-credentials token issued without this scope (`insufficient_scope`) */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description No such refund for this merchant in the credential’s mode */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    getOrderReceipt: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                publicOrderId: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The receipt */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["OrderReceipt"];
                };
            };
            /** @description No such order */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    listWebhookDeliveries: {
        parameters: {
            query?: {
                eventId?: string;
                limit?: number;
                before?: string;
            };
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Deliveries */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        deliveries: components["schemas"]["WebhookDelivery"][];
                    };
                };
            };
            /** @description A query parameter is invalid */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Missing, unknown, revoked or wrong-mode API key */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    redeliverEvent: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                eventId: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Queued */
            202: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["WebhookDeliveryQueued"];
                };
            };
            /** @description Missing, unknown, revoked or wrong-mode API key */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description No such event for this merchant */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description No webhook URL is set */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    sendTestWebhook: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Queued */
            202: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["WebhookDeliveryQueued"];
                };
            };
            /** @description Missing, unknown, revoked or wrong-mode API key */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description No webhook URL is set */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Too many test events for this merchant this hour; Retry-After says when to try again */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    listEvents: {
        parameters: {
            query?: {
                type?: string;
                createdFrom?: string;
                createdTo?: string;
                order?: "newest" | "oldest";
                limit?: number;
                cursor?: string;
            };
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description A page of events */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["WebhookEventList"];
                };
            };
            /** @description A query parameter is unknown, repeated or invalid; `error.field` names it */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Missing, unknown, revoked or wrong-mode API key */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    getEvent: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                eventId: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The event */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["WebhookEvent"];
                };
            };
            /** @description Missing, unknown, revoked or wrong-mode API key */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description No such event of this merchant in this mode */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    triggerTestEvent: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": {
                    /**
                     * @description The type of the event to make
                     * @example payment.succeeded
                     * @enum {string}
                     */
                    type: "payment.succeeded" | "session.expired" | "payment.pending" | "payment.failed" | "payment.reversed" | "refund.succeeded" | "refund.failed" | "webhook.test";
                };
            };
        };
        responses: {
            /** @description The event made */
            201: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        event: components["schemas"]["WebhookEvent"];
                        deliveryId: string | null;
                    };
                };
            };
            /** @description The type is not an event type; `error.field` names it */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Missing, unknown, revoked or wrong-mode API key */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The credential is a live one */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Too many test events for this merchant this hour; Retry-After says when to try again */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    getSigningKeys: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description A JSON Web Key Set */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        keys: {
                            [key: string]: string;
                        }[];
                    };
                };
            };
            /** @description A NUL character (U+0000) in a parameter (`invalid_field`) */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    getProtectedResourceMetadata: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The metadata */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        resource: string;
                        authorization_servers: string[];
                        scopes_supported: string[];
                        bearer_methods_supported: string[];
                        resource_documentation: string;
                    };
                };
            };
            /** @description A NUL character (U+0000) in a parameter (`invalid_field`) */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    getMcpProtectedResourceMetadata: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The metadata */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        resource: string;
                        authorization_servers: string[];
                        scopes_supported: string[];
                        bearer_methods_supported: string[];
                        resource_documentation: string;
                    };
                };
            };
            /** @description A NUL character (U+0000) in a parameter (`invalid_field`) */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    getAuthorizationServerMetadata: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The metadata */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        [key: string]: unknown;
                    };
                };
            };
            /** @description A NUL character (U+0000) in a parameter (`invalid_field`) */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    payX402Session: {
        parameters: {
            query?: {
                amount?: string;
            };
            header?: never;
            path: {
                sessionId: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Paid, or already settled (idempotent); X-PAYMENT-RESPONSE and PAYMENT-RESPONSE headers */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["X402Paid"];
                };
            };
            /** @description ?amount= malformed, or sent for a fixed-amount session; or a malformed payment-identifier id (invalid_payment_identifier) */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Challenge: no payment yet, or the proof was refused (`error` says why) */
            402: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["X402Challenge"];
                };
            };
            /** @description Unknown or expired session */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The payment-identifier names a payment of another session, payer or amount (payment_identifier_reused); nothing was charged */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description No payout wallet configured, so no payTo can be quoted */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Too many payment proofs from this client, from this payer for this session or for this session, or too many new quotes (distinct ?amount= values) for this session from this client or from all */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description No fresh exchange rate for the session currency (rate_unavailable), or the facilitator does not answer (facilitator_unavailable); nothing was charged */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    payX402SessionUnderCheckout: {
        parameters: {
            query?: {
                amount?: string;
            };
            header?: never;
            path: {
                sessionId: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Paid, or already settled (idempotent); X-PAYMENT-RESPONSE and PAYMENT-RESPONSE headers */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["X402Paid"];
                };
            };
            /** @description ?amount= malformed, or sent for a fixed-amount session; or a malformed payment-identifier id (invalid_payment_identifier) */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Challenge: no payment yet, or the proof was refused (`error` says why) */
            402: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["X402Challenge"];
                };
            };
            /** @description Unknown or expired session */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The payment-identifier names a payment of another session, payer or amount (payment_identifier_reused); nothing was charged */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description No payout wallet configured, so no payTo can be quoted */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Too many payment proofs from this client, from this payer for this session or for this session, or too many new quotes (distinct ?amount= values) for this session from this client or from all */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description No fresh exchange rate for the session currency (rate_unavailable), or the facilitator does not answer (facilitator_unavailable); nothing was charged */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    requestToken: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The access token */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        access_token: string;
                        /** @constant */
                        token_type: "Bearer";
                        expires_in: number;
                        refresh_token?: string;
                        scope?: string;
                    };
                };
            };
            /** @description `invalid_request`, `invalid_grant`, `invalid_scope`, `unsupported_grant_type` or `invalid_target` */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        /** @enum {string} */
                        error: "invalid_request" | "invalid_client" | "invalid_grant" | "invalid_scope" | "unsupported_grant_type" | "invalid_target";
                        error_description: string;
                    };
                };
            };
            /** @description `invalid_client` */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        /** @enum {string} */
                        error: "invalid_request" | "invalid_client" | "invalid_grant" | "invalid_scope" | "unsupported_grant_type" | "invalid_target";
                        error_description: string;
                    };
                };
            };
        };
    };
    revokeToken: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Revoked, or nothing to revoke */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content?: never;
            };
            /** @description `invalid_request` */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        /** @enum {string} */
                        error: "invalid_request" | "invalid_client" | "invalid_grant" | "invalid_scope" | "unsupported_grant_type" | "invalid_target";
                        error_description: string;
                    };
                };
            };
            /** @description `invalid_client` */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        /** @enum {string} */
                        error: "invalid_request" | "invalid_client" | "invalid_grant" | "invalid_scope" | "unsupported_grant_type" | "invalid_target";
                        error_description: string;
                    };
                };
            };
        };
    };
    receiveEvent: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": components["schemas"]["WebhookEventBody"];
            };
        };
        responses: {
            /** @description Received: any 2xx ends the delivery */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content?: never;
            };
            /** @description Refused (a bad signature, say): retried with backoff, as any answer but 2xx */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content?: never;
            };
        };
    };
}
