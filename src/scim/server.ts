import type { FastifyReply, FastifyRequest } from 'fastify';
import { startHttpServer, type HttpServer, type HttpServerOptions, type ServerDefinition, type ServerPlugin, type Unrouted } from '../http/server-factory.ts';
import type { Logger } from '../runtime/log.ts';
import { bearerTokenMatcher } from '../http/bearer-token.ts';
import { LIST_SCHEMA, resourceTypes, schemas, serviceProviderConfig } from './discovery.ts';
import { errorBody, notFound, ScimError } from './errors.ts';
import { checkJsonLimits } from './json-limits.ts';
import { createGroup, deleteGroup, getGroup, patchGroup, replaceGroup, searchGroups } from './groups.ts';
import { createUser, deleteUser, getUser, patchUser, replaceUser, searchUsers, type ResourceContext, type ScimAnswer } from './users.ts';

export const SCIM_PATH = '/scim/v2';
const CONTENT_TYPE = 'application/scim+json; charset=utf-8';
/** A path segment that names an organisation (resource names start with a capital: Users, Groups…). */
const SLUG_SEGMENT = /^[a-z][a-z0-9_-]*$/;
/**
 * The resource endpoints by their lower-case name: matched case-insensitively (Microsoft's
 * reference collection asks for `/users`), and `serviceConfiguration` as that collection names
 * the ServiceProviderConfig.
 */
const RESOURCES = new Map([
  ['users', 'Users'],
  ['groups', 'Groups'],
  ['serviceproviderconfig', 'ServiceProviderConfig'],
  ['serviceconfiguration', 'ServiceProviderConfig'],
  ['resourcetypes', 'ResourceTypes'],
  ['schemas', 'Schemas'],
]);
const canonicalResource = (segment: string | undefined): string | undefined => (segment === undefined ? undefined : (RESOURCES.get(segment.toLowerCase()) ?? segment));
/** Seconds an identity provider is asked to wait when the endpoint is at its limit of requests in flight. */
export const RETRY_AFTER_SECONDS = 1;

/** One organisation's SCIM: its token and what its requests see. */
export interface ScimOrgRoute {
  token: Buffer;
  /** Everything but the base URL, which each request's Host (or X-Forwarded-*) and path give. */
  context: Omit<ResourceContext, 'base'>;
}

export interface ScimServerOptions {
  port: number;
  host: string;
  /**
   * Per organisation (by slug): served under `/scim/v2/<slug>/…`, with that organisation's
   * token only. A token of one organisation is refused (401) on another's path, so it never
   * reaches another organisation's Users.
   */
  orgs: ReadonlyMap<string, ScimOrgRoute>;
  /** The organisation `/scim/v2/…` without a slug serves (`default`: identity providers set up before organisations keep working). */
  bareOrg?: string | undefined;
  maxBodyBytes: number;
  /** Requests worked on at once; past it, 429 with Retry-After (TRAINSYNC_SCIM_MAX_IN_FLIGHT). */
  maxInFlight: number;
  log: Logger;
  /**
   * Called once per request answered, refusals included: its organisation (`none` when the
   * path names none served: never a slug taken from the path), method, status and seconds.
   */
  onAnswered?: ((answer: ScimAnswered) => void) | undefined;
}

/** One SCIM request answered, as the metrics count it. */
export interface ScimAnswered {
  org: string;
  method: string;
  status: number;
  seconds: number;
}

/** The `org` of a request whose path names no organisation served (a label value, never a slug from the path). */
export const NO_ORG = 'none';

export type ScimServer = HttpServer;

/** The base the request came by: `…/scim/v2` or `…/scim/v2/<slug>` (locations keep the identity provider's path). */
function baseUrl(req: FastifyRequest, prefix: string): string {
  // Behind the TLS proxy (docs/scim.md): the identity provider's view of the URL.
  const proto = String(req.headers['x-forwarded-proto'] ?? 'http').split(',')[0]!.trim();
  const host = String(req.headers['x-forwarded-host'] ?? req.headers.host ?? 'localhost').split(',')[0]!.trim();
  return `${proto}://${host}${prefix}`;
}

/** A path segment decoded; a malformed escape stays as sent (it then names no resource: 404), never a throw in the listener. */
function decodeSegment(segment: string): string {
  try {
    return decodeURIComponent(segment);
  } catch {
    return segment;
  }
}

