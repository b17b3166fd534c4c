import { errorMessage, INVALID_RECORD, TrainsyncError } from '../lib/errors.ts';
import { errorBodySchema } from './schemas.ts';

/**
 * One error class for everything the platform client can throw, with a stable `code`
 * (got's style: few classes, many codes). Callers branch on `code` and `retryable`;
 * the queue layer turns `retryable === false` into BullMQ's UnrecoverableError.
 */

/** 400 codes the vendor documents; each means "the request itself is wrong", never transient. */
export const DOCUMENTED_CODES: readonly string[] = [
  'INVALID_MODEL',
  'USER_LIMIT_REACHED',
  'EMAIL_IN_USE_ORG_CONNECTED',
  'EMAIL_IN_USE',
  'USER_NOT_FOUND',
  'INVALID_USER_TYPE',
  'INVALID_PASSWORD',
  'NO_UNLIMITED_PLAN',
  'USER_IN_OTHER_ORG',
  'USER_SEAT_ASSIGNED',
  'NO_GROUPS_AVAILABLE',
  'GROUP_NOT_FOUND',
  'USER_LOCKOUT',
  'COURSE_NOT_FOUND',
  'RESULT_NOT_FOUND',
];

/** Codes the client makes up when the body carries none. */
export type SyntheticCode = 'TIMEOUT' | 'NETWORK' | 'PLATFORM_UNREACHABLE' | 'ABORTED' | 'BUDGET_UNAVAILABLE' | 'MALFORMED_RESPONSE' | 'PAGINATION_LOOP' | 'UNAUTHORIZED' | `HTTP_${number}`;

/** The vendor's reference spells it `COUSRE_NOT_FOUND`; the platform may send either. */
const CODE_ALIASES: Readonly<Record<string, string>> = { COUSRE_NOT_FOUND: 'COURSE_NOT_FOUND' };

export interface PlatformErrorInit {
  status?: number | undefined;
  code: string;
  /** The code exactly as the platform sent it, when normalisation changed it. */
  rawCode?: string | undefined;
  details?: unknown;
  retryable: boolean;
  cause?: unknown;
  /** From a `Retry-After` header, already converted to milliseconds from now. */
  retryAfterMs?: number | undefined;
}

export class PlatformError extends TrainsyncError {
  readonly status: number | undefined;
  readonly rawCode: string | undefined;
  readonly details: unknown;
  readonly retryAfterMs: number | undefined;

  constructor(message: string, init: PlatformErrorInit) {
    super(message, init);
    this.name = 'PlatformError';
    this.status = init.status;
    this.rawCode = init.rawCode;
    this.details = init.details;
    this.retryAfterMs = init.retryAfterMs;
  }
}

/**
 * A 2xx body that is JSON but not a valid record (GET results/{id}): like a list page's
 * bad record, it is quarantined, not retried; reading it again returns the same record.
 */
export class InvalidRecordError extends PlatformError {
  constructor(
    message: string,
    /** The record exactly as the platform sent it. */
    readonly raw: unknown,
    /** The validation message, naming the field. */
    readonly problem: string,
    status?: number,
  ) {
    super(message, { status, code: INVALID_RECORD, retryable: false });
    this.name = 'InvalidRecordError';
  }
}

/** True for errors worth another attempt (429, 5xx, timeouts, resets, malformed bodies). */
export function isRetryable(error: unknown): boolean {
  if (error instanceof PlatformError) return error.retryable;
  return false;
}

/** Maps `COUSRE_NOT_FOUND` to `COURSE_NOT_FOUND`; other codes pass through. */
export function normaliseCode(code: string): string {
  return CODE_ALIASES[code] ?? code;
}

export interface ResponseFacts {
  method: string;
  /** Path only (no query string): it ends up in the message. */
  path: string;
  status: number;
  body: string;
  retryAfterMs?: number | undefined;
}

function parseErrorBody(body: string): { code: string; message: string | undefined; details: unknown } | undefined {
  let json: unknown;
  try {
    json = JSON.parse(body);
  } catch {
    return undefined;
  }
  const parsed = errorBodySchema.safeParse(json);
  if (!parsed.success) return undefined;
  return { code: parsed.data.code, message: parsed.data.message, details: parsed.data.details ?? null };
}

