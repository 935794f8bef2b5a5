import type { Generated } from 'kysely';
import type { Mode } from '../common/modes.ts';

/**
 * Table types. Money is bigint (BIGINT base units), times are epoch milliseconds
 * (BIGINT columns named `*_at`, read back as numbers), flags are 0/1 integers.
 */
export interface MerchantsTable {
  id: string;
  name: string;
  /** Where live payments go (null: nowhere yet)… */
  wallet_address: string | null;
  /** …and test payments (fake money); docs/decisions.md, "A payout wallet per mode". */
  test_wallet_address: string | null;
  created_at: number;
  /** JSON `[{ chain, tokens }]`: the chains the merchant accepts and the tokens on each. */
  accepted_chains: Generated<string>;
  /** Where buyers write to; set on the dashboard. */
  support_email: string | null;
  website_url: string | null;
  /** 1: every user of the merchant signs in with a second factor (one without is sent to enrol). */
  require_two_factor: Generated<number>;
}

export interface ApiKeysTable {
  id: string;
  merchant_id: string;
  mode: 'test' | 'live';
  key_hash: string;
  last_four: string;
  created_at: number;
  revoked_at: number | null;
  /** When the key last authenticated a request; written at most once a minute. */
  last_used_at: number | null;
  /** A restricted key's scopes, space-separated; null for a full key. */
  scopes: string | null;
}

/**
 * The mode a row was made in: the mode of the credential (or the session) that made it. Rows made
 * before modes were recorded are `sandbox`.
 */
export type { Mode };

export type OrderType = 'STATIC' | 'TRANSIENT';
export type SessionStatus = 'OPEN' | 'SUCCESS' | 'EXPIRED';
/** Where a session was created: E1, a dashboard payment link, or the MCP tool create_payment_session. */
export type SessionOrigin = 'api' | 'dashboard' | 'mcp';

export interface PaymentSessionsTable {
  id: string;
  merchant_id: string;
  order_id: string | null;
  order_type: OrderType;
  status: SessionStatus;
  amount_minor: bigint;
  currency: string;
  min_amount_minor: bigint | null;
  editable: number;
  concept: string | null;
  success_url: string | null;
  cancel_url: string | null;
  fail_url: string | null;
  pay_to: string | null;
  expires_at: number | null;
  created_at: number;
  updated_at: number;
  /** Bumped by every update, so a quote made before a change can be told apart. */
  version: number;
  /** Payments claimed and not yet resolved; a session with one is neither changed nor expired. */
  payments_in_progress: Generated<number>;
  /** Archived from the dashboard: hidden from its list and no longer payable (as if expired). */
  archived_at: number | null;
  /** Where it was created; null on sessions made before this was recorded. */
  created_via: SessionOrigin | null;
  mode: Mode;
  /** Listed for agents: its challenges carry x402's `bazaar` description and `/.well-known/x402` lists it (1), or not (0, the default). */
  discoverable: Generated<number>;
}

export interface PaymentQuotesTable {
  id: string;
  session_id: string;
  session_version: number;
  amount_minor: bigint;
  currency: string;
  /** USDC per one unit of the currency, as an exact decimal string. */
  rate: string;
  rate_source: string;
  usdc_amount: bigint;
  pay_to: string;
  asset: string;
  created_at: number;
  expires_at: number;
}

export type PaymentStatus = 'PENDING' | 'SUCCESS' | 'FAILED' | 'REVERSED';