/** Which organisation a path is for, and the path below its prefix; undefined when it names none served. */
export function routeOrg(pathname: string, orgs: ReadonlyMap<string, unknown>, bareOrg: string | undefined): { org: string; prefix: string; rest: string[] } | { unknown: string; resource?: string } {
  const parts = pathname.slice(SCIM_PATH.length).split('/').filter(Boolean).map(decodeSegment);
  const first = parts[0];
  if (first !== undefined && SLUG_SEGMENT.test(first) && !orgs.has(first)) {
    // `/scim/v2/users`: a resource in lower case, not an organisation.
    const resource = RESOURCES.get(first);
    if (resource === undefined) return { unknown: first };
    if (bareOrg === undefined || !orgs.has(bareOrg)) return { unknown: '', resource };
    return { org: bareOrg, prefix: SCIM_PATH, rest: parts };
  }
  if (first !== undefined && SLUG_SEGMENT.test(first)) return { org: first, prefix: `${SCIM_PATH}/${first}`, rest: parts.slice(1) };
  if (bareOrg === undefined || !orgs.has(bareOrg)) return { unknown: '' };
  return { org: bareOrg, prefix: SCIM_PATH, rest: parts };
}

const list = (resources: unknown[]) => ({ schemas: [LIST_SCHEMA], totalResults: resources.length, startIndex: 1, itemsPerPage: resources.length, Resources: resources });

/** The request's JSON body (the server hands it over as received, within its limit): 400 invalidSyntax when it is missing or not JSON, 400 when json-limits.ts refuses it. */
function jsonBody(raw: unknown): unknown {
  if (!Buffer.isBuffer(raw) || raw.length === 0) throw new ScimError(400, 'a JSON body is required', 'invalidSyntax');
  let parsed: unknown;
  try {
    parsed = JSON.parse(raw.toString('utf8'));
  } catch (error) {
    throw new ScimError(400, `the body is not JSON: ${(error as Error).message}`, 'invalidSyntax');
  }
  // NUL, lone surrogates, nesting past MAX_JSON_DEPTH: refused before any reader or the store sees them.
  checkJsonLimits(parsed);
  return parsed;
}

async function route(request: FastifyRequest, url: URL, parts: readonly string[], ctx: ResourceContext, maxBodyBytes: number): Promise<ScimAnswer> {
  const [segment, id, extra] = parts;
  const resource = canonicalResource(segment);
  const method = request.method;
  const body = async (): Promise<unknown> => jsonBody(request.body);
  const only = (allowed: string): never => {
    throw new ScimError(405, `${method} is not supported here; allowed: ${allowed}`, undefined, { allow: allowed });
  };
  if (extra !== undefined) throw notFound(`no such endpoint: ${url.pathname}`);
  switch (resource) {
    case 'ServiceProviderConfig':
      if (method !== 'GET') only('GET');
      return { status: 200, body: serviceProviderConfig(ctx.base, maxBodyBytes) };
    case 'ResourceTypes':
    case 'Schemas': {
      if (method !== 'GET') only('GET');
      const all = resource === 'Schemas' ? schemas(ctx.base) : resourceTypes(ctx.base);
      if (id === undefined) return { status: 200, body: list(all) };
      const one = all.find((r) => r.id === id);
      if (!one) throw notFound(`no ${resource === 'Schemas' ? 'schema' : 'resource type'} ${id}`);
      return { status: 200, body: one };
    }
    case 'Users':
      if (id === undefined) {
        if (method === 'GET') return searchUsers(ctx, url.searchParams);
        if (method === 'POST') return createUser(ctx, await body());
        return only('GET, POST');
      }
      if (method === 'GET') return getUser(ctx, id, url.searchParams);
      if (method === 'PUT') return replaceUser(ctx, id, await body());
      if (method === 'PATCH') return patchUser(ctx, id, await body());
      if (method === 'DELETE') return deleteUser(ctx, id);
      return only('GET, PUT, PATCH, DELETE');
    case 'Groups':
      if (id === undefined) {
        if (method === 'GET') return searchGroups(ctx, url.searchParams);
        if (method === 'POST') return createGroup(ctx, await body());
        return only('GET, POST');
      }
      if (method === 'GET') return getGroup(ctx, id, url.searchParams);
      if (method === 'PUT') return replaceGroup(ctx, id, await body());
      if (method === 'PATCH') return patchGroup(ctx, id, await body());
      if (method === 'DELETE') return deleteGroup(ctx, id);
      return only('GET, PUT, PATCH, DELETE');
    default:
      throw notFound(`no such endpoint: ${url.pathname} (Users, Groups, ServiceProviderConfig, ResourceTypes, Schemas)`);
  }
}

