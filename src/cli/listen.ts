// `till listen --forward-to URL`: a developer's machine follows a Till's events of one mode (the API
// key's) through the events API, without an inbound port, and forwards each to a local receiver with
// the body Till stored and the headers Till sends, signed with a secret of its own (Till's deliveries
// are signed per attempt with the endpoint's secret, which an API key does not carry).
import { existsSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import { REQUEST_TIMEOUT_MS, webhookHeaders } from '../webhooks/deliver.ts';
import { newSigningSecret, newWebhookKey } from '../webhooks/endpoints.ts';
import { noneLeft, takeOption, UsageError } from './output.ts';
import { callTill, type TillApi, TillUnreachable, tillApiOf } from './till-api.ts';

const USAGE =
  'listen --forward-to URL [--api-key KEY] [--till URL] [--events a,b] [--from ISO_TIME | --from-event EVENT_ID] [--state FILE] [--signing-secret whsec_…] [--webhook-key KEY] [--interval MS]';

/**
 * Events are ordered by the time Till wrote them, but one written inside a longer transaction may
 * commit (and show) a little after a later one: every poll looks this far back before the newest
 * event forwarded, and skips those already forwarded.
 */
export const LATE_WINDOW_MS = 10_000;
const PAGE_SIZE = 100;
const MAX_BACKOFF_MS = 30_000;

type ListedEvent = { id: string; type: string; createdAt: string; body: string };
type EventPage = { events: ListedEvent[]; nextCursor: string | null };

/**
 * Where the follower is: every event created at or after `from` that is in `forwarded` has been
 * forwarded, and every one before `from` was before the start or has been forwarded.
 */
type Position = { from: number; forwarded: Map<string, number> };

/** What `--state FILE` keeps across restarts: the position and the local secrets the receiver knows. */
type SavedState = { from: number; forwarded: [string, number][]; signingSecret: string; webhookKey: string };

export type ListenOptions = {
  api: TillApi;
  forwardTo: string;
  types: string[] | undefined;
  start: { at: 'now' } | { at: 'time'; time: number } | { at: 'event'; eventId: string };
  statePath: string | undefined;
  signingSecret: string;
  webhookKey: string;
  intervalMs: number;
  /** One line per event forwarded, on stdout. */
  print: (line: string) => void;
  /** Notices (Till unreachable, back again), on stderr. */
  notice: (line: string) => void;
  signal: AbortSignal;
};

const isoOf = (ms: number) => new Date(ms).toISOString();

function eventsPath(
  options: Pick<ListenOptions, 'types'>,
  from: number,
  cursor: string | null,
  order: 'oldest' | 'newest' = 'oldest',
  limit = PAGE_SIZE,
): string {
  const query = new URLSearchParams({ order, limit: String(limit), createdFrom: isoOf(from) });
  if (options.types) query.set('type', options.types.join(','));
  if (cursor) query.set('cursor', cursor);
  return `/api/checkout/v2/events?${query}`;
}

/** Asks Till until it answers: an outage is waited out with a growing pause, and told once as it starts and once as it ends. */
async function patiently<T>(options: ListenOptions, call: () => Promise<T>): Promise<T> {
  let failures = 0;
  for (;;) {
    try {
      const answer = await call();
      if (failures > 0) options.notice(`Till answers again after ${failures} failed ${failures === 1 ? 'try' : 'tries'}; going on where it stopped.`);
      return answer;
    } catch (error) {
      if (!(error instanceof TillUnreachable) || options.signal.aborted) throw error;
      const pause = error.retryAfterMs ?? Math.min(options.intervalMs * 2 ** failures, MAX_BACKOFF_MS);
      if (failures === 0) options.notice(`Till is unreachable (${error.message}); asking again, first in ${pause} ms.`);
      failures++;
      await sleep(pause, undefined, { signal: options.signal });
    }
  }
}

/** Where to begin: from the saved state, a time, an event (included), or after the newest event there is. */
async function startingPosition(options: ListenOptions, saved: SavedState | undefined): Promise<Position> {
  if (saved) return { from: saved.from, forwarded: new Map(saved.forwarded) };
  const { start } = options;
  if (start.at === 'time') return { from: start.time, forwarded: new Map() };
  if (start.at === 'event') {
    const event = await patiently(options, () => callTill<ListedEvent>(options.api, 'GET', `/api/checkout/v2/events/${encodeURIComponent(start.eventId)}`));
    return { from: Date.parse(event.createdAt), forwarded: new Map() };
  }
  // Now, as Till's clock has it: after the newest event, and after every other of the same millisecond.
  const newest = await patiently(options, () => callTill<EventPage>(options.api, 'GET', eventsPath(options, 0, null, 'newest', 1)));
  const last = newest.events[0];
  if (!last) return { from: 0, forwarded: new Map() };
  const from = Date.parse(last.createdAt);
  const forwarded = new Map<string, number>();
  for await (const event of eventsFrom(options, from)) forwarded.set(event.id, from);
  return { from, forwarded };
}

/** Every event created at or after `from`, oldest first, page after page. */
async function* eventsFrom(options: ListenOptions, from: number): AsyncGenerator<ListedEvent> {
  let cursor: string | null = null;
  do {
    const page: EventPage = await patiently(options, () => callTill<EventPage>(options.api, 'GET', eventsPath(options, from, cursor)));
    yield* page.events;
    cursor = page.nextCursor;
  } while (cursor);
}

/** POSTs one event to the receiver as Till would deliver it; the receiver's status, or why nothing came back. */
async function forward(options: ListenOptions, event: ListedEvent): Promise<string> {
  const headers = webhookHeaders({ eventId: event.id, body: event.body, webhookKey: options.webhookKey, signingSecret: options.signingSecret }, new Date());
  try {
    const response = await fetch(options.forwardTo, {
      method: 'POST',
      headers,
      body: event.body,
      signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS),
      redirect: 'manual',
    });
    await response.arrayBuffer().catch(() => undefined);
    return `[${response.status}]`;
  } catch (error) {
    const cause = (error as { cause?: Error }).cause;
    return `[failed: ${(error as Error).name === 'TimeoutError' ? `no answer in ${REQUEST_TIMEOUT_MS} ms` : (cause?.message ?? (error as Error).message)}]`;
  }
}