/** A payment attempt; a SUCCESS one is an order, public as `public_order_id` (TX-…). */
export interface PaymentsTable {
  id: string;
  session_id: string;
  merchant_id: string;
  quote_id: string;
  status: PaymentStatus;
  exclusive: number;
  payer: string;
  pay_to: string;
  asset: string;
  value: bigint;
  nonce: string;
  valid_after: bigint;
  valid_before: bigint;
  signature: string;
  amount_minor: bigint;
  currency: string;
  rate: string;
  public_order_id: string | null;
  tx_hash: string | null;
  block_number: bigint | null;
  failure_reason: string | null;
  settle_response: string | null;
  created_at: number;
  updated_at: number;
  settled_at: number | null;
  finalized_at: number | null;
  /** When the reconciler looks at the payment next; null once nothing is left to find out. */
  next_check_at: number | null;
  checks: Generated<number>;
  checked_at: number | null;
  last_finding: string | null;
  /** A transaction the facilitator named without a definite success (pending, error, late answer). */
  reported_tx_hash: string | null;
  /** The first block searched for this authorization's events: the chain's block when the payment was claimed. */
  search_from_block: bigint | null;
  /** Its session's mode. */
  mode: Mode;
  /** The client's x402 payment-identifier (16–128 of A–Z a–z 0–9 _ -), unique; null when none was sent. */
  payment_identifier: string | null;
}

/**
 * Refused proofs of one payer for one session with one x402 refusal code: how many, first and last
 * seen, and the USDC value (base units) of the last one. Bounded per session and by age.
 */
export interface PaymentAttemptsTable {
  id: string;
  session_id: string;
  merchant_id: string;
  mode: Mode;
  /** `authorization.from` as the proof names it, lower-case; unproven when the signature was not checked. */
  payer: string;
  /** The x402 `error` code of the refusal. */
  reason: string;
  /** The value the last of them authorized, in USDC base units; null when beyond a 64-bit column. */
  value: bigint | null;
  count: number;
  first_seen_at: number;
  last_seen_at: number;
}

/** The sniffed type of a merchant's logo: the only types taken, whatever a file's name or declared type says. */
export type LogoType = 'image/png' | 'image/jpeg' | 'image/webp';

/** A merchant's brand on its hosted pages and receipts (both modes): accent colour and logo. */
export interface MerchantBrandsTable {
  merchant_id: string;
  /** `#rrggbb`, lower-case; white text on it passes WCAG AA (4.5:1). */
  accent_color: string | null;
  /** The logo's bytes as base64; null when there is no logo (and so are the other logo_ columns). */
  logo_base64: string | null;
  logo_type: LogoType | null;
  /** SHA-256 of the logo's bytes, hex: its URL's name. */
  logo_hash: string | null;
  logo_width: number | null;
  logo_height: number | null;
  updated_at: number;
}

export type RefundStatus = 'PENDING' | 'SUCCEEDED' | 'FAILED';

/** A refund from the merchant's payout wallet to a payment's payer: an EIP-3009 authorization signed by the payout wallet. */
export interface RefundsTable {
  /** `rf_…` */
  id: string;
  mode: Mode;
  merchant_id: string;
  payment_id: string;
  session_id: string;
  /** The token contract, lower-case (the payment's). */
  asset: string;
  /** USDC base units. */
  value: bigint;
  /** The same refund in the payment's currency, minor units (its share of the payment, rounded down). */
  amount_minor: bigint;
  currency: string;
  /** The merchant's words, at most 200 characters. */
  reason: string | null;
  status: RefundStatus;
  /** The payout wallet (the payment's pay_to), lower-case. */
  from_address: string;
  /** The payment's payer, lower-case. */
  to_address: string;
  /** The authorization's nonce, 0x and 64 hex digits. */
  nonce: string;
  /** Unix seconds: after this the authorization can no longer be used. */
  valid_before: bigint;
  signature: string;
  /** The transaction the facilitator named, then the one the chain shows. */
  tx_hash: string | null;
  block_number: bigint | null;
  last_error: string | null;
  /** When the chain is read for a PENDING refund next; null once it is decided. */
  next_check_at: number | null;
  created_at: number;
  updated_at: number;
  /** How it was made: from the dashboard, the payment API or a coding agent's MCP tool. */
  origin: Generated<RefundOrigin>;
  /** The coding agent's grant that made it (origin `mcp`); its refunds count against the grant's limits. */
  grant_id: Generated<string | null>;
}

export type RefundOrigin = 'dashboard' | 'api' | 'mcp';

