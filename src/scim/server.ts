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

export interface ScimServerOptions {
  port: number;
  host: string;
  token: Buffer;
  maxBodyBytes: number;
  /** Everything but the base URL, which each request's Host (or X-Forwarded-*) gives. */
  context: Omit<ResourceContext, 'base'>;
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

function baseUrl(req: http.IncomingMessage): string {
  // Behind the TLS proxy (README): the identity provider's view of the URL.
  const proto = String(req.headers['x-forwarded-proto'] ?? 'http').split(',')[0]!.trim();
  const host = String(req.headers['x-forwarded-host'] ?? req.headers.host ?? 'localhost').split(',')[0]!.trim();
  return `${proto}://${host}${SCIM_PATH}`;
}

const list = (resources: unknown[]) => ({ schemas: [LIST_SCHEMA], totalResults: resources.length, startIndex: 1, itemsPerPage: resources.length, Resources: resources });

async function route(req: http.IncomingMessage, url: URL, ctx: ResourceContext, maxBodyBytes: number): Promise<ScimAnswer> {
  const parts = url.pathname.slice(SCIM_PATH.length).split('/').filter(Boolean).map(decodeURIComponent);
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

/** The SCIM 2.0 HTTP service under /scim/v2: bearer token first, then the routes; every refusal in the SCIM error schema. */
export async function startScimServer(options: ScimServerOptions): Promise<ScimServer> {
  const { log } = options;
  const authorised = bearerMatcher(options.token);

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
    if (!authorised(req.headers.authorization)) {
      req.resume();
      reply({ status: 401, body: errorBody(401, 'a valid bearer token is required (Authorization: Bearer <TRAINSYNC_SCIM_TOKEN>)'), headers: { 'www-authenticate': 'Bearer realm="trainsync-scim"' } });
      return;
    }
    const ctx: ResourceContext = { ...options.context, base: baseUrl(req) };
    route(req, url, ctx, options.maxBodyBytes).then(
      (answer) => {
        reply(answer);
        log.debug({ method: req.method, path: url.pathname, status: answer.status }, 'SCIM request');
      },
      (error: unknown) => {
        if (error instanceof ScimError) {
          const allow = (error as ScimError & { allow?: string }).allow;
          reply({ status: error.status, body: errorBody(error.status, error.message, error.scimType), headers: { ...(allow ? { allow } : {}), ...(error.status === 413 ? { connection: 'close' } : {}) } });
          if (error.status === 413) res.on('finish', () => req.socket.destroySoon());
          log.info({ method: req.method, path: url.pathname, status: error.status, scimType: error.scimType, detail: error.message }, 'SCIM request refused');
          return;
        }
        log.error({ err: error, method: req.method, path: url.pathname }, 'SCIM request failed: answered 500, the identity provider retries');
        if (!res.headersSent) reply({ status: 500, body: errorBody(500, 'not recorded; try again later') });
        else res.destroy();
      },
    );
  };
  const server = await listenInbound(handler, { port: options.port, host: options.host });
  log.info({ port: server.port, host: options.host, path: SCIM_PATH }, 'SCIM endpoint listening');
  return server;
}
