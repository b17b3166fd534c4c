import http from 'node:http';
import { listenInbound } from '../lib/inbound-server.ts';
import type { Logger } from '../runtime/log.ts';
import { bearerMatcher } from './auth.ts';
import { LIST_SCHEMA, resourceTypes, schemas, serviceProviderConfig } from './discovery.ts';
import { errorBody, notFound, ScimError } from './errors.ts';
import { createGroup, deleteGroup, getGroup, patchGroup, replaceGroup, searchGroups } from './groups.ts';
import { createUser, deleteUser, getUser, patchUser, replaceUser, searchUsers, type ResourceContext, type ScimAnswer } from './users.ts';

export const SCIM_PATH = '/scim/v2';
const CONTENT_TYPE = 'application/scim+json; charset=utf-8';
/** A path segment that names an organisation (resource names start with a capital: Users, Groups…). */
const SLUG_SEGMENT = /^[a-z][a-z0-9_-]*$/;

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
  log: Logger;
}

export interface ScimServer {
  port: number;
  close(): Promise<void>;
}

type Body = { kind: 'json'; value: unknown } | { kind: 'none' };

/** Reads a JSON body up to `limit` bytes: 413 beyond it, 400 invalidSyntax when it is not JSON. */
async function readJson(req: http.IncomingMessage, limit: number): Promise<Body> {
  if (Number(req.headers['content-length'] ?? 0) > limit) throw new ScimError(413, `the body is over ${limit} bytes (TRAINSYNC_SCIM_MAX_BODY_BYTES)`);
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > limit) throw new ScimError(413, `the body is over ${limit} bytes (TRAINSYNC_SCIM_MAX_BODY_BYTES)`);
    chunks.push(chunk);
  }
  if (size === 0) return { kind: 'none' };
  try {
    return { kind: 'json', value: JSON.parse(Buffer.concat(chunks).toString('utf8')) };
  } catch (error) {
    throw new ScimError(400, `the body is not JSON: ${(error as Error).message}`, 'invalidSyntax');
  }
}

/** The base the request came by: `…/scim/v2` or `…/scim/v2/<slug>` (locations keep the identity provider's path). */
function baseUrl(req: http.IncomingMessage, prefix: string): string {
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
export function routeOrg(pathname: string, orgs: ReadonlyMap<string, unknown>, bareOrg: string | undefined): { org: string; prefix: string; rest: string[] } | { unknown: string } {
  const parts = pathname.slice(SCIM_PATH.length).split('/').filter(Boolean).map(decodeSegment);
  const first = parts[0];
  if (first !== undefined && SLUG_SEGMENT.test(first)) {
    if (!orgs.has(first)) return { unknown: first };
    return { org: first, prefix: `${SCIM_PATH}/${first}`, rest: parts.slice(1) };
  }
  if (bareOrg === undefined || !orgs.has(bareOrg)) return { unknown: '' };
  return { org: bareOrg, prefix: SCIM_PATH, rest: parts };
}

const list = (resources: unknown[]) => ({ schemas: [LIST_SCHEMA], totalResults: resources.length, startIndex: 1, itemsPerPage: resources.length, Resources: resources });

async function route(req: http.IncomingMessage, url: URL, parts: readonly string[], ctx: ResourceContext, maxBodyBytes: number): Promise<ScimAnswer> {
  const [resource, id, extra] = parts;
  const method = req.method ?? 'GET';
  const body = async (): Promise<unknown> => {
    const read = await readJson(req, maxBodyBytes);
    if (read.kind === 'none') throw new ScimError(400, 'a JSON body is required', 'invalidSyntax');
    return read.value;
  };
  const only = (allowed: string): never => {
    throw Object.assign(new ScimError(405, `${method} is not supported here; allowed: ${allowed}`), { allow: allowed });
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
      if (method === 'GET') return getUser(ctx, id);
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

/**
 * The SCIM 2.0 HTTP service under /scim/v2/<slug> (and /scim/v2 for the bare organisation): the
 * organisation from the path, then its bearer token, then the routes; every refusal in the SCIM error schema.
 */
export async function startScimServer(options: ScimServerOptions): Promise<ScimServer> {
  const { log } = options;
  const authorised = new Map([...options.orgs].map(([slug, org]) => [slug, bearerMatcher(org.token)]));

  const handler: http.RequestListener = (req, res) => {
    const reply = (answer: ScimAnswer): void => {
      if (answer.body === undefined) {
        res.writeHead(answer.status, { ...answer.headers });
        res.end();
        return;
      }
      const text = JSON.stringify(answer.body);
      res.writeHead(answer.status, { 'content-type': CONTENT_TYPE, 'content-length': Buffer.byteLength(text), ...answer.headers });
      res.end(text);
    };
    const url = new URL(req.url ?? '/', 'http://scim.invalid');
    if (url.pathname !== SCIM_PATH && !url.pathname.startsWith(`${SCIM_PATH}/`)) {
      req.resume();
      reply({ status: 404, body: errorBody(404, `not found: SCIM is served under ${SCIM_PATH}`) });
      return;
    }
    const target = routeOrg(url.pathname, options.orgs, options.bareOrg);
    if ('unknown' in target) {
      req.resume();
      const served = [...options.orgs.keys()].map((slug) => `${SCIM_PATH}/${slug}`).join(', ');
      reply({ status: 404, body: errorBody(404, `not found: ${target.unknown ? `no organisation "${target.unknown}" serves SCIM here` : `${SCIM_PATH} without an organisation is not served`}; SCIM is served under ${served}`) });
      return;
    }
    // The path's organisation's token only: another organisation's token is refused here.
    if (!authorised.get(target.org)!(req.headers.authorization)) {
      req.resume();
      reply({ status: 401, body: errorBody(401, `a valid bearer token of organisation ${target.org} is required (Authorization: Bearer <its SCIM token>)`), headers: { 'www-authenticate': 'Bearer realm="trainsync-scim"' } });
      log.info({ org: target.org, method: req.method, path: url.pathname, status: 401 }, 'SCIM request refused: no valid token');
      return;
    }
    const ctx: ResourceContext = { ...options.orgs.get(target.org)!.context, base: baseUrl(req, target.prefix) };
    route(req, url, target.rest, ctx, options.maxBodyBytes).then(
      (answer) => {
        reply(answer);
        log.debug({ org: target.org, method: req.method, path: url.pathname, status: answer.status }, 'SCIM request');
      },
      (error: unknown) => {
        if (error instanceof ScimError) {
          const allow = (error as ScimError & { allow?: string }).allow;
          reply({ status: error.status, body: errorBody(error.status, error.message, error.scimType), headers: { ...(allow ? { allow } : {}), ...(error.status === 413 ? { connection: 'close' } : {}) } });
          if (error.status === 413) res.on('finish', () => req.socket.destroySoon());
          log.info({ org: target.org, method: req.method, path: url.pathname, status: error.status, scimType: error.scimType, detail: error.message }, 'SCIM request refused');
          return;
        }
        log.error({ err: error, org: target.org, method: req.method, path: url.pathname }, 'SCIM request failed: answered 500, the identity provider retries');
        if (!res.headersSent) reply({ status: 500, body: errorBody(500, 'not recorded; try again later') });
        else res.destroy();
      },
    );
  };
  const server = await listenInbound(handler, { port: options.port, host: options.host });
  log.info({ port: server.port, host: options.host, path: SCIM_PATH, orgs: [...options.orgs.keys()], bareOrg: options.bareOrg }, 'SCIM endpoint listening');
  return server;
}