/** How classifyResponse words a refused key: a job's failure reaches whoever waits for it as this text only. */
const REFUSED_KEY_MESSAGE = /\bwas refused with HTTP 40[13] \(/;

/** True for the message of a refused API key (401/403), e.g. a failed job's reason. */
export function isRefusedKeyMessage(message: string): boolean {
  return REFUSED_KEY_MESSAGE.test(message);
}

/** Turns a non-2xx response into a PlatformError with the right code and retryability. */
export function classifyResponse(facts: ResponseFacts): PlatformError {
  const { method, path, status } = facts;
  const where = `${method} ${path}`;
  const body = parseErrorBody(facts.body);
  const rawCode = body?.code;
  const bodyCode = rawCode === undefined ? undefined : normaliseCode(rawCode);
  const aliasNote = rawCode !== undefined && bodyCode !== rawCode ? rawCode : undefined;
  const said = body?.message ? `: ${body.message}` : '';

  if (status === 401 || status === 403) {
    return new PlatformError(
      `${where} was refused with HTTP ${status} (${rawCode ?? 'no code'}${said}); check TRAINSYNC_API_KEY: it must be the organisation's API key for this platform`,
      { status, code: 'UNAUTHORIZED', rawCode, details: body?.details, retryable: false },
    );
  }
  if (status === 429) {
    return new PlatformError(`${where} was rate limited (HTTP 429${said})`, {
      status,
      code: bodyCode ?? 'HTTP_429',
      rawCode: aliasNote,
      details: body?.details,
      retryable: true,
      retryAfterMs: facts.retryAfterMs,
    });
  }
  if (status >= 500) {
    // The vendor says a 5xx (whatever its body) is transient and unclassified.
    return new PlatformError(`${where} failed with HTTP ${status}${rawCode ? ` (${rawCode}${said})` : ''}`, {
      status,
      code: `HTTP_${status}`,
      rawCode,
      details: body?.details,
      retryable: true,
      retryAfterMs: facts.retryAfterMs,
    });
  }
  if (status === 408) {
    return new PlatformError(`${where} timed out on the server (HTTP 408)`, { status, code: 'TIMEOUT', retryable: true });
  }
  if (body !== undefined && bodyCode !== undefined) {
    return new PlatformError(`${where} was rejected with ${bodyCode}${said}`, {
      status,
      code: bodyCode,
      rawCode: aliasNote,
      details: body.details,
      retryable: false,
    });
  }
  return new PlatformError(`${where} failed with HTTP ${status} and a body that is not the documented error shape`, {
    status,
    code: `HTTP_${status}`,
    retryable: false,
  });
}

const NETWORK_CODES = new Set([
  'ECONNRESET',
  'ECONNREFUSED',
  'EPIPE',
  'ENOTFOUND',
  'EAI_AGAIN',
  'ENETUNREACH',
  'EHOSTUNREACH',
  'ECONNABORTED',
  'ERR_STREAM_PREMATURE_CLOSE',
  'UND_ERR_SOCKET',
  'UND_ERR_CLOSED',
]);

/** undici's timeouts by phase (connect, headers, body between chunks). */
const TIMEOUT_CODES = new Set(['ETIMEDOUT', 'UND_ERR_CONNECT_TIMEOUT', 'UND_ERR_HEADERS_TIMEOUT', 'UND_ERR_BODY_TIMEOUT']);

/**
 * Turns a transport failure (undici's errors, a socket error, or anything thrown while
 * sending) into a PlatformError. The cause is a bare copy: an HTTP client's error may hold
 * the request, headers included, and must not reach a log line through `err.cause`.
 */
export function classifyTransportError(error: unknown, method: string, path: string): PlatformError {
  if (error instanceof PlatformError) return error;
  const where = `${method} ${path}`;
  const name = error instanceof Error ? error.name : 'Error';
  const code = typeof error === 'object' && error !== null && 'code' in error ? String((error as { code: unknown }).code) : undefined;
  const message = errorMessage(error);
  const cause = Object.assign(new Error(message), { name, code });
  if (name === 'AbortError' || code === 'ERR_ABORTED' || code === 'UND_ERR_ABORTED') {
    // Retryable for the queue (a job stopped by shutdown should run again later); the
    // client itself never retries once its signal is aborted.
    return new PlatformError(`${where} was aborted`, { code: 'ABORTED', retryable: true, cause });
  }
  if (name === 'TimeoutError' || (code !== undefined && TIMEOUT_CODES.has(code))) {
    return new PlatformError(`${where} timed out (${message})`, { code: 'TIMEOUT', retryable: true, cause });
  }
  if (code !== undefined && (NETWORK_CODES.has(code) || name === 'RequestError' || name === 'ReadError')) {
    return new PlatformError(`${where} failed on the network (${code}: ${message})`, { code: 'NETWORK', retryable: true, cause });
  }
  if (name === 'RequestError' || name === 'ReadError') {
    return new PlatformError(`${where} failed on the network (${message})`, { code: 'NETWORK', retryable: true, cause });
  }
  return new PlatformError(`${where} failed: ${message}`, { code: 'NETWORK', retryable: false, cause });
}

/** The code of a platform that has never answered and refuses or cannot be found: the URL setting's fault. */
export const PLATFORM_UNREACHABLE = 'PLATFORM_UNREACHABLE';

/** Socket codes that say "nothing listens there" or "no such host": waiting does not change them. */
const WRONG_ADDRESS_CODES: Readonly<Record<string, string>> = {
  ECONNREFUSED: 'connection refused: nothing listens at that host and port',
  ENOTFOUND: 'host name not found',
  EAI_AGAIN: 'host name not found (DNS did not answer)',
};

/** How platformUnreachable words its message: a job's failure reaches whoever waits for it as this text only. */
const UNREACHABLE_MESSAGE = /^(TRAINSYNC_API_URL|the apiUrl of organisation \S+ in .+) was not reached \(/;

/**
 * A refused connection or an unknown host name, from a platform that has not answered
 * once in this process: the configured URL is wrong (a typo, a closed port), so the
 * error is permanent (no retry, no BullMQ attempt after it) and names the setting and
 * the fix in one sentence. Undefined for any other error.
 */
export function platformUnreachable(error: PlatformError, origin: string, urlSetting: string): PlatformError | undefined {
  if (error.code !== 'NETWORK') return undefined;
  const codes = socketCodes(error.cause);
  const reason = Object.entries(WRONG_ADDRESS_CODES).find(([code]) => codes.has(code))?.[1];
  if (reason === undefined) return undefined;
  return new PlatformError(
    `${urlSetting} was not reached (${origin}: ${reason}); check the scheme, host and port in ${urlSetting} (\`trainsync doctor\` checks it), then run again`,
    { code: PLATFORM_UNREACHABLE, retryable: false, cause: error.cause },
  );
}

/** True for the message of platformUnreachable's error, e.g. a failed job's reason. */
export function isUnreachableMessage(message: string): boolean {
  return UNREACHABLE_MESSAGE.test(message);
}

/** The codes of an error and of what it wraps (node's happy-eyeballs connect throws an AggregateError per address). */
function socketCodes(error: unknown, depth = 0): Set<string> {
  const codes = new Set<string>();
  if (typeof error !== 'object' || error === null || depth > 4) return codes;
  const e = error as { code?: unknown; errors?: unknown; cause?: unknown };
  if (typeof e.code === 'string') codes.add(e.code);
  for (const inner of [...(Array.isArray(e.errors) ? e.errors : []), e.cause]) for (const code of socketCodes(inner, depth + 1)) codes.add(code);
  return codes;
}

/** A 2xx whose body does not have the documented shape: a server fault, worth a retry. */
export function malformed(method: string, path: string, problem: string, status?: number): PlatformError {
  return new PlatformError(`${method} ${path} returned a malformed response: ${problem}`, {
    status,
    code: 'MALFORMED_RESPONSE',
    retryable: true,
  });
}

/** Statuses meaning "this platform does not offer that endpoint", as opposed to a failure. */
const NOT_OFFERED_STATUSES: ReadonlySet<number> = new Set([404, 405, 501]);

/** True when the platform answered that it has no such endpoint (404, 405 or 501). */
export function isNotOffered(error: unknown): error is PlatformError {
  return error instanceof PlatformError && error.status !== undefined && NOT_OFFERED_STATUSES.has(error.status);
}