export interface IdempotencyKeysTable {
  merchant_id: string;
  idempotency_key: string;
  request_hash: string;
  status_code: number | null;
  response_body: string | null;
  created_at: number;
  expires_at: number;
}

export interface Database {
  merchants: MerchantsTable;
  api_keys: ApiKeysTable;
  payment_sessions: PaymentSessionsTable;
  idempotency_keys: IdempotencyKeysTable;
  payment_quotes: PaymentQuotesTable;
  payments: PaymentsTable;
  webhook_endpoints: WebhookEndpointsTable;
  webhook_events: WebhookEventsTable;
  webhook_deliveries: WebhookDeliveriesTable;
  webhook_attempts: WebhookAttemptsTable;
  users: UsersTable;
  user_sessions: UserSessionsTable;
  user_totp: UserTotpTable;
  user_recovery_codes: UserRecoveryCodesTable;
  user_passkeys: UserPasskeysTable;
  sign_in_throttle: SignInThrottleTable;
  oauth_clients: OAuthClientsTable;
  signing_keys: SigningKeysTable;
  oauth_grants: OAuthGrantsTable;
  oauth_authorization_requests: OAuthAuthorizationRequestsTable;
  oauth_grant_secrets: OAuthGrantSecretsTable;
  mcp_tool_calls: McpToolCallsTable;
  merchant_events: MerchantEventsTable;
  rate_limit_windows: RateLimitWindowsTable;
  merchant_brands: MerchantBrandsTable;
  payment_attempts: PaymentAttemptsTable;
  refunds: RefundsTable;
  mail_outbox: MailOutboxTable;
  mail_preferences: MailPreferencesTable;
  password_resets: PasswordResetsTable;
  invitations: InvitationsTable;
  sign_ups: SignUpsTable;
  mail_receipt_addresses: MailReceiptAddressesTable;
}

export type { Generated };

/** A merchant's webhook endpoint; `events` is a JSON array of the event types it receives. */
export interface WebhookEndpointsTable {
  merchant_id: string;
  url: string;
  events: string;
  webhook_key_sealed: string;
  signing_secret_sealed: string;
  /** The signing secret before the last rotation, still signing beside the new one until the time below. */
  previous_signing_secret_sealed: string | null;
  previous_signing_secret_expires_at: number | null;
  created_at: number;
  updated_at: number;
  disabled_at: number | null;
  disabled_reason: string | null;
  /** One endpoint per merchant and mode: test and live each have their own. */
  mode: Mode;
}

/** The outbox: `body` is the JSON sent, frozen when the status changed. */
export interface WebhookEventsTable {
  id: string;
  merchant_id: string;
  type: string;
  session_id: string | null;
  payment_id: string | null;
  body: string;
  occurred_at: number;
  created_at: number;
  /** The mode of the session it is about (of the service, for a test event); delivered only to an endpoint of that mode. */
  mode: Mode;
}

export type WebhookDeliveryStatus = 'PENDING' | 'SUCCEEDED' | 'FAILED';

export interface WebhookDeliveriesTable {
  id: string;
  event_id: string;
  merchant_id: string;
  status: WebhookDeliveryStatus;
  attempts: Generated<number>;
  next_attempt_at: number;
  lease_until: number | null;
  last_status_code: number | null;
  last_error: string | null;
  created_at: number;
  updated_at: number;
  delivered_at: number | null;
}

export interface WebhookAttemptsTable {
  id: string;
  delivery_id: string;
  attempt: number;
  started_at: number;
  status_code: number | null;
  error: string | null;
  latency_ms: number;
  response_excerpt: string | null;
}

/** A person who signs in for a merchant; `email` is lower-cased, `password_hash` an Argon2id PHC string. */
export interface UsersTable {
  id: string;
  merchant_id: string;
  email: string;
  password_hash: string;
  /** accounts/roles.ts ROLES. */
  role: Generated<string>;
  created_at: number;
  updated_at: number;
}