function readState(path: string): SavedState | undefined {
  if (!existsSync(path)) return undefined;
  try {
    const state = JSON.parse(readFileSync(path, 'utf8')) as SavedState;
    if (typeof state.from !== 'number' || !Array.isArray(state.forwarded) || typeof state.signingSecret !== 'string') throw new Error('not a state file');
    return state;
  } catch (error) {
    throw new UsageError(`--state ${path} cannot be read as till listen's state: ${(error as Error).message}`);
  }
}

/** Written whole, then renamed over the old one: a crash leaves the old state or the new, never half of one. */
function writeState(path: string, position: Position, options: ListenOptions): void {
  const state: SavedState = { from: position.from, forwarded: [...position.forwarded], signingSecret: options.signingSecret, webhookKey: options.webhookKey };
  writeFileSync(`${path}.tmp`, JSON.stringify(state));
  renameSync(`${path}.tmp`, path);
}

/**
 * Follows until `options.signal` aborts: each poll reads the events from a little before the newest
 * forwarded one, oldest first, and forwards those not forwarded yet, one at a time, in order. The
 * position moves only after a forward, so an outage of Till at any point loses and repeats nothing.
 */
export async function listen(options: ListenOptions): Promise<void> {
  const saved = options.statePath ? readState(options.statePath) : undefined;
  const position = await startingPosition(options, saved);
  options.notice(`Ready: forwarding ${options.api.modeName}-mode events of ${options.api.baseUrl} to ${options.forwardTo} (Ctrl-C to stop).`);
  while (!options.signal.aborted) {
    let newest = position.from;
    for await (const event of eventsFrom(options, position.from)) {
      const createdAt = Date.parse(event.createdAt);
      newest = Math.max(newest, createdAt);
      if (options.signal.aborted) return;
      if (position.forwarded.has(event.id)) continue;
      const status = await forward(options, event);
      position.forwarded.set(event.id, createdAt);
      options.print(`${event.createdAt}  ${event.type.padEnd(17)}  ${event.id}  ${status}`);
      if (options.statePath) writeState(options.statePath, position, options);
    }
    // Move on, keeping the late window: what is older than it has been seen by every poll since.
    position.from = Math.max(position.from, newest - LATE_WINDOW_MS);
    for (const [id, createdAt] of position.forwarded) if (createdAt < position.from) position.forwarded.delete(id);
    if (options.statePath) writeState(options.statePath, position, options);
    await sleep(options.intervalMs, undefined, { signal: options.signal }).catch(() => undefined);
  }
}

