/** What a route answers; the server turns it into an HTTP response. */
export interface Reply {
  status: number;
  body?: string | Buffer;
  contentType?: string;
  headers?: Record<string, string>;
}

const JSON_TYPE = 'application/json; charset=utf-8';

export function json(value: unknown, status = 200): Reply {
  return { status, body: JSON.stringify(value), contentType: JSON_TYPE };
}

/** A JSON body that is already serialised. */
export function rawJson(body: string, status = 200): Reply {
  return { status, body, contentType: JSON_TYPE };
}

export function noContent(): Reply {
  return { status: 204 };
}

export function text(body: string, status = 200): Reply {
  return { status, body, contentType: 'text/plain; charset=utf-8' };
}

/** The platform's documented error: HTTP 400 with `{code, message, details}`. */
export function apiError(code: string, message: string, details: unknown = null): Reply {
  return json({ code, message, details }, 400);
}

export interface FieldProblem {
  field: string;
  message: string;
}

export function invalidModel(problems: FieldProblem[]): Reply {
  return apiError('INVALID_MODEL', 'One or more parameters are invalid.', problems);
}

/** The request context a route sees. */
export interface RouteRequest {
  method: string;
  path: string;
  /** Path parameters from the route template, in order. */
  params: string[];
  query: URLSearchParams;
  /** The raw query string without '?'. */
  rawQuery: string;
  /** Scheme + host the client addressed, e.g. http://127.0.0.1:4000. */
  origin: string;
  /** The parsed JSON body; undefined when empty. */
  body: unknown;
}

const GUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

export function isGuid(value: string): boolean {
  return GUID.test(value);
}

/** `page` as the platform reads it: 1 when absent, else a positive integer. */
export function readPage(query: URLSearchParams): number | Reply {
  const raw = query.get('page');
  if (raw === null || raw === '') return 1;
  if (!/^\d+$/.test(raw) || Number(raw) < 1 || Number(raw) > 1_000_000_000) {
    return invalidModel([{ field: 'page', message: 'must be a whole number of at least 1' }]);
  }
  return Number(raw);
}

/** A list envelope around already-serialised entities. */
export function envelopeJson(entitiesJson: string[], page: number, totalEntities: number, links: unknown[] = []): string {
  return `{"entities":[${entitiesJson.join(',')}],"page":${page},"entitiesReturned":${entitiesJson.length},"totalEntities":${totalEntities},"links":${JSON.stringify(links)}}`;
}
