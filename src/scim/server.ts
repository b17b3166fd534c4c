import type { FastifyReply, FastifyRequest } from 'fastify';
import { MAX_URL_BYTES, startHttpServer, type HttpServer, type HttpServerOptions, type ServerDefinition, type ServerPlugin, type Unrouted } from '../http/server-factory.ts';
import { zodValidatorCompiler } from '../http/zod-schemas.ts';
import type { Logger } from '../runtime/log.ts';
import { bearerTokenMatcher } from '../http/bearer-token.ts';
import type { RequestTracing } from '../http/request-spans.ts';
import { ATTR } from '../lib/tracing/attributes.ts';
import { scimSchemaError } from './bodies.ts';
import { errorBody, ScimError } from './errors.ts';
import { noSuchEndpoint, ROUTED_METHODS, scimRoutes } from './routes.ts';
import type { ResourceContext, ScimAnswer } from './users.ts';

export const SCIM_PATH = '/scim/v2';
const CONTENT_TYPE = 'application/scim+json; charset=utf-8';
/** A path segment that names an organisation (resource names start with a capital: Users, Groups…). */
const SLUG_SEGMENT = /^[a-z][a-z0-9_-]*$/;
/**
 * The resource endpoints by their lower-case name (routes.ts matches them case-insensitively): a
 * lower-case first segment that names one is a resource of the bare organisation, not a slug.
 */
const RESOURCES = new Map([
  ['users', 'Users'],
  ['groups', 'Groups'],
  ['serviceproviderconfig', 'ServiceProviderConfig'],
  ['serviceconfiguration', 'ServiceProviderConfig'],
  ['resourcetypes', 'ResourceTypes'],
  ['schemas', 'Schemas'],
]);
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

function send(reply: FastifyReply, answer: Omit<ScimAnswer, 'ignored'>): FastifyReply {
  reply.code(answer.status);
  if (answer.headers) reply.headers(answer.headers);
  if (answer.body === undefined) return reply.send();
  // A Buffer: Fastify sends it as it is (a string of a JSON type is looked over for its charset first).
  return reply.type(CONTENT_TYPE).send(Buffer.from(JSON.stringify(answer.body)));
}

/**
/**
 * A SCIM request in a trace: named by its route (`/scim/v2/{org}/Users/{id}`, Fastify's
 * template, never the path as sent), with the organisation and the resource as attributes.
 */
export const scimRequestTracing: RequestTracing = {
  attributes(request) {
    const target = request.scim;
    const segment = target?.rest[0];
    return { [ATTR.org]: target?.org, [ATTR.scimResource]: segment === undefined ? undefined : RESOURCES.get(segment.toLowerCase()) };
  },
};

/**
 * The URL the router sees: the path as the gate reads it (the URL standard's), with the bare
 * organisation's slug after `/scim/v2` when the path names none, so every resource route is one
 * route under `/scim/v2/:org` and routeOrg alone decides which organisation a path is for.
 */
export function scimRoutedUrl(url: string, orgs: ReadonlyMap<string, unknown>, bareOrg: string | undefined): string {
  const { pathname, search } = new URL(url, 'http://scim.invalid');
  if (pathname !== SCIM_PATH && !pathname.startsWith(`${SCIM_PATH}/`)) return url;
  const target = routeOrg(pathname, orgs, bareOrg);
  const bare = 'org' in target && target.prefix === SCIM_PATH;
  return `${bare ? `${SCIM_PATH}/${target.org}${pathname.slice(SCIM_PATH.length)}` : pathname}${search}`;
}

