import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { TillError } from '../common/errors.ts';

/** Form posts are small: a few fields of a page (a route that takes a file sets its own limit). */
const FORM_BODY_LIMIT = 16 * 1024;

/** The parts a form post may have: its fields and its files, counted before a multipart body is parsed. */
export type FormLimits = { fields: number; files: number };

/** A page's form: a few fields (the checkboxes of a list included), no file. A route taking more says so (`formLimits`). */
export const DEFAULT_FORM_LIMITS: FormLimits = { fields: 32, files: 0 };

declare module 'fastify' {
  interface FastifyContextConfig {
    /** The parts a form post to the route may have; DEFAULT_FORM_LIMITS unless given. */
    formLimits?: FormLimits;
  }
}

const limitsOf = (request: FastifyRequest): FormLimits => request.routeOptions.config.formLimits ?? DEFAULT_FORM_LIMITS;

const plural = (count: number, one: string) => `${count} ${one}${count === 1 ? '' : 's'}`;

/** The form's parts over the route's limits, refused naming them (413). */
function tooManyParts(limits: FormLimits, found: string): TillError {
  const takes = limits.files === 0 ? `${plural(limits.fields, 'field')} and no file` : `${plural(limits.files, 'file')} and ${plural(limits.fields, 'field')}`;
  return new TillError('form_too_large', { found, takes });
}

/**
 * Lets an encapsulated group of routes (pages, the OAuth token endpoint) take
 * `application/x-www-form-urlencoded` bodies, as flat string fields. A field sent twice is kept
 * as its first value and listed in `repeated`. More fields than the route's limits: 413. Call it
 * inside `app.register`.
 */
export function registerFormParser(app: FastifyInstance): void {
  app.addContentTypeParser('application/x-www-form-urlencoded', { parseAs: 'string', bodyLimit: FORM_BODY_LIMIT }, (request, body, done) => {
    const pairs = [...new URLSearchParams(body.toString())];
    const limits = limitsOf(request);
    if (pairs.length > limits.fields) return done(tooManyParts(limits, plural(pairs.length, 'field')), undefined);
    done(null, fieldsOf(pairs));
  });
}

/** The boundary a multipart body's Content-Type names, if any. */
function boundaryOf(contentType: string): string | undefined {
  const match = /;\s*boundary=(?:"([^"]+)"|([^;\s]+))/i.exec(contentType);
  return match?.[1] ?? match?.[2];
}

/**
 * The parts of a multipart body, counted from its delimiters (a boundary never occurs in a part),
 * up to `most + 1`: a native search through the bytes, far cheaper than parsing them.
 */
function countParts(body: Buffer, boundary: string, most: number): number {
  const delimiter = Buffer.from(`--${boundary}`);
  let delimiters = 0;
  for (let at = body.indexOf(delimiter); at !== -1 && delimiters <= most + 1; at = body.indexOf(delimiter, at + delimiter.length)) delimiters++;
  // The last delimiter closes the body.
  return Math.max(0, delimiters - 1);
}

/**
 * Lets the pages' forms also come as `multipart/form-data` (a form with a file input): its text
 * fields are read as `registerFormParser`'s are, so the CSRF guard reads them the same way, and its
 * files are kept apart (`formFile`). Parsed by the platform's own FormData (undici's), within
 * FORM_BODY_LIMIT unless the route sets its own `bodyLimit`, and only once its parts, counted
 * first, are within the route's limits (413 otherwise).
 */
export function registerMultipartParser(app: FastifyInstance): void {
  app.addContentTypeParser('multipart/form-data', { parseAs: 'buffer', bodyLimit: FORM_BODY_LIMIT }, async (request: FastifyRequest, body: Buffer) => {
    const limits = limitsOf(request);
    const boundary = boundaryOf(String(request.headers['content-type']));
    const parts = boundary === undefined ? 0 : countParts(body, boundary, limits.fields + limits.files);
    if (parts > limits.fields + limits.files) throw tooManyParts(limits, `more than ${plural(limits.fields + limits.files, 'part')}`);
    let form: FormData;
    try {
      form = await new Response(new Uint8Array(body), { headers: { 'content-type': String(request.headers['content-type']) } }).formData();
    } catch {
      throw new TillError('invalid_request', { problem: 'The body is not a well-formed multipart/form-data form' });
    }
    const pairs: [string, string][] = [];
    const blobs = new Map<string, File>();
    let fileCount = 0;
    form.forEach((value, name) => {
      if (typeof value === 'string') pairs.push([name, value]);
      else {
        fileCount++;
        if (!blobs.has(name)) blobs.set(name, value);
      }
    });
    if (pairs.length > limits.fields || fileCount > limits.files)
      throw tooManyParts(limits, `${plural(fileCount, 'file')} and ${plural(pairs.length, 'field')}`);
    const files = new Map<string, FormFile>();
    for (const [name, file] of blobs) files.set(name, { fileName: file.name, bytes: new Uint8Array(await file.arrayBuffer()) });
    const fields = fieldsOf(pairs);
    Object.defineProperty(fields, FILES, { value: files, enumerable: false });
    return fields;
  });
}

