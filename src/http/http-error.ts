/**
 * The one error mapping of trainsync's HTTP servers: what an error thrown in a route (or
 * raised by Fastify before it) is answered with. A route refuses on purpose by throwing an
 * `HttpError`, whose detail is written for the client; Fastify's and its plugins' own 4xx
 * errors (a malformed URL, an unsupported body, CSRF, rate limits) say what was wrong with the
 * request; anything else is a fault of ours, answered 500 with a fixed detail and never its
 * message, which may name internals (a table, a host, a stack).
 */

/** A refusal a route means to give: the status, a detail for the client, headers to send with it. */
export class HttpError extends Error {
  constructor(
    readonly status: number,
    detail: string,
    readonly headers: Readonly<Record<string, string>> = {},
  ) {
    super(detail);
    this.name = 'HttpError';
  }
}

/** The body limit of a server, and the setting an operator raises it with (named in the 413's detail). */
export interface BodyLimit {
  bytes: number;
  setting?: string | undefined;
}

/** What an error is answered with, before the server's own body format is applied. */
export interface MappedError {
  status: number;
  detail: string;
  headers: Readonly<Record<string, string>>;
  /** A fault of ours (5xx): logged with the error; the detail is the server's fixed one. */
  fault: boolean;
}

export const BODY_TOO_LARGE = 'FST_ERR_CTP_BODY_TOO_LARGE';

/** The 413's detail: the same words on every server. */
export function bodyTooLargeDetail(limit: BodyLimit): string {
  return `the body is over ${limit.bytes} bytes${limit.setting ? ` (${limit.setting})` : ''}`;
}

const statusOf = (error: unknown): number | undefined => {
  const status = (error as { statusCode?: unknown } | null)?.statusCode;
  return typeof status === 'number' && Number.isInteger(status) ? status : undefined;
};

export function mapError(error: unknown, limit: BodyLimit, faultDetail: string): MappedError {
  if (error instanceof HttpError) return { status: error.status, detail: error.message, headers: error.headers, fault: error.status >= 500 };
  if ((error as { code?: unknown } | null)?.code === BODY_TOO_LARGE) {
    // The connection goes after the answer: what is left of the body is not read.
    return { status: 413, detail: bodyTooLargeDetail(limit), headers: { connection: 'close' }, fault: false };
  }
  const status = statusOf(error);
  if (status !== undefined && status >= 400 && status < 500) return { status, detail: error instanceof Error ? error.message : String(error), headers: {}, fault: false };
  return { status: 500, detail: faultDetail, headers: {}, fault: true };
}