/** The server a SCIM endpoint runs on: its port, its body limit, its router, its errors in the SCIM error schema. */
function scimServerOptions(options: ScimServerOptions, unrouted: Unrouted): HttpServerOptions {
  return {
    unrouted,
    name: 'SCIM',
    port: options.port,
    host: options.host,
    bodyLimit: { bytes: options.maxBodyBytes, setting: 'TRAINSYNC_SCIM_MAX_BODY_BYTES' },
    rawBodies: true,
    // Entra asks for `/users`; `/Users/` and `//Users` are `/Users`; an id is as long as the URL allows.
    router: { caseSensitive: false, ignoreTrailingSlash: true, ignoreDuplicateSlashes: true, maxParamLength: MAX_URL_BYTES },
    rewriteUrl: (url) => scimRoutedUrl(url, options.orgs, options.bareOrg),
    errorBody: ({ status, detail, error }) => ({ type: CONTENT_TYPE, body: JSON.stringify(errorBody(status, detail, error instanceof ScimError ? error.scimType : undefined)) }),
    faultDetail: 'not recorded; try again later',
    notFoundDetail: `not found: SCIM is served under ${SCIM_PATH}`,
    log: options.log,
    traced: scimRequestTracing,
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

  const contextOf = (request: FastifyRequest): ResourceContext => {
    const { org, prefix } = request.scim!;
    return { ...options.orgs.get(org)!.context, base: baseUrl(request, prefix) };
  };

  /** An answer of a route: sent, and logged with the organisation (the attributes ignored, if any). */
  const answered = (request: FastifyRequest, reply: FastifyReply, answer: ScimAnswer): FastifyReply => {
    const { org, url } = request.scim!;
    const { ignored, ...sent } = answer;
    if (ignored) log.info({ org, method: request.method, path: url.pathname, status: answer.status, ignored }, 'SCIM attributes no schema defines were ignored');
    log.debug({ org, method: request.method, path: url.pathname, status: answer.status }, 'SCIM request');
    return send(reply, sent);
  };

  const plugin: ServerPlugin = async (server) => {
    server.decorateRequest('scim', null);
    server.decorateRequest('scimOrg', null);
    const onAnswered = options.onAnswered;
    if (onAnswered) {
      // Every answer, the gate's refusals included (their onRequest sends the reply).
      server.addHook('onResponse', (request, reply, done) => {
        try {
          onAnswered({ org: request.scimOrg ?? NO_ORG, method: request.method, status: reply.statusCode, seconds: reply.elapsedTime / 1000 });
        } catch {
          // A metrics hook never fails a request.
        }
        done();
      });
    }
    // Route schemas are zod (bodies.ts); a body refused by its schema is answered as its reader's SCIM 400.
    server.setValidatorCompiler(zodValidatorCompiler);
    server.setSchemaErrorFormatter(scimSchemaError);
    // Every method Node reads is routed: on a known path, one it does not serve is a 405 naming those it does.
    for (const method of ROUTED_METHODS) if (!server.supportedMethods.includes(method)) server.addHttpMethod(method);
    // Before the body is read: a request of no organisation, without its token or past the limit is refused unread.
    server.addHook('onRequest', (request, reply, done) => {
      const target = gate(request, reply);
      if (target === undefined) return;
      request.scim = target;
      done();
    });
    // A refusal past the gate (a body's schema, a 404 or 405, a route's own): answered by the server's error mapping, logged here with the organisation.
    server.addHook('onError', async (request, _reply, error) => {
      const target = request.scim;
      if (target && error instanceof ScimError) log.info({ org: target.org, method: request.method, path: target.url.pathname, status: error.status, scimType: error.scimType, detail: error.message }, 'SCIM request refused');
    });
    await server.register(scimRoutes({ contextOf, maxBodyBytes: options.maxBodyBytes, send: answered }), { prefix: `${SCIM_PATH}/:org` });
  };
  // A path of a served organisation no route takes: 404, naming the resources.
  return { options: scimServerOptions(options, async (request) => noSuchEndpoint(request)), plugin };
}

/** Starts the SCIM endpoint where TRAINSYNC_SCIM_PORT and TRAINSYNC_SCIM_HOST say. */
export async function startScimServer(options: ScimServerOptions): Promise<ScimServer> {
  const server = await startHttpServer(scimServer(options));
  options.log.info({ port: server.port, host: options.host, path: SCIM_PATH, orgs: [...options.orgs.keys()], bareOrg: options.bareOrg }, 'SCIM endpoint listening');
  return server;
}
