import { createAuthHeader, createCorrelationHeader } from '@coinbase/x402';
import type { PaymentPayload, PaymentRequirements, SupportedResponse } from '@x402/core/types';
import type { Histogram } from 'prom-client';
import type { Config } from '../config.ts';
import type { AppContext } from '../context.ts';

/**
 * Why a facilitator call gave no verdict, as the operator needs to read it:
 * - `timeout`, `unreachable`: no answer (the call may still have been carried out);
 * - `unreadable`: an answer that is not the facilitator's JSON (HTML from a proxy, an empty body, a 2xx of nonsense);
 * - `server_error`: a 5xx;
 * - `rate_limited`: a 429, with the facilitator's Retry-After;
 * - `refused`: any other 4xx without a verdict (401/403 credentials, 402 `payment_method_required`,
 *   400 `invalid_request`), or a key that cannot sign the request (nothing was sent): a configuration
 *   problem, the same on every retry.
 */
export type FacilitatorProblemKind = 'timeout' | 'unreachable' | 'unreadable' | 'server_error' | 'rate_limited' | 'refused';

export type FacilitatorProblem = {
  operation: 'verify' | 'settle' | 'supported';
  kind: FacilitatorProblemKind;
  status?: number;
  /** The hosted facilitator's error body (`errorType`, `errorMessage`, `correlationId` — the id its support asks for). */
  errorType?: string;
  errorMessage?: string;
  correlationId?: string;
  retryAfterSeconds?: number;
  /** The start of a body that is not the facilitator's JSON. */
  excerpt?: string;
};

export class FacilitatorError extends Error {
  readonly problem: FacilitatorProblem;
  constructor(problem: FacilitatorProblem) {
    super(describeProblem(problem));
    this.name = 'FacilitatorError';
    this.problem = problem;
  }
}

/** One line an operator reads: what was asked, what came back. */
export function describeProblem(problem: FacilitatorProblem): string {
  const status = problem.status === undefined ? '' : ` ${problem.status}`;
  const said = [problem.errorType, problem.errorMessage].filter(Boolean).join(': ') || problem.excerpt;
  const what: Record<FacilitatorProblemKind, string> = {
    timeout: 'did not answer in time',
    unreachable: 'could not be reached',
    unreadable: `answered${status} with something that is not its JSON`,
    server_error: `answered${status} (a server error)`,
    rate_limited: `answered${status}: too many requests`,
    refused: `refused the request${status}`,
  };
  return `facilitator ${problem.operation} ${what[problem.kind]}${said ? ` (${said})` : ''}${problem.correlationId ? ` [correlationId ${problem.correlationId}]` : ''}`;
}

/** A verify verdict: the proof holds, or the facilitator refused it (a payer's problem, not the service's). */
export type VerifyVerdict = { isValid: true; payer?: string } | { isValid: false; invalidReason: string; invalidMessage?: string };

/**
 * What a settle call came to:
 * - `settled`: success with a transaction;
 * - `refused`: a definite answer that nothing was submitted (a refusal without a transaction, a 429,
 *   a 4xx of configuration); `problem` is set when it was the facilitator's problem, not the payment's;
 * - `unsure`: the payment may be on chain (no answer, a 5xx, "pending", nonsense); `transaction` when one was named.
 */
export type SettleOutcome =
  | { kind: 'settled'; transaction: string; response: unknown }
  | { kind: 'refused'; reason: string; message?: string; problem?: FacilitatorProblem }
  | { kind: 'unsure'; reason: string; transaction?: string; problem?: FacilitatorProblem };

export type Facilitator = {
  /** Throws FacilitatorError when there is no verdict. */
  verify(payload: PaymentPayload, requirements: PaymentRequirements): Promise<VerifyVerdict>;
  /** Never throws: every way a settle can end is an outcome. */
  settle(payload: PaymentPayload, requirements: PaymentRequirements): Promise<SettleOutcome>;
  /** The payment kinds it settles (`GET /supported`), asked at a live start and by `till doctor`. Throws FacilitatorError. */
  supported(): Promise<SupportedResponse>;
};

const VERIFY_TIMEOUT_MS = 10_000;
const SUPPORTED_TIMEOUT_MS = 10_000;
/** A Retry-After the service passes on is kept within reason. */
const MAX_RETRY_AFTER_S = 600;

type Operation = FacilitatorProblem['operation'];
type AuthHeaders = (operation: Operation) => Promise<Record<string, string>>;

/**
 * The headers a facilitator call carries. Coinbase's hosted facilitator takes a JWT signed per
 * request with the CDP API key (ES256 or Ed25519), naming the request's method, host and path: made
 * by `@coinbase/x402`'s own `createAuthHeader`, for the configured URL (Coinbase's unless overridden),
 * for the one call about to be made.
 */