/** What the gate found for a request: its URL, and the organisation it is for. */
interface ScimTarget {
  url: URL;
  org: string;
  prefix: string;
  rest: string[];
}

declare module 'fastify' {
  interface FastifyRequest {
    /** Set by the SCIM server's gate (src/scim/server.ts) before the body is read. */
    scim: ScimTarget | null;
    /** The served organisation the path names, set by the gate even when it refuses the request (its metrics). */
    scimOrg: string | null;
  }
}

/** Every method Fastify routes: the SCIM router answers 405 itself, with what is allowed. */
const METHODS = ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS', 'TRACE'];

function send(reply: FastifyReply, answer: Omit<ScimAnswer, 'ignored'>): FastifyReply {
  reply.code(answer.status);
  if (answer.headers) reply.headers(answer.headers);
  if (answer.body === undefined) return reply.send();
  // A Buffer: Fastify sends it as it is (a string of a JSON type is looked over for its charset first).
  return reply.type(CONTENT_TYPE).send(Buffer.from(JSON.stringify(answer.body)));
}

/** The server a SCIM endpoint runs on: its port, its body limit, its errors in the SCIM error schema. */
function scimServerOptions(options: ScimServerOptions, unrouted: Unrouted): HttpServerOptions {
  return {
    unrouted,
    name: 'SCIM',
    port: options.port,
    host: options.host,
    bodyLimit: { bytes: options.maxBodyBytes, setting: 'TRAINSYNC_SCIM_MAX_BODY_BYTES' },
    rawBodies: true,
    errorBody: ({ status, detail, error }) => ({ type: CONTENT_TYPE, body: JSON.stringify(errorBody(status, detail, error instanceof ScimError ? error.scimType : undefined)) }),
    faultDetail: 'not recorded; try again later',
    notFoundDetail: `not found: SCIM is served under ${SCIM_PATH}`,
    log: options.log,
  };
}

/**
 * The SCIM 2.0 service under /scim/v2/<slug> (and /scim/v2 for the bare organisation): a gate
 * before the body is read (the organisation from the path, then its bearer token, then the
 * limit of requests in flight), then the routes; every refusal in the SCIM error schema.
 */