function startOf(from: string | undefined, fromEvent: string | undefined): ListenOptions['start'] {
  if (from !== undefined && fromEvent !== undefined) throw new UsageError('--from and --from-event go alone: one start');
  if (fromEvent !== undefined) return { at: 'event', eventId: fromEvent };
  if (from === undefined) return { at: 'now' };
  const time = Date.parse(from);
  if (!/^\d{4}-\d\d-\d\d/.test(from) || Number.isNaN(time))
    throw new UsageError(`--from must be an ISO 8601 time (2026-01-31T12:00:00Z), not ${JSON.stringify(from)}`);
  return { at: 'time', time };
}

/** `till listen --forward-to URL …` */
export async function listenCommand(args: string[]): Promise<void> {
  const forwardTo = takeOption(args, '--forward-to');
  if (!forwardTo) throw new UsageError(`till ${USAGE}`);
  const api = tillApiOf(args);
  const types = takeOption(args, '--events')
    ?.split(',')
    .map((type) => type.trim())
    .filter(Boolean);
  const start = startOf(takeOption(args, '--from'), takeOption(args, '--from-event'));
  const statePath = takeOption(args, '--state');
  const givenSecret = takeOption(args, '--signing-secret');
  const givenKey = takeOption(args, '--webhook-key');
  const interval = takeOption(args, '--interval');
  noneLeft(args);
  if (!/^https?:\/\/[^/]/.test(forwardTo)) throw new UsageError(`--forward-to must be an http(s) URL, not ${JSON.stringify(forwardTo)}`);
  if (givenSecret !== undefined && !/^whsec_[A-Za-z0-9+/]{22,}={0,2}$/.test(givenSecret)) throw new UsageError('--signing-secret must be a whsec_… secret');
  const intervalMs = interval === undefined ? 1000 : Number(interval);
  if (!Number.isInteger(intervalMs) || intervalMs < 50 || intervalMs > 60_000)
    throw new UsageError('--interval must be a whole number of milliseconds, 50 to 60000');
  const saved = statePath ? readState(statePath) : undefined;
  const signingSecret = givenSecret ?? saved?.signingSecret ?? newSigningSecret();
  const webhookKey = givenKey ?? saved?.webhookKey ?? newWebhookKey();
  process.stderr.write(
    `Signing secret (Standard Webhooks; give it to your receiver): ${signingSecret}\nWebhook key (sent as X-Webhook-Api-Key): ${webhookKey}\n${
      saved ? `Resuming from ${statePath}.\n` : ''
    }`,
  );
  const stop = new AbortController();
  for (const signal of ['SIGINT', 'SIGTERM'] as const) process.once(signal, () => stop.abort());
  try {
    await listen({
      api,
      forwardTo,
      types,
      start,
      statePath,
      signingSecret,
      webhookKey,
      intervalMs,
      print: (line) => process.stdout.write(`${line}\n`),
      notice: (line) => process.stderr.write(`${line}\n`),
      signal: stop.signal,
    });
  } catch (error) {
    if (!stop.signal.aborted) throw error;
  }
}