export function facilitatorAuthHeaders(url: string, auth: Config['facilitator'], staticHeaders: Record<string, string>): AuthHeaders | undefined {
  if (auth.kind === 'url') {
    if (Object.keys(staticHeaders).length === 0) return undefined;
    return async () => staticHeaders;
  }
  const { host, pathname } = new URL(url);
  const base = pathname.replace(/\/+$/, '');
  return async (operation) => ({
    ...staticHeaders,
    Authorization: await createAuthHeader(auth.apiKeyId, auth.apiKeySecret, operation === 'supported' ? 'GET' : 'POST', host, `${base}/${operation}`),
    'Correlation-Context': createCorrelationHeader(),
  });
}

const record = (value: unknown): Record<string, unknown> | undefined =>
  typeof value === 'object' && value !== null && !Array.isArray(value) ? (value as Record<string, unknown>) : undefined;
const text = (value: unknown): string | undefined => (typeof value === 'string' && value !== '' ? value.slice(0, 500) : undefined);

function excerptOf(body: string): string {
  const compact = body.trim().replace(/\s+/g, ' ');
  if (!compact) return '<empty body>';
  return compact.length <= 200 ? compact : `${compact.slice(0, 197)}...`;
}

function retryAfterOf(header: string | null): number | undefined {
  if (!header) return undefined;
  const seconds = /^\d+$/.test(header.trim()) ? Number(header.trim()) : Math.ceil((Date.parse(header) - Date.now()) / 1000);
  return Number.isFinite(seconds) ? Math.min(Math.max(seconds, 1), MAX_RETRY_AFTER_S) : undefined;
}

/** What an answer that is not a verdict says, in the facilitator's error schema when it used it. */
function problemOf(operation: Operation, status: number, body: string, json: Record<string, unknown> | undefined, headers: Headers): FacilitatorProblem {
  const kind: FacilitatorProblemKind =
    status === 429 ? 'rate_limited' : status >= 500 || status === 408 ? 'server_error' : status >= 400 ? 'refused' : 'unreadable';
  const errorType = text(json?.errorType);
  const errorMessage = text(json?.errorMessage) ?? text(json?.message) ?? text(json?.error);
  const correlationId = text(json?.correlationId) ?? text(headers.get('correlation-id')) ?? text(headers.get('x-correlation-id'));
  const retryAfterSeconds = kind === 'rate_limited' ? retryAfterOf(headers.get('retry-after')) : undefined;
  return {
    operation,
    kind,
    status,
    ...(errorType ? { errorType } : {}),
    ...(errorMessage ? { errorMessage } : {}),
    ...(correlationId ? { correlationId } : {}),
    ...(retryAfterSeconds !== undefined ? { retryAfterSeconds } : {}),
    ...(errorType || errorMessage ? {} : { excerpt: excerptOf(body) }),
  };
}

type Answered = { status: number; body: string; json: Record<string, unknown> | undefined; headers: Headers };

function noAnswer(operation: Operation, error: unknown): FacilitatorProblem {
  const timedOut = error instanceof Error && (error.name === 'TimeoutError' || error.name === 'AbortError');
  const cause = error instanceof Error ? (error.cause instanceof Error ? error.cause.message : error.message) : String(error);
  return { operation, kind: timedOut ? 'timeout' : 'unreachable', excerpt: cause.split('\n')[0]!.slice(0, 200) };
}

/**
 * The facilitator over HTTP: the hosted one in production, `till sandbox` locally — one code path.
 * Every answer is read in full, so a refusal keeps the facilitator's own words; every call is timed,
 * so the latency Till adds on top can be told apart in /metrics.
 */