const REPEATED = Symbol('repeated form fields');
const ALL_PAIRS = Symbol('every form field, in order');
const FILES = Symbol('the files of a multipart form');

/** A file of a multipart form: the name the browser gave it and its bytes (its declared type is not kept: nothing should trust it). */
export type FormFile = { fileName: string; bytes: Uint8Array };

/** Form fields as flat strings, the first value of each name; the rest kept apart (`repeatedFields`, `formValues`). */
function fieldsOf(pairs: [string, string][]): Record<string, string> {
  const fields: Record<string, string> = {};
  const repeated: string[] = [];
  for (const [name, value] of pairs) {
    if (Object.hasOwn(fields, name)) repeated.push(name);
    else fields[name] = value;
  }
  Object.defineProperty(fields, REPEATED, { value: repeated, enumerable: false });
  Object.defineProperty(fields, ALL_PAIRS, { value: pairs, enumerable: false });
  return fields;
}

/** The file sent as `name` in a multipart form body (the first, when several), or undefined. */
export function formFile(request: FastifyRequest, name: string): FormFile | undefined {
  const body = request.body as Record<symbol, unknown> | undefined;
  return (body && (body[FILES] as Map<string, FormFile> | undefined))?.get(name);
}

/** The fields of a form body (or of a JSON object of strings); anything else is an empty form. */
export function formFields(request: FastifyRequest): Record<string, string> {
  const body = request.body;
  if (typeof body !== 'object' || body === null || Array.isArray(body)) return {};
  return Object.fromEntries(Object.entries(body).filter((entry): entry is [string, string] => typeof entry[1] === 'string'));
}

/** Names sent more than once in a form body. */
export function repeatedFields(request: FastifyRequest): string[] {
  const body = request.body as Record<symbol, unknown> | undefined;
  return (body && (body[REPEATED] as string[] | undefined)) ?? [];
}

/** Every value of a field that may be sent more than once (checkboxes sharing a name). */
export function formValues(request: FastifyRequest, name: string): string[] {
  const body = request.body as Record<symbol, unknown> | undefined;
  const pairs = (body && (body[ALL_PAIRS] as [string, string][] | undefined)) ?? [];
  return pairs.filter(([field]) => field === name).map(([, value]) => value);
}

/** The cookies of a request, by name; a malformed pair is skipped. */
export function readCookies(request: FastifyRequest): Record<string, string> {
  const cookies: Record<string, string> = {};
  for (const part of (request.headers.cookie ?? '').split(';')) {
    const index = part.indexOf('=');
    if (index < 1) continue;
    const name = part.slice(0, index).trim();
    if (Object.hasOwn(cookies, name)) continue;
    try {
      cookies[name] = decodeURIComponent(part.slice(index + 1).trim());
    } catch {
      // not percent-encoded properly: ignored
    }
  }
  return cookies;
}

export type CookieOptions = { secure: boolean; maxAgeSeconds?: number };

/**
 * Sets a cookie the page's script cannot read (HttpOnly), sent on top-level navigations from
 * elsewhere but not on cross-site posts (SameSite=Lax), and over https only when the service is.
 */
export function setCookie(reply: FastifyReply, name: string, value: string, options: CookieOptions): void {
  const parts = [`${name}=${encodeURIComponent(value)}`, 'Path=/', 'HttpOnly', 'SameSite=Lax'];
  if (options.secure) parts.push('Secure');
  if (options.maxAgeSeconds !== undefined) parts.push(`Max-Age=${options.maxAgeSeconds}`);
  const existing = reply.getHeader('set-cookie');
  const list = existing === undefined ? [] : Array.isArray(existing) ? existing.map(String) : [String(existing)];
  reply.header('set-cookie', [...list, parts.join('; ')]);
}

export function clearCookie(reply: FastifyReply, name: string, options: CookieOptions): void {
  setCookie(reply, name, '', { ...options, maxAgeSeconds: 0 });
}

/**
 * Cookie names: with https, the `__Host-` prefix makes the browser refuse the cookie unless it is
 * Secure, for this host only and for every path.
 */
export const cookieName = (name: string, secure: boolean) => (secure ? `__Host-${name}` : name);