/** A signed-in browser; `id_hash` is the SHA-256 of the cookie value. */
export interface UserSessionsTable {
  id_hash: string;
  user_id: string;
  created_at: number;
  last_seen_at: number;
  /** The absolute end of the session, whatever its activity. */
  expires_at: number;
  /** 1 while the browser, past the password, has not given its second factor: it is not signed in yet. */
  second_factor_due: Generated<number>;
  /** When the browser last gave a second factor (sign-in or step-up). */
  second_factor_at: number | null;
}

/** A user's authenticator (TOTP) secret, sealed; `last_step` the time step of the last code taken. */
export interface UserTotpTable {
  user_id: string;
  secret_sealed: string;
  confirmed_at: number | null;
  last_step: number | null;
  created_at: number;
}

/** A one-use recovery code, as its SHA-256. */
export interface UserRecoveryCodesTable {
  id: string;
  user_id: string;
  code_hash: string;
  created_at: number;
  used_at: number | null;
}

/** A WebAuthn credential (passkey) of a user: `id` the credential id (base64url), `public_key` base64url COSE. */
export interface UserPasskeysTable {
  id: string;
  user_id: string;
  public_key: string;
  counter: number;
  /** JSON array of the authenticator's transports. */
  transports: string;
  name: string;
  created_at: number;
  last_used_at: number | null;
}

/** Sign-in failures of one subject (`email:…` or `ip:…`) in the current window. */
export interface SignInThrottleTable {
  subject: string;
  failures: number;
  last_failure_at: number;
  next_attempt_at: number;
}

/** Requests counted in one fixed window of one limit for one subject (an IP, a session …). */
export interface RateLimitWindowsTable {
  limit_name: string;
  subject: string;
  window_start: number;
  hits: number;
  expires_at: number;
}

/** A merchant server's client-credentials client; `secret_hash` is the SHA-256 of its secret. */
export interface OAuthClientsTable {
  id: string;
  merchant_id: string;
  /** The mode its tokens act in, bound when it was made. */
  mode: Mode;
  secret_hash: string;
  created_at: number;
  revoked_at: number | null;
}

/** A token-signing key: private JWK sealed under TILL_SECRET_KEY, public JWK as JSON. */
export interface SigningKeysTable {
  kid: string;
  alg: string;
  private_jwk_sealed: string;
  public_jwk: string;
  created_at: number;
  /** Set when a newer key took over signing; still published until its tokens have expired. */
  retired_at: number | null;
}

/** What a merchant allowed a coding agent (an OAuth client named by its metadata document URL); `scopes` space-separated. */
export interface OAuthGrantsTable {
  id: string;
  merchant_id: string;
  user_id: string;
  client_id: string;
  client_name: string;
  scopes: string;
  /** The mode the merchant gave the agent access to, bound at consent; its codes and tokens carry it. */
  mode: Mode;
  created_at: number;
  updated_at: number;
  last_used_at: number | null;
  revoked_at: number | null;
  /** `merchant`, `client` (RFC 7009), `code_reused` or `refresh_token_reused`. */
  revoked_reason: string | null;
  /** The most one refund by this agent may give back, USDC base units; null: the agent may not refund. */
  refund_limit_per_refund: Generated<bigint | null>;
  /** The most this agent's refunds may give back in any 24 hours, USDC base units; null: the agent may not refund. */
  refund_limit_per_day: Generated<bigint | null>;
}

/** An authorization request waiting for the merchant's consent; `scopes` are the requested ones. */
export interface OAuthAuthorizationRequestsTable {
  id: string;
  client_id: string;
  client_name: string;
  redirect_uri: string;
  state: string | null;
  code_challenge: string;
  scopes: string;
  resource: string;
  user_id: string | null;
  created_at: number;
  expires_at: number;
  consumed_at: number | null;
}

/** An authorization code or a refresh token, by the SHA-256 of its value. */
export interface OAuthGrantSecretsTable {
  secret_hash: string;
  kind: 'code' | 'refresh_token';
  grant_id: string;
  client_id: string;
  redirect_uri: string | null;
  code_challenge: string | null;
  created_at: number;
  expires_at: number;
  consumed_at: number | null;
}