export function createFacilitator(options: {
  url: string;
  auth?: Config['facilitator'];
  headers: Record<string, string>;
  callSeconds?: Histogram<'operation' | 'outcome'>;
  settleTimeoutMs: number;
}): Facilitator {
  const base = options.url.replace(/\/+$/, '');
  const auth = facilitatorAuthHeaders(base, options.auth ?? { kind: 'url' }, options.headers);
  const call = async (operation: Operation, init: { body?: unknown; timeoutMs: number }): Promise<Answered> => {
    let signed: Record<string, string> | undefined;
    try {
      signed = await auth?.(operation);
    } catch (error) {
      // Nothing was sent: the key itself is the problem, the same on every retry.
      throw new FacilitatorError({
        operation,
        kind: 'refused',
        errorMessage: `the API key cannot sign the request: ${(error as Error).message}`.slice(0, 500),
      });
    }
    const stop = options.callSeconds?.startTimer({ operation });
    try {
      const headers = { accept: 'application/json', ...(init.body === undefined ? {} : { 'content-type': 'application/json' }), ...signed };
      const response = await fetch(`${base}/${operation}`, {
        method: init.body === undefined ? 'GET' : 'POST',
        headers,
        ...(init.body === undefined ? {} : { body: JSON.stringify(init.body) }),
        signal: AbortSignal.timeout(init.timeoutMs),
      });
      const body = await response.text();
      let json: Record<string, unknown> | undefined;
      try {
        json = record(JSON.parse(body));
      } catch {
        json = undefined;
      }
      stop?.({ outcome: 'answered' });
      return { status: response.status, body, json, headers: response.headers };
    } catch (error) {
      stop?.({ outcome: 'error' });
      throw new FacilitatorError(noAnswer(operation, error));
    }
  };
  const request = (payload: PaymentPayload, requirements: PaymentRequirements) => ({
    x402Version: payload.x402Version,
    paymentPayload: payload,
    paymentRequirements: requirements,
  });

  return {
    async verify(payload, requirements) {
      const answer = await call('verify', { body: request(payload, requirements), timeoutMs: VERIFY_TIMEOUT_MS });
      const { status, json } = answer;
      // A verdict is a 200 with isValid, or the documented 400 rejection (isValid false with its reason).
      if (json && typeof json.isValid === 'boolean' && (status === 200 || (status === 400 && json.isValid === false))) {
        if (json.isValid) return { isValid: true, ...(text(json.payer) ? { payer: text(json.payer)! } : {}) };
        const invalidMessage = text(json.invalidMessage);
        return { isValid: false, invalidReason: text(json.invalidReason) ?? 'invalid', ...(invalidMessage ? { invalidMessage } : {}) };
      }
      throw new FacilitatorError(problemOf('verify', status, answer.body, json, answer.headers));
    },
    async settle(payload, requirements) {
      let answer: Answered;
      try {
        answer = await call('settle', { body: request(payload, requirements), timeoutMs: options.settleTimeoutMs });
      } catch (error) {
        const problem = (error as FacilitatorError).problem;
        if (problem.kind === 'refused') return { kind: 'refused', reason: 'request_not_signed', problem };
        return { kind: 'unsure', reason: problem.kind === 'timeout' ? 'settle_timeout' : 'settle_unanswered', problem };
      }
      const { status, json } = answer;
      const transaction = text(json?.transaction);
      const ok = status >= 200 && status < 300;
      if (ok && json?.success === true && transaction) return { kind: 'settled', transaction, response: json };
      const rejection = json?.success === false && (ok || (status >= 400 && status < 500 && status !== 408 && status !== 429));
      const problem = rejection ? undefined : problemOf('settle', status, answer.body, json, answer.headers);
      const reason = text(json?.errorReason) ?? problem?.errorType ?? (problem ? `http_${status}` : 'settlement_failed');
      const message = text(json?.errorMessage);
      // A named transaction, a 5xx, or an answer that is not one may all hide a transfer: the chain tells.
      if (transaction || problem?.kind === 'server_error' || problem?.kind === 'unreadable')
        return { kind: 'unsure', reason, ...(transaction ? { transaction } : {}), ...(problem ? { problem } : {}) };
      // The facilitator's rejection of the payment, a 429, or a refusal of the service's request: nothing was submitted.
      return { kind: 'refused', reason, ...(message ? { message } : {}), ...(problem ? { problem } : {}) };
    },
    async supported() {
      const answer = await call('supported', { timeoutMs: SUPPORTED_TIMEOUT_MS });
      if (answer.status === 200 && Array.isArray(answer.json?.kinds)) return answer.json as unknown as SupportedResponse;
      throw new FacilitatorError(problemOf('supported', answer.status, answer.body, answer.json, answer.headers));
    },
  };
}

/** The ids a facilitator problem concerns, for the log line an operator searches by. */
export type ProblemSubject = { sessionId?: string; paymentId?: string; refundId?: string };

/**
 * Every facilitator call that gave no verdict is logged once, with what the facilitator said
 * (status, errorType, errorMessage, correlationId) and whose payment it was, and counted in
 * till_facilitator_problems_total; a refusal of the service's own request is an error an operator
 * is alerted to. The request's credentials are never part of it.
 */
export function reportFacilitatorProblem(
  context: Pick<AppContext, 'metrics'>,
  log: Pick<AppContext['log'], 'warn' | 'error'>,
  problem: FacilitatorProblem,
  subject: ProblemSubject,
): void {
  const errorType = problem.errorType && /^[a-z0-9_]{1,64}$/.test(problem.errorType) ? problem.errorType : problem.errorType ? 'other' : 'none';
  context.metrics.facilitatorProblems.inc({ operation: problem.operation, kind: problem.kind, error_type: errorType });
  const line = { facilitator: problem, ...subject };
  if (problem.kind === 'refused') log.error(line, `${describeProblem(problem)}: fix the facilitator settings (till doctor)`);
  else log.warn(line, describeProblem(problem));
}