export function scimServer(options: ScimServerOptions): ServerDefinition {
  const { log } = options;
  const authorised = new Map([...options.orgs].map(([slug, org]) => [slug, bearerTokenMatcher(org.token)]));
  let inFlight = 0;

  const gate = (request: FastifyRequest, reply: FastifyReply): ScimTarget | undefined => {
    // As sent: a malformed %-escape stays in the path (then it names no resource: 404).
    const url = new URL(request.originalUrl, 'http://scim.invalid');
    if (url.pathname !== SCIM_PATH && !url.pathname.startsWith(`${SCIM_PATH}/`)) {
      send(reply, { status: 404, body: errorBody(404, `not found: SCIM is served under ${SCIM_PATH}`) });
      return undefined;
    }
    const target = routeOrg(url.pathname, options.orgs, options.bareOrg);
    if ('unknown' in target) {
      // Whose token is it? Without a valid one of some organisation: 401 before any 404, so
      // a caller without a token learns nothing of which organisations are served.
      const own = [...authorised].find(([, matches]) => matches(request.headers.authorization))?.[0];
      if (own === undefined) {
        send(reply, { status: 401, body: errorBody(401, 'a valid bearer token is required (Authorization: Bearer <the SCIM token of the organisation in the path>)'), headers: { 'www-authenticate': 'Bearer realm="trainsync-scim"' } });
        return undefined;
      }
      // The token's own organisation only: a 404 names no other.
      const served = `${SCIM_PATH}/${own}`;
      const bare = own === options.bareOrg;
      const detail = target.resource
        ? `${SCIM_PATH} without an organisation is not served: this token's ${target.resource} endpoint is ${served}/${target.resource}`
        : `${target.unknown ? `no organisation "${target.unknown}" serves SCIM here` : `${SCIM_PATH} without an organisation is not served`}; ` +
          `this token's organisation is served under ${served} (e.g. ${served}/Users${bare ? ` or ${SCIM_PATH}/Users` : ''})`;
      send(reply, { status: 404, body: errorBody(404, `not found: ${detail}`) });
      return undefined;
    }
    request.scimOrg = target.org;
    // The path's organisation's token only: another organisation's token is refused here.
    if (!authorised.get(target.org)!(request.headers.authorization)) {
      send(reply, { status: 401, body: errorBody(401, `a valid bearer token of organisation ${target.org} is required (Authorization: Bearer <its SCIM token>)`), headers: { 'www-authenticate': 'Bearer realm="trainsync-scim"' } });
      log.info({ org: target.org, method: request.method, path: url.pathname, status: 401 }, 'SCIM request refused: no valid token');
      return undefined;
    }
    // Past the limit, the identity provider is told to come back rather than queued without bound.
    if (inFlight >= options.maxInFlight) {
      send(reply, {
        status: 429,
        body: errorBody(429, `${inFlight} requests are being worked on (TRAINSYNC_SCIM_MAX_IN_FLIGHT=${options.maxInFlight}); nothing was recorded: send it again after ${RETRY_AFTER_SECONDS} s`),
        headers: { 'retry-after': String(RETRY_AFTER_SECONDS) },
      });
      log.debug({ org: target.org, method: request.method, path: url.pathname, status: 429, inFlight }, 'SCIM request refused: too many in flight');
      return undefined;
    }
    inFlight += 1;
    reply.raw.once('close', () => (inFlight -= 1));
    return { url, ...target };
  };

  const handler = async (request: FastifyRequest, reply: FastifyReply): Promise<FastifyReply> => {
    const { url, org, prefix, rest } = request.scim!;
    const ctx: ResourceContext = { ...options.orgs.get(org)!.context, base: baseUrl(request, prefix) };
    let answer: ScimAnswer;
    try {
      answer = await route(request, url, rest, ctx, options.maxBodyBytes);
    } catch (error) {
      // Answered by the server's error mapping (a ScimError as itself, anything else 500); logged here with the organisation.
      if (error instanceof ScimError) log.info({ org, method: request.method, path: url.pathname, status: error.status, scimType: error.scimType, detail: error.message }, 'SCIM request refused');
      throw error;
    }
    const { ignored, ...sent } = answer;
    if (ignored) log.info({ org, method: request.method, path: url.pathname, status: answer.status, ignored }, 'SCIM attributes no schema defines were ignored');
    log.debug({ org, method: request.method, path: url.pathname, status: answer.status }, 'SCIM request');
    return send(reply, sent);
  };

  const plugin: ServerPlugin = async (server) => {
    server.decorateRequest('scim', null);
    server.decorateRequest('scimOrg', null);
    const answered = options.onAnswered;
    if (answered) {
      // Every answer, the gate's refusals included (their onRequest sends the reply).
      server.addHook('onResponse', (request, reply, done) => {
        try {
          answered({ org: request.scimOrg ?? NO_ORG, method: request.method, status: reply.statusCode, seconds: reply.elapsedTime / 1000 });
        } catch {
          // A metrics hook never fails a request.
        }
        done();
      });
    }
    // Before the body is read: a request of no organisation, without its token or past the limit is refused unread.
    server.addHook('onRequest', (request, reply, done) => {
      const target = gate(request, reply);
      if (target === undefined) return;
      request.scim = target;
      done();
    });
    server.route({ method: METHODS, url: '/*', handler });
  };
  // Methods Fastify does not route (PROPFIND…) reach the same handler, which answers 405 with what is allowed.
  return { options: scimServerOptions(options, handler), plugin };
}

/** Starts the SCIM endpoint where TRAINSYNC_SCIM_PORT and TRAINSYNC_SCIM_HOST say. */
export async function startScimServer(options: ScimServerOptions): Promise<ScimServer> {
  const server = await startHttpServer(scimServer(options));
  options.log.info({ port: server.port, host: options.host, path: SCIM_PATH, orgs: [...options.orgs.keys()], bareOrg: options.bareOrg }, 'SCIM endpoint listening');
  return server;
}