/** One MCP tool call, as audited: never its arguments, only their SHA-256. */
export interface McpToolCallsTable {
  id: string;
  created_at: number;
  grant_id: string;
  client_id: string;
  merchant_id: string;
  /** The mode of the grant that made the call. */
  mode: Mode;
  tool: string;
  /** `ok`, `refused` (with the reason's code) or `failed`. */
  outcome: 'ok' | 'refused' | 'failed';
  reason: string | null;
  arguments_sha256: string;
}

/** A sensitive change to a merchant (today the payout wallet): who made it, when, and a JSON `detail`. */
/**
 * The activity log (merchants/events.ts): a change a user, a coding agent or the operator made, with
 * from where. `type` is one of ACTIVITY_TYPES; `detail` is JSON; `mode` is null for a change of
 * both modes (roles, brand). Rows written before the log had actors have them null.
 */
export interface MerchantEventsTable {
  id: string;
  merchant_id: string;
  user_id: string | null;
  type: string;
  detail: string;
  created_at: number;
  mode: 'sandbox' | 'live' | null;
  actor: 'user' | 'agent' | 'operator' | null;
  actor_id: string | null;
  actor_label: string | null;
  ip: string | null;
  user_agent: string | null;
}

/** An invitation to join a merchant's team with a role; the token is stored as its SHA-256. */
export interface InvitationsTable {
  id: string;
  merchant_id: string;
  email: string;
  role: string;
  token_hash: string;
  invited_by: string | null;
  created_at: number;
  expires_at: number;
  accepted_at: number | null;
  revoked_at: number | null;
}

/** A self-serve sign-up waiting for its emailed link; the token is stored as its SHA-256. */
export interface SignUpsTable {
  id: string;
  email: string;
  business_name: string;
  password_hash: string;
  token_hash: string;
  created_at: number;
  expires_at: number;
  used_at: number | null;
}

/**
 * A mail: PENDING until sent (SENT), FAILED once its retries ran out, KEPT when no SMTP server is
 * configured (shown on the sandbox's mail page, never sent). One per `cause` and `recipient`.
 */
export interface MailOutboxTable {
  /** `ml_…`; also the mail's Message-ID, so a copy sent again after a crash is the same message. */
  id: string;
  mode: Mode;
  merchant_id: string | null;
  /** The merchant's user it is addressed to, for notices (their unsubscribe link names them). */
  user_id: string | null;
  kind: string;
  /** What caused it, e.g. `payment:pay_…:succeeded`. */
  cause: string;
  /** The address, lower-case. */
  recipient: string;
  /** JSON: what the mail says, frozen when it was queued. */
  data: string;
  status: 'PENDING' | 'SENT' | 'FAILED' | 'KEPT';
  attempts: Generated<number>;
  next_attempt_at: number;
  lease_until: number | null;
  last_error: string | null;
  created_at: number;
  updated_at: number;
  sent_at: number | null;
}

/** Which notices a merchant's user receives; without a row, every notice and no summary. Flags are 0/1. */
export interface MailPreferencesTable {
  user_id: string;
  payments: number;
  refunds: number;
  /** Payments that need attention: PENDING past their bound, FAILED after a settle. */
  attention: number;
  /** A webhook endpoint failing for a day. */
  webhooks: number;
  summary: 'off' | 'daily' | 'weekly';
  updated_at: number;
}

/** An emailed password-reset link: the SHA-256 of its token; used once, within its 30 minutes. */
export interface PasswordResetsTable {
  token_hash: string;
  user_id: string;
  created_at: number;
  expires_at: number;
  used_at: number | null;
}

/** Where a buyer's receipt goes: for every payment of a session (given at creation), or for one payment. */
export interface MailReceiptAddressesTable {
  id: string;
  session_id: string;
  payment_id: string | null;
  email: string;
  created_at: number;
}
